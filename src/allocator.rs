//! The binary's memory allocator, mimalloc, and the options it runs with.
//! Declared by `main.rs` alone: a program that uses the library keeps its
//! own allocator.

// Inference and costing allocate many small objects per node; mimalloc
// makes that several times cheaper than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe extern "C" {
    /// mimalloc's run-time options (`mimalloc.h`), linked in with it.
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// Sets mimalloc's options where its own environment variable does not.
/// On Linux it runs as a constructor, before Rust's runtime allocates
/// anything (the first allocation reserves the first arena, before `main`).
pub(crate) extern "C" fn set_allocator_options() {
    // (`mi_option_e` position in `mimalloc.h`, the same in its v2 and v3;
    // its variable; the value.)
    let options: [(std::ffi::c_int, &std::ffi::CStr, std::ffi::c_long); 2] = [
        // Memory freed between stages (a large model's decoded nodes, once
        // inferred) goes back to the system after 10 ms, as mimalloc v2
        // did, instead of v3's full second: the process no longer grows by
        // what it freed. 111k-node graph: peak RSS 241 MB -> 183 MB at the
        // same time (0 ms saves 6 MB more but costs 0.3 s of page faults).
        (15, c"MIMALLOC_PURGE_DELAY", 10),
        // Address space is reserved 256 MiB (the value is in KiB) at a time
        // rather than 1 GiB: the first arena's bookkeeping then shares its
        // huge page with the first allocations, and a small model's run
        // touches one huge page fewer (start-up 2.45 -> 2.24 ms of CPU). A
        // 111k-node graph still fits in one arena.
        (23, c"MIMALLOC_ARENA_RESERVE", 256 * 1024),
    ];
    for (option, variable, value) in options {
        // SAFETY: reads the environment and sets plain integers, before
        // any thread is started (before `main` on Linux).
        unsafe {
            if libc::getenv(variable.as_ptr()).is_null() {
                mi_option_set(option, value);
            }
        }
    }
    #[cfg(target_os = "linux")]
    no_huge_pages();
}

/// Turns transparent huge pages off for the process, unless
/// `MIMALLOC_ALLOW_THP` says otherwise. On a virtual machine whose host
/// takes back free 2 MiB blocks (a balloon's free-page reporting, as on the
/// project's machines), each huge page the heap faults in is backed afresh
/// by the host: 111k-node graph, a run a few seconds after the last spent
/// 210-340 ms of system time on them against 90-110 ms with 4 KiB pages,
/// and took 1.5-1.9x as long. Back to back, before any block went back,
/// huge pages were 0-40 ms faster.
/// Done here rather than through mimalloc's own option, whose number
/// differs between its versions and which it reads once at its start.
#[cfg(target_os = "linux")]
fn no_huge_pages() {
    // SAFETY: reads the environment, and prctl takes plain integers.
    unsafe {
        if libc::getenv(c"MIMALLOC_ALLOW_THP".as_ptr()).is_null() {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
    }
}

#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static SET_ALLOCATOR_OPTIONS: extern "C" fn() = set_allocator_options;
