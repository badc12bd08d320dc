//! Lowering the scheduling priority of the calling thread. It is an OS call, and this crate
//! holds every `unsafe` call of glint.

/// Lowers the calling thread's priority by `nice` steps (Linux: `setpriority` on the thread
/// id; no privilege is needed to lower it). The gRPC server's threads call this so that the
/// simulation loop, which runs each lidar tick across every core, keeps the cores when clients
/// poll hard: a reader may wait, the loop should not. Returns whether it took effect;
/// elsewhere than Linux it does nothing.
#[cfg(target_os = "linux")]
pub fn lower_thread_priority(nice: i32) -> bool {
    // SAFETY: gettid and setpriority take plain integers and only affect this thread's
    // scheduling.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        let current = libc::getpriority(libc::PRIO_PROCESS, tid);
        libc::setpriority(libc::PRIO_PROCESS, tid, (current + nice).min(19)) == 0
    }
}

/// Elsewhere than Linux there is nothing to lower.
#[cfg(not(target_os = "linux"))]
pub fn lower_thread_priority(_nice: i32) -> bool {
    false
}
