//! The binary's memory allocator, mimalloc, and the options it runs with.
//! Declared by `main.rs` alone: a program that uses the library keeps its
//! own allocator.

// Inference and costing allocate many small objects per node; mimalloc
// makes that several times cheaper than the system allocator.
#[global_allocator]
static GLOBAL: Mi = Mi;

/// mimalloc, asked for its plain allocation when an alignment of 8 bytes
/// (which every block of its has) is enough: the aligned entry points
/// `mimalloc::MiMalloc` always calls take a longer path.
struct Mi;

// SAFETY: each call is mimalloc's own, as `mimalloc::MiMalloc` makes it,
// but for the plain ones, whose blocks are 8-byte aligned.
unsafe impl std::alloc::GlobalAlloc for Mi {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.align() <= PLAIN_ALIGN {
            unsafe { mi_malloc(layout.size()).cast() }
        } else {
            unsafe { mimalloc::MiMalloc.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.align() <= PLAIN_ALIGN {
            unsafe { mi_zalloc(layout.size()).cast() }
        } else {
            unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= PLAIN_ALIGN {
            unsafe { mi_realloc(ptr.cast(), new_size).cast() }
        } else {
            unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
        }
    }
}

/// The alignment every mimalloc block has (a machine word).
const PLAIN_ALIGN: usize = 8;

unsafe extern "C" {
    fn mi_malloc(size: usize) -> *mut std::ffi::c_void;
    fn mi_zalloc(size: usize) -> *mut std::ffi::c_void;
    fn mi_realloc(p: *mut std::ffi::c_void, size: usize) -> *mut std::ffi::c_void;
    /// mimalloc's run-time options (`mimalloc.h`), linked in with it.
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// Sets mimalloc's options where its own environment variable does not.
/// On Linux it runs as a constructor, before Rust's runtime allocates
/// anything (the first allocation reserves the first arena, before `main`).
pub(crate) extern "C" fn set_allocator_options() {
    // mimalloc v3 keeps memory a thread freed for a second before it
    // gives it back (its `MIMALLOC_PURGE_DELAY`, left as it is): a run
    // reuses what one stage freed (a large model's decoded records, its
    // initializers) in the next, without a fault a page. 111k-node graph:
    // 42,900 -> 33,300 page faults, 10-20 ms less, peak RSS 112 -> 137 MB.
    // (With huge pages, round eight, 10 ms had been the better setting.)
    //
    // Each option: its `mi_option_e` position in `mimalloc.h` (the same in
    // v2 and v3), its variable, the value.
    let options: [(std::ffi::c_int, &std::ffi::CStr, std::ffi::c_long); 1] = [
        // Address space is reserved 64 MiB (the value is in KiB; mimalloc's
        // least) at a time, the next arena twice that, rather than 1 GiB
        // at once. A small model's run fits in the first (start-up as with
        // 256 MiB, 1.9 ms of CPU). The 111k-node graph takes three arenas
        // and touches fewer fresh pages than in one: `estimate` 29.0k page
        // faults with 1 GiB or 256 MiB, 26.4k with 128 MiB, 24.8k with 64
        // (peak RSS 119 -> 103 MB, 8 ms less on one core); `--format md`
        // 30.8k -> 26.5k, `shapes` 29.8k -> 28.8k.
        (23, c"MIMALLOC_ARENA_RESERVE", 64 * 1024),
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

#[cfg(test)]
mod tests {
    use std::alloc::{GlobalAlloc, Layout};

    /// Every block meets its layout's alignment, whichever entry point
    /// served it (plain up to 8 bytes, aligned above), holds its bytes,
    /// and keeps them when it grows or shrinks; zeroed blocks are zero.
    #[test]
    fn blocks_meet_their_alignment_and_keep_their_bytes() {
        let a = super::Mi;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 7, 8, 9, 16, 24, 40, 100, 1000, 5000, 70_000, 1 << 21] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: non-zero sizes; each block is written within its
                // size and freed once, with the layout it was made with.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    for i in 0..size {
                        *p.add(i) = (i % 251) as u8;
                    }
                    let grown = a.realloc(p, layout, size * 3);
                    assert_eq!(grown as usize % align, 0, "grown {size} align {align}");
                    for i in 0..size {
                        assert_eq!(*grown.add(i), (i % 251) as u8);
                    }
                    let bigger = Layout::from_size_align(size * 3, align).unwrap();
                    let shrunk = a.realloc(grown, bigger, size.div_ceil(2));
                    assert_eq!(shrunk as usize % align, 0);
                    for i in 0..size.div_ceil(2) {
                        assert_eq!(*shrunk.add(i), (i % 251) as u8);
                    }
                    let half = Layout::from_size_align(size.div_ceil(2), align).unwrap();
                    a.dealloc(shrunk, half);
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
