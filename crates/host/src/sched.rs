//! Scheduler system calls on live tasks: affinity and policy.

use std::io;

use jitterlab_cpuset::{CpuSet, MAX_CPUS};

use crate::tasks::Policy;

/// Bytes of the smallest mask buffer the kernel accepts (glibc's cpu_set_t).
const MIN_MASK_BYTES: usize = 128;

/// The mask of `set` as the kernel's affinity syscalls take it, built ahead of
/// time so that a `pre_exec` closure can set it without allocating after fork.
pub fn mask_words(set: &CpuSet) -> Vec<u64> {
    let mut words = set.as_words().to_vec();
    words.resize((MIN_MASK_BYTES / 8).max(words.len()), 0);
    words
}

/// `sched_getaffinity(tid)`: the CPUs a task may run on.
pub fn get_affinity(tid: u32) -> io::Result<CpuSet> {
    let mut bytes = MIN_MASK_BYTES;
    loop {
        let mut buf = vec![0u64; bytes / 8];
        // SAFETY: buf is `bytes` long and writable; the kernel writes at most that.
        let r = unsafe {
            libc::syscall(
                libc::SYS_sched_getaffinity,
                tid as libc::pid_t,
                bytes,
                buf.as_mut_ptr(),
            )
        };
        if r >= 0 {
            return Ok(CpuSet::from_words(buf));
        }
        let err = io::Error::last_os_error();
        // EINVAL: the buffer is smaller than the kernel's cpumask.
        if err.raw_os_error() == Some(libc::EINVAL) && bytes < MAX_CPUS as usize / 8 {
            bytes *= 2;
            continue;
        }
        return Err(err);
    }
}

/// `sched_setaffinity(tid, set)`.
pub fn set_affinity(tid: u32, set: &CpuSet) -> io::Result<()> {
    set_affinity_words(tid, &mask_words(set))
}

/// `sched_setaffinity(tid, mask)` with a mask from [`mask_words`]; does not allocate.
pub fn set_affinity_words(tid: u32, mask: &[u64]) -> io::Result<()> {
    // SAFETY: mask holds mask.len() * 8 readable bytes.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_setaffinity,
            tid as libc::pid_t,
            std::mem::size_of_val(mask),
            mask.as_ptr(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `sched_setscheduler(tid, policy, priority)`.
pub fn set_scheduler(tid: u32, policy: Policy, priority: u32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority as libc::c_int,
    };
    // SAFETY: param is a valid sched_param.
    let r = unsafe { libc::sched_setscheduler(tid as libc::pid_t, policy.raw(), &param) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The real-time priority of `latency`'s measuring threads when none is given:
/// above the IRQ threads (50) and most applications, below the kernel's own
/// migration and watchdog threads (99), as cyclictest is usually run (`-p95`).
pub const PROBE_PRIORITY: u32 = 95;

/// The real-time priority of a command started by `pin` or `run` with a real-time
/// policy and no priority: the middle of the range, as `chrt` users often pick.
pub const COMMAND_PRIORITY: u32 = 50;

/// The priority for `policy` when none is given: `realtime` for fifo and rr (one of
/// the constants above), 0 for the others.
pub fn default_priority(policy: Policy, realtime: u32) -> u32 {
    if policy.is_realtime() {
        realtime
    } else {
        0
    }
}

/// The priority range of a policy (1-99 for fifo and rr, 0-0 otherwise).
pub fn priority_range(policy: Policy) -> (u32, u32) {
    // SAFETY: no preconditions.
    let (lo, hi) = unsafe {
        (
            libc::sched_get_priority_min(policy.raw()),
            libc::sched_get_priority_max(policy.raw()),
        )
    };
    (lo.max(0) as u32, hi.max(0) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_thread_affinity_round_trip() {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        let before = get_affinity(tid).unwrap();
        assert!(!before.is_empty());
        let one: CpuSet = before.first().into_iter().collect();
        set_affinity(tid, &one).unwrap();
        assert_eq!(get_affinity(tid).unwrap(), one);
        set_affinity(tid, &before).unwrap();
        assert_eq!(get_affinity(tid).unwrap(), before);
    }

    #[test]
    fn rt_priority_range() {
        assert_eq!(priority_range(Policy::Fifo), (1, 99));
        assert_eq!(priority_range(Policy::Other), (0, 0));
    }
}
