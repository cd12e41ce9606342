//! What to measure, checked before any thread starts.

use jitterlab_cpuset::CpuSet;
use jitterlab_host::tasks::Policy;
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

/// Parses a duration with a unit: `300us`, `1ms`, `10s`, `2m`, `500ns`; a bare
/// number is microseconds, as cyclictest's `-i`.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{s:?}: expected a number with a unit (300us, 1ms, 10s)"))?;
    let scale = match unit.trim() {
        "ns" => 1.0,
        "" | "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        u => return Err(format!("{s:?}: unknown unit {u:?} (ns, us, ms, s, m, h)")),
    };
    let ns = value * scale;
    if !ns.is_finite() || ns > u64::MAX as f64 / 2.0 {
        return Err(format!("{s:?}: too large"));
    }
    Ok(ns.round() as u64)
}

/// ns as the shortest exact unit: `300us`, `1ms`, `1500ns`.
pub fn format_ns(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 && n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
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
    fn durations_with_units() {
        assert_eq!(parse_duration_ns("300us"), Ok(300_000));
        assert_eq!(parse_duration_ns("1ms"), Ok(1_000_000));
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration_ns("10s"), Ok(10_000_000_000));
        assert_eq!(parse_duration_ns("2m"), Ok(120_000_000_000));
        assert_eq!(
            parse_duration_ns("200"),
            Ok(200_000),
            "bare = us, as cyclictest -i"
        );
        assert_eq!(parse_duration_ns("750ns"), Ok(750));
        assert!(parse_duration_ns("-1ms").is_err());
        assert!(parse_duration_ns("1parsec")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(parse_duration_ns("ms").is_err());
        assert_eq!(format_ns(300_000), "300us");
        assert_eq!(format_ns(1_500), "1500ns");
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
