//! What a run measures: the latency probe, a command's throughput, the built-in
//! network workloads; and the metrics each gives.

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use super::levels::Role;
use crate::report::Metric;
use crate::stats::Direction;

/// Everything a run measures; at least one is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Measures {
    /// The latency probe.
    pub latency: Option<LatencyMeasure>,
    /// Commands whose output gives a number.
    pub commands: Vec<CommandMeasure>,
    /// The built-in TCP workload (iperf3).
    pub tcp: Option<TcpMeasure>,
    /// The built-in UDP multicast workload.
    pub mcast: Option<McastMeasure>,
}

/// The latency probe during the run (`jitterlab latency`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencyMeasure {
    /// The measured CPUs (default: every online CPU).
    pub cpus: Option<CpuSet>,
    /// The timer interval, ns (1 ms).
    pub interval_ns: u64,
    /// The probe's SCHED_FIFO priority (95).
    pub priority: u8,
    /// `--break`: stop the run's trace at the first latency above this, ns.
    pub break_ns: Option<u64>,
}

/// The latency metrics of one run, each a metric of its own.
pub const LATENCY_METRICS: [&str; 6] = ["min", "avg", "p50", "p99", "p99.9", "max"];

/// A command run once per run; a number read from its output is the metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CommandMeasure {
    /// The metric's name.
    pub name: String,
    /// The command line (`sh -c`); `{duration}` stands for the run's duration in
    /// whole seconds (rounded up).
    pub command: String,
    /// How the number is found in the output.
    pub extract: Extract,
    /// The number's unit (`bit/s`).
    pub unit: String,
    /// Which way is better.
    pub direction: Direction,
}

impl CommandMeasure {
    /// The command line for a run of `duration_ns`.
    pub fn command_line(&self, duration_ns: u64) -> String {
        let secs = duration_ns.div_ceil(1_000_000_000);
        self.command.replace("{duration}", &secs.to_string())
    }
}

/// How a number is read from a command's output.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", content = "pattern", rename_all = "snake_case")]
pub enum Extract {
    /// A dotted path into the JSON output (`end.sum_received.bits_per_second`); a
    /// numeric part indexes an array (`intervals.0.sum.bits_per_second`).
    Json(String),
    /// A regular expression with one capture group, the number; the first match.
    Regex(String),
}

impl Extract {
    /// The number in `output`, or what was wrong.
    pub fn apply(&self, output: &str) -> Result<f64, String> {
        match self {
            Extract::Json(path) => {
                let mut v: serde_json::Value = serde_json::from_str(output)
                    .map_err(|e| format!("the output is not JSON: {e}"))?;
                for part in path.split('.') {
                    let next = match &mut v {
                        serde_json::Value::Object(map) => map.remove(part),
                        serde_json::Value::Array(items) => part
                            .parse::<usize>()
                            .ok()
                            .filter(|&i| i < items.len())
                            .map(|i| items.swap_remove(i)),
                        _ => None,
                    };
                    v = next.ok_or_else(|| format!("no {part:?} in the output's {path}"))?;
                }
                v.as_f64()
                    .ok_or_else(|| format!("{path} is not a number in the output: {v}"))
            }
            Extract::Regex(pattern) => {
                let re = regex::Regex::new(pattern).map_err(|e| e.to_string())?;
                let caps = re
                    .captures(output)
                    .ok_or_else(|| format!("no match of {pattern:?} in the output"))?;
                let text = caps.get(1).map_or("", |m| m.as_str());
                text.trim()
                    .parse()
                    .map_err(|_| format!("{text:?}, matched by {pattern:?}, is not a number"))
            }
        }
    }

    /// Checks a regular expression: it compiles and has exactly one capture group.
    pub(crate) fn check(&self) -> Result<(), String> {
        match self {
            Extract::Json(path) if path.split('.').any(str::is_empty) => Err(format!(
                "{path:?}: expected a dotted path (end.sum_received.bits_per_second)"
            )),
            Extract::Json(_) => Ok(()),
            Extract::Regex(p) => match regex::Regex::new(p) {
                Err(e) => Err(format!("not a regular expression: {e}")),
                Ok(re) if re.captures_len() != 2 => Err(format!(
                    "expected exactly one capture group around the number, found {}",
                    re.captures_len() - 1
                )),
                Ok(_) => Ok(()),
            },
        }
    }
}

/// `iperf3` server and client in a private network namespace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TcpMeasure {
    /// `-b`: the client's target bitrate (`1G`); none is unlimited.
    pub bitrate: Option<String>,
    /// Parallel streams (`-P`, 1).
    pub streams: u32,
    /// The per-interval series' interval (`-i`), ns (1 s; 100 ms finds steps sooner).
    pub interval_ns: u64,
    /// The server's CPUs when no affinity level places it.
    pub server_cpus: Option<CpuSet>,
    /// The client's CPUs when no affinity level places it.
    pub client_cpus: Option<CpuSet>,
}

/// A UDP multicast sender and receiver with sequence numbers, in a private
/// network namespace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct McastMeasure {
    /// Bytes of payload per message (64).
    pub payload: u32,
    /// Messages per second the sender paces itself to; none is as fast as it can.
    pub rate: Option<u64>,
    /// The per-interval series' interval, ns (100 ms).
    pub interval_ns: u64,
    /// The sender's CPUs when no affinity level places it.
    pub sender_cpus: Option<CpuSet>,
    /// The receiver's CPUs when no affinity level places it.
    pub receiver_cpus: Option<CpuSet>,
}

impl Measures {
    /// The CPUs a measure gives `role` when no affinity level places it (`server_cpus`,
    /// `client_cpus`, `sender_cpus`, `receiver_cpus`); `None` is unpinned.
    pub fn default_cpus(&self, role: Role) -> Option<CpuSet> {
        match role {
            Role::Server => self.tcp.as_ref().and_then(|t| t.server_cpus.clone()),
            Role::Client => self.tcp.as_ref().and_then(|t| t.client_cpus.clone()),
            Role::Sender => self.mcast.as_ref().and_then(|m| m.sender_cpus.clone()),
            Role::Receiver => self.mcast.as_ref().and_then(|m| m.receiver_cpus.clone()),
            Role::Workload => None,
        }
    }

    /// The metrics the runs report, in this order: latency, commands, tcp, mcast.
    pub fn metrics(&self) -> Vec<Metric> {
        let mut out = Vec::new();
        let lower = Direction::LowerIsBetter;
        let higher = Direction::HigherIsBetter;
        if self.latency.is_some() {
            for m in LATENCY_METRICS {
                out.push(Metric::new(&format!("latency.{m}"), "ns", lower));
            }
            out.push(Metric::new("latency.missed", "periods", lower));
        }
        for c in &self.commands {
            out.push(Metric::new(&c.name, &c.unit, c.direction));
        }
        if self.tcp.is_some() {
            out.push(Metric::new("tcp.throughput", "bit/s", higher));
        }
        if self.mcast.is_some() {
            out.push(Metric::new("mcast.received", "msg/s", higher));
            out.push(Metric::new("mcast.lost", "msg", lower));
            out.push(Metric::new("mcast.reordered", "msg", lower));
            out.push(Metric::new("mcast.duplicated", "msg", lower));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_path_and_regex() {
        let out = r#"{"end":{"sum_received":{"bits_per_second":9.5e9}},"intervals":[{"sum":{"bits_per_second":1}}]}"#;
        let json = |p: &str| Extract::Json(p.into()).apply(out);
        assert_eq!(json("end.sum_received.bits_per_second"), Ok(9.5e9));
        assert_eq!(json("intervals.0.sum.bits_per_second"), Ok(1.0));
        assert!(json("end.sum_sent.bits_per_second")
            .unwrap_err()
            .contains("sum_sent"));
        assert!(json("end").unwrap_err().contains("not a number"));
        let re = Extract::Regex(r"([0-9.]+) Mbits/sec".into());
        assert_eq!(re.check(), Ok(()));
        assert_eq!(
            re.apply("[  3]  0.0-10.0 sec  1.10 GBytes   851 Mbits/sec"),
            Ok(851.0)
        );
        assert!(Extract::Regex("a(b)(c)".into())
            .check()
            .unwrap_err()
            .contains("found 2"));
        assert!(Extract::Regex("([".into()).check().is_err());
    }

    #[test]
    fn duration_placeholder() {
        let c = CommandMeasure {
            name: "t".into(),
            command: "iperf3 -c 10.0.0.1 -t {duration} -J".into(),
            extract: Extract::Json("a".into()),
            unit: "bit/s".into(),
            direction: Direction::HigherIsBetter,
        };
        assert_eq!(
            c.command_line(10_000_000_000),
            "iperf3 -c 10.0.0.1 -t 10 -J"
        );
        assert_eq!(c.command_line(1_500_000_000), "iperf3 -c 10.0.0.1 -t 2 -J");
    }
}
