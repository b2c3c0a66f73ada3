//! The second thread a large model's work is shared with: whether there is
//! one to run ([`two_cores`], [`second_thread`]), and how a piece of work
//! is split in two ([`both`], [`spawn_with`]). The reader, inference,
//! costing and the reports all use these; nothing here uses them.

/// Whether a second thread can run beside this one: large models share a
/// few independent pieces of work (folded layers' costs, JSON rows) with
/// one when it can, for the same result.
///
/// Asked only where a model is large enough to share work: the first
/// answer costs a dozen system calls (the affinity, then the cgroup's CPU
/// quota from /proc and /sys), a tenth of a small model's run.
pub(crate) fn two_cores() -> bool {
    #[cfg(test)]
    ASKED.with(|n| n.set(n.get() + 1));
    static TWO: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TWO.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
}

/// Graphs of fewer nodes are walked on one thread: their outline, decoding,
/// conversion for the cost stage and look for unbound symbols cost less
/// than a second thread would.
pub(crate) const SECOND_THREAD_FROM: usize = 4096;

/// Whether a graph of `nodes` nodes shares that work with a second core.
pub(crate) fn second_thread(nodes: usize) -> bool {
    nodes >= SECOND_THREAD_FROM && two_cores()
}

/// Runs `here` on this thread and `there` on a second one, and returns
/// both results (a panic on the second thread goes on here): how a large
/// model splits one piece of work in two when [`two_cores`] says so.
pub(crate) fn both<A, B: Send>(
    here: impl FnOnce() -> A,
    there: impl FnOnce() -> B + Send,
) -> (A, B) {
    // When the system refuses a thread, `there` runs here after `here`:
    // the same answer, later.
    std::thread::scope(|threads| {
        let side = spawn_with(helper(), threads, there, |there| there());
        let a = here();
        let b = match side {
            Ok(side) => joined(side),
            Err(there) => there(),
        };
        (a, b)
    })
}

/// Starts `work(with)` on a new thread of `threads` made by `builder`, or
/// gives `with` back when the system refuses the thread (the caller then
/// does the work itself). The thread answers `None` only when `with` went
/// back.
pub(crate) fn spawn_with<'s, T: Send + 's, R: Send + 's>(
    builder: std::thread::Builder,
    threads: &'s std::thread::Scope<'s, '_>,
    with: T,
    work: impl FnOnce(T) -> R + Send + 's,
) -> Result<std::thread::ScopedJoinHandle<'s, Option<R>>, T> {
    let (hand, handed) = std::sync::mpsc::sync_channel::<T>(1);
    // The thread waits for what it works on, which stays here until the
    // thread exists.
    let started = builder.spawn_scoped(threads, move || handed.recv().ok().map(work));
    match started {
        Ok(thread) => match hand.send(with) {
            Ok(()) => {
                #[cfg(test)]
                STARTED.with(|n| n.set(n.get() + 1));
                Ok(thread)
            }
            Err(std::sync::mpsc::SendError(with)) => Err(with),
        },
        Err(_) => Err(with),
    }
}

/// What a thread [`spawn_with`] started answered (its panic goes on here).
pub(crate) fn joined<R>(thread: std::thread::ScopedJoinHandle<'_, Option<R>>) -> R {
    thread
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
        .expect("a thread that started was handed its work")
}

/// A builder for the threads that share a large model's work. Tests can
/// have the system refuse them (`refuse_threads`, in test builds only).
pub(crate) fn helper() -> std::thread::Builder {
    #[cfg(test)]
    if REFUSE_THREADS.with(std::cell::Cell::get) {
        // Linux refuses a thread that asks for an exbibyte of stack.
        return std::thread::Builder::new().stack_size(1 << 60);
    }
    std::thread::Builder::new()
}

#[cfg(test)]
thread_local! {
    static REFUSE_THREADS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Helper threads this thread started.
    pub(crate) static STARTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Times this thread asked [`two_cores`].
    pub(crate) static ASKED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Makes the system refuse every helper thread this thread asks for, or no
/// longer.
#[cfg(test)]
pub(crate) fn refuse_threads(refuse: bool) {
    REFUSE_THREADS.with(|r| r.set(refuse));
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// A second thread the system refuses (here, one that asks for an
    /// exbibyte of stack) leaves `there` to this thread: the same answers.
    #[test]
    fn both_answers_on_one_thread_when_a_second_is_refused() {
        let me = std::thread::current().id();
        super::refuse_threads(true);
        let (a, (b, at)) = super::both(|| 6 * 7, || (6 * 7 + 1, std::thread::current().id()));
        super::refuse_threads(false);
        assert_eq!((a, b, at), (42, 43, me));
        let (_, at) = super::both(|| (), || std::thread::current().id());
        assert_ne!(at, me);
    }
}
