//! The process's allocator settings for long recordings. This crate holds every `unsafe`
//! call of glint, so this one lives here too.

/// Keeps a long recording's resident memory flat: call it first in `main`, before any other
/// thread exists.
///
/// The recorder allocates and frees many blocks of a few hundred KiB (column pages, compressor
/// contexts) on every worker thread. glibc raises its mmap threshold to the size of each large
/// block freed, after which such blocks come from per-thread arenas and fragment them, and the
/// arena a block lands in depends on which worker ran: resident memory crept up over an
/// episode, and varied from run to run. A fixed threshold (which turns the raising off) and
/// one arena keep it flat; blocks over 4 MiB are still mapped on their own. The server
/// allocates and frees a scan of about 1 MiB per request: with glibc's 128 KiB trim
/// threshold each free handed the heap's top back to the kernel and the next request faulted
/// its pages in again (a tenth of a round trip, measured), so up to 32 MiB of free heap is
/// kept. Elsewhere than glibc this does nothing.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn settle_malloc() {
    // SAFETY: mallopt only sets malloc tuning parameters; the caller runs this before any
    // other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 32 << 20);
    }
}

/// Elsewhere than glibc there is nothing to settle.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn settle_malloc() {}
