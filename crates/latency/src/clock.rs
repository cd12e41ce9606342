//! The probe's clock, behind a trait so the loop can be tested without real time.

use std::collections::VecDeque;

/// A monotonic clock the probe sleeps on.
pub trait Clock {
    /// Now, in ns.
    fn now_ns(&mut self) -> u64;
    /// Sleeps until the absolute time `t` (ns); may wake late, never early.
    fn sleep_until_ns(&mut self, t: u64);
}

/// CLOCK_MONOTONIC with `clock_nanosleep(TIMER_ABSTIME)`, as cyclictest uses.
#[derive(Clone, Copy, Debug, Default)]
pub struct Monotonic;

impl Clock for Monotonic {
    fn now_ns(&mut self) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: ts is a valid timespec; CLOCK_MONOTONIC always exists.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    fn sleep_until_ns(&mut self, t: u64) {
        let ts = libc::timespec {
            tv_sec: (t / 1_000_000_000) as libc::time_t,
            tv_nsec: (t % 1_000_000_000) as libc::c_long,
        };
        // Retry on EINTR: a signal must not shorten the sleep.
        loop {
            // SAFETY: ts is valid; a null remainder is allowed with TIMER_ABSTIME.
            let r = unsafe {
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                )
            };
            if r != libc::EINTR {
                return;
            }
        }
    }
}

/// A clock whose wake-ups come late by scripted amounts, for tests.
#[derive(Clone, Debug, Default)]
pub struct Fake {
    now: u64,
    lateness: VecDeque<u64>,
}

impl Fake {
    /// A clock at time `start` whose successive wake-ups are late by `lateness`
    /// (then on time).
    pub fn new(start: u64, lateness: impl IntoIterator<Item = u64>) -> Fake {
        Fake {
            now: start,
            lateness: lateness.into_iter().collect(),
        }
    }
}

impl Clock for Fake {
    fn now_ns(&mut self) -> u64 {
        self.now
    }

    fn sleep_until_ns(&mut self, t: u64) {
        self.now = self.now.max(t) + self.lateness.pop_front().unwrap_or(0);
    }
}
