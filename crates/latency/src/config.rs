//! What to measure, checked before any thread starts.

use jitterlab_cpuset::CpuSet;
use jitterlab_host::tasks::Policy;
use jitterlab_units::format_ns;
use serde::Serialize;

use crate::Error;

/// Shortest interval accepted without `force`: below it the probe measures
/// mostly its own overhead and can starve the CPU.
pub const MIN_INTERVAL_NS: u64 = 10_000;

/// When the run ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// After this many wake-ups per CPU.
    Loops(u64),
    /// After this long, in nanoseconds.
    DurationNs(u64),
}

/// The probe's configuration.
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// One measuring thread per CPU of this set.
    pub cpus: CpuSet,
    /// Scheduling policy of the measuring threads.
    pub policy: Policy,
    /// Their priority (1-99 for fifo and rr).
    pub priority: u32,
    /// The period, in ns.
    pub interval_ns: u64,
    /// When to stop.
    pub stop: Stop,
    /// A wake-up later than this is a deadline miss, in ns.
    pub deadline_ns: u64,
    /// Hold /dev/cpu_dma_latency at 0 while running.
    pub dma_latency: bool,
    /// Allow intervals under 10 us.
    pub force: bool,
    /// Samples above this go to the spike ledger, ns (`None`: no ledger).
    pub spike_threshold_ns: Option<u64>,
    /// End the run at the first sample above this, ns, marking and stopping the trace.
    pub break_ns: Option<u64>,
}

impl Config {
    /// Checks everything that can be checked before a thread starts.
    pub fn validate(&self, online: &CpuSet) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Invalid(m));
        if self.interval_ns == 0 {
            return bad("--interval must be above 0".into());
        }
        if self.interval_ns < MIN_INTERVAL_NS && !self.force {
            return bad(format!(
                "--interval {} is under 10 us: the probe would measure mostly itself and may \
                 starve the CPU; add --force to run it anyway",
                format_ns(self.interval_ns)
            ));
        }
        if self.deadline_ns == 0 {
            return bad("--deadline must be above 0".into());
        }
        match self.stop {
            Stop::Loops(0) => return bad("--loops must be at least 1".into()),
            Stop::DurationNs(0) => return bad("--duration must be above 0".into()),
            _ => {}
        }
        if self.break_ns == Some(0) {
            return bad("--break must be above 0".into());
        }
        if self.cpus.is_empty() {
            return bad("no CPU to measure".into());
        }
        let offline = self.cpus.difference(online);
        if !offline.is_empty() {
            return bad(format!("CPU {offline} is not online (online: {online})"));
        }
        jitterlab_host::pin::Sched {
            policy: self.policy,
            priority: self.priority,
        }
        .validate()
        .map_err(|e| Error::Invalid(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config {
            cpus: CpuSet::first_n(1),
            policy: Policy::Fifo,
            priority: 95,
            interval_ns: 1_000_000,
            stop: Stop::Loops(10),
            deadline_ns: 1_000_000,
            dma_latency: false,
            force: false,
            spike_threshold_ns: None,
            break_ns: None,
        }
    }

    #[test]
    fn bad_configurations_are_refused_before_start() {
        let online = CpuSet::first_n(2);
        config().validate(&online).unwrap();
        let msg = |c: Config| c.validate(&online).unwrap_err().to_string();
        assert!(msg(Config {
            interval_ns: 0,
            ..config()
        })
        .contains("above 0"));
        assert!(msg(Config {
            interval_ns: 5_000,
            ..config()
        })
        .contains("add --force"));
        Config {
            interval_ns: 5_000,
            force: true,
            ..config()
        }
        .validate(&online)
        .unwrap();
        assert!(msg(Config {
            priority: 0,
            ..config()
        })
        .contains("out of range for policy fifo: 1-99"));
        assert!(msg(Config {
            priority: 100,
            ..config()
        })
        .contains("1-99"));
        assert!(msg(Config {
            cpus: CpuSet::parse_list("1-2").unwrap(),
            ..config()
        })
        .contains("CPU 2 is not online"));
        assert!(msg(Config {
            stop: Stop::Loops(0),
            ..config()
        })
        .contains("--loops"));
        assert!(msg(Config {
            deadline_ns: 0,
            ..config()
        })
        .contains("--deadline"));
    }
}
