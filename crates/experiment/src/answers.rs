//! The experiment's questions answered, one sentence each, from what its runs measured:
//! the verdicts with their ratios; what bounded a TCP workload (the `-b` limit or the
//! CPU); where a multicast pair ran, how often it moved, whether it shared a CPU and
//! what its receiver waited on; the interrupts on the probe's CPUs and how busy they
//! were; the blamed spikes by cause; what the steps could and could not be; and what
//! else the machine did. Every figure is a median over a cell's measured runs, from
//! the runs' contexts ([`crate::context`]), the statistics and the explanations; a
//! question without the numbers to answer it is left out, never guessed.
//!
//! The sentences are the report's words, made here once so that the text, the JSON and
//! the HTML page say the same; each keeps the figures it rests on in
//! [`Answer::basis`].

use crate::context::RunContext;
use crate::recipe::{Load, Measures, Partition, Role};
use crate::report::{Answer, Background, ExperimentReport, MetricStats, Run, Warning};
use crate::stats::Significance;

/// The answers for `r`, whose recipe measured `m`.
pub fn answer(r: &ExperimentReport, m: &Measures) -> Vec<Answer> {
    let mut out = Vec::new();
    out.extend(verdicts(r));
    if m.tcp.is_some() {
        out.extend(tcp_bound(r));
    }
    if m.mcast.is_some() {
        out.extend(mcast_placement(r));
        out.extend(mcast_bound(r));
    }
    if let Some(l) = &m.latency {
        let cpus: Vec<u32> = l
            .cpus
            .as_ref()
            .map_or_else(Vec::new, |c| c.iter().collect());
        out.extend(probe_cpus(r, &cpus));
    }
    out.extend(wakeups(r));
    out.extend(spikes(r));
    out.extend(steps(r));
    out.extend(background(r));
    out
}

/// Median of `v` (0 for none).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// A value in its unit, for people.
pub fn show(v: f64, unit: &str) -> String {
    match unit {
        "ns" if v >= 1e6 => format!("{:.2} ms", v / 1e6),
        "ns" => format!("{:.1} µs", v / 1e3),
        "bit/s" if v >= 1e9 => format!("{:.2} Gbit/s", v / 1e9),
        "bit/s" => format!("{:.0} Mbit/s", v / 1e6),
        "msg/s" if v >= 1e3 => format!("{:.0}k msg/s", v / 1e3),
        // A count (operations, messages) is whole: `1116 op`, not `1116.000 op`.
        "" if is_whole(v) => format!("{v:.0}"),
        "" => format!("{v:.3}"),
        u if is_whole(v) => format!("{v:.0} {u}"),
        u => format!("{v:.3} {u}"),
    }
}

/// True for a whole number small enough to print exactly.
fn is_whole(v: f64) -> bool {
    v.fract() == 0.0 && v.abs() < 1e15
}

/// The measured runs of cell `c` that succeeded.
fn runs_of(r: &ExperimentReport, c: usize) -> impl Iterator<Item = &Run> {
    r.runs
        .iter()
        .filter(move |x| x.cell == c && !x.warmup && x.error.is_none())
}

/// The contexts of cell `c`'s measured runs.
fn contexts(r: &ExperimentReport, c: usize) -> Vec<&RunContext> {
    runs_of(r, c).filter_map(|x| x.context.as_ref()).collect()
}

fn label(r: &ExperimentReport, c: usize) -> String {
    r.cells
        .get(c)
        .map_or_else(|| format!("cell {c}"), |x| x.label.clone())
}

/// One sentence per headline metric: each cell against its baseline.
fn verdicts(r: &ExperimentReport) -> Vec<Answer> {
    let headline: Vec<&MetricStats> = r
        .stats
        .iter()
        .enumerate()
        .filter(|(i, s)| *i == 0 || s.metric.name == "latency.p99")
        .map(|(_, s)| s)
        .collect();
    let mut out = Vec::new();
    for s in headline {
        if s.comparisons.is_empty() {
            continue;
        }
        let mut parts = Vec::new();
        let mut basis = Vec::new();
        for c in &s.comparisons {
            let ratio = c
                .ratio
                .as_ref()
                .map_or_else(|| "no ratio".to_string(), |e| format!("{:.2}x", e.value));
            let how = match &c.verdict {
                Significance::Real { better, .. } => {
                    if *better {
                        "real, better".to_string()
                    } else {
                        "real, worse".to_string()
                    }
                }
                v @ Significance::NoRealDifference { .. } => {
                    // "no real difference (a, b)" as "no real difference: a, b".
                    let t = v.to_string();
                    match t.split_once(" (") {
                        Some((head, why)) => format!("{head}: {}", why.trim_end_matches(')')),
                        None => t,
                    }
                }
            };
            parts.push(format!(
                "{} {ratio} of {} ({how})",
                label(r, c.cell),
                label(r, c.baseline)
            ));
            let med = |cell: usize| {
                s.cells
                    .get(cell)
                    .and_then(|x| x.median.as_ref())
                    .map_or_else(|| "-".into(), |e| show(e.value, &s.metric.unit))
            };
            basis.push(format!(
                "{}: {} against {}",
                label(r, c.cell),
                med(c.cell),
                med(c.baseline)
            ));
            if let Background::QuietRunsOnly {
                cell_runs,
                baseline_runs,
            } = c.background
            {
                basis.push(format!(
                    "{}: compared on the quiet runs only ({cell_runs} and {baseline_runs})",
                    label(r, c.cell)
                ));
            }
        }
        out.push(Answer {
            topic: "verdict".into(),
            text: format!("{}: {}.", s.metric.name, parts.join("; ")),
            basis,
        });
    }
    out
}

/// `1G`, `500M`, `100K`, `2000000` as bits per second.
fn bitrate(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, mul) = match s.chars().last()? {
        'G' | 'g' => (&s[..s.len() - 1], 1e9),
        'M' | 'm' => (&s[..s.len() - 1], 1e6),
        'K' | 'k' => (&s[..s.len() - 1], 1e3),
        _ => (s, 1.0),
    };
    num.parse::<f64>().ok().map(|n| n * mul)
}

/// A role's median CPU use over cell `c`'s runs (1.0 = one CPU the whole run).
fn role_cpus(r: &ExperimentReport, c: usize, role: Role) -> Option<f64> {
    let v: Vec<f64> = contexts(r, c)
        .iter()
        .filter_map(|x| x.role_cpus(role))
        .collect();
    (!v.is_empty()).then(|| median(v))
}

/// The CPU that ran the most of softirq `vector` in cell `c`'s runs, with its median
/// count per run.
fn softirq_cpu(r: &ExperimentReport, c: usize, vector: &str) -> Option<(u32, f64)> {
    let ctx = contexts(r, c);
    let cpus: Vec<u32> = ctx
        .first()
        .map(|x| x.cpus.iter().map(|c| c.cpu).collect())
        .unwrap_or_default();
    cpus.into_iter()
        .map(|cpu| {
            let v = ctx
                .iter()
                .filter_map(|x| x.cpu(cpu))
                .map(|cc| cc.softirqs.get(vector).copied().unwrap_or(0) as f64)
                .collect();
            (cpu, median(v))
        })
        .filter(|(_, n)| *n > 0.0)
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// What bounded the TCP throughput: the `-b` limit (the link) or the CPU.
fn tcp_bound(r: &ExperimentReport) -> Vec<Answer> {
    let Some(s) = r.metric("tcp.throughput") else {
        return Vec::new();
    };
    let mut limited: Vec<(usize, f64, f64, Option<f64>)> = Vec::new();
    let mut unlimited: Vec<(usize, f64, Option<f64>)> = Vec::new();
    for cell in &r.cells {
        let Some(med) = s.cells.get(cell.index).and_then(|x| x.median.as_ref()) else {
            continue;
        };
        let server = role_cpus(r, cell.index, Role::Server);
        match cell.settings.bitrate.as_deref().and_then(bitrate) {
            Some(limit) => limited.push((cell.index, med.value, limit, server)),
            None => unlimited.push((cell.index, med.value, server)),
        }
    }
    let mut out = Vec::new();
    if !limited.is_empty() {
        let at_limit = limited.iter().filter(|(_, v, l, _)| *v >= 0.97 * l).count();
        let max_server = limited
            .iter()
            .filter_map(|x| x.3)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        let limit = limited[0].2;
        let lo = limited.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
        let hi = limited.iter().map(|x| x.1).fold(0.0, f64::max);
        let text = match max_server {
            Some(cpu) if at_limit == limited.len() && cpu < 0.9 => format!(
                "At -b {}, every one of the {} cells reached the limit ({} to {}) with the server at most {:.2} CPUs: the link, not the CPU, bounds them, so affinity and load cannot show there.",
                show(limit, "bit/s"),
                limited.len(),
                show(lo, "bit/s"),
                show(hi, "bit/s"),
                cpu
            ),
            _ => format!(
                "At -b {}, {} of {} cells reached the limit ({} to {}){}.",
                show(limit, "bit/s"),
                at_limit,
                limited.len(),
                show(lo, "bit/s"),
                show(hi, "bit/s"),
                max_server.map_or_else(String::new, |c| format!(
                    "; the server used up to {c:.2} CPUs"
                ))
            ),
        };
        let basis = limited
            .iter()
            .map(|(c, v, _, server)| {
                format!(
                    "{}: {}, server {}",
                    label(r, *c),
                    show(*v, "bit/s"),
                    server.map_or_else(|| "-".into(), |s| format!("{s:.2} CPUs"))
                )
            })
            .collect();
        out.push(Answer {
            topic: "bound".into(),
            text,
            basis,
        });
    }
    if !unlimited.is_empty() {
        let bound: Vec<String> = unlimited
            .iter()
            .map(|(c, v, server)| {
                let net_rx = softirq_cpu(r, *c, "NET_RX");
                let kind = match server {
                    Some(s) if *s >= 0.9 => "CPU-bound",
                    Some(_) => "not CPU-bound",
                    None => "server CPU not measured",
                };
                format!(
                    "{}: {} ({kind}{}{})",
                    label(r, *c),
                    show(*v, "bit/s"),
                    server.map_or_else(String::new, |s| format!(", server {s:.2} CPUs")),
                    net_rx.map_or_else(String::new, |(cpu, _)| format!(", NET_RX on CPU {cpu}"))
                )
            })
            .collect();
        let cpu_bound = unlimited
            .iter()
            .filter(|x| x.2.is_some_and(|s| s >= 0.9))
            .count();
        out.push(Answer {
            topic: "bound".into(),
            text: format!(
                "Unlimited, {cpu_bound} of {} cells were bound by the server's CPU (0.9 CPUs or more), so where it runs against the NET_RX softirq and the load decides the rate.",
                unlimited.len()
            ),
            basis: bound,
        });
    }
    out
}

/// Where a multicast pair ran, how often the receiver moved, whether the two shared a
/// CPU and what the receiver waited on.
fn mcast_placement(r: &ExperimentReport) -> Vec<Answer> {
    let mut basis = Vec::new();
    let mut sentences = Vec::new();
    for cell in &r.cells {
        let ctx = contexts(r, cell.index);
        let recv: Vec<_> = ctx
            .iter()
            .filter_map(|x| {
                let rt = x.roles.iter().find(|t| t.role == Role::Receiver)?;
                Some((x.wall_ns, rt))
            })
            .collect();
        if recv.is_empty() {
            continue;
        }
        let moves = median(recv.iter().map(|(_, t)| t.migrations as f64).collect());
        let waited = median(
            recv.iter()
                .map(|(_, t)| {
                    let all = t.cpu_ns + t.wait_ns;
                    if all == 0 {
                        0.0
                    } else {
                        t.wait_ns as f64 / all as f64
                    }
                })
                .collect(),
        );
        let shared = median(
            ctx.iter()
                .filter_map(|x| {
                    x.shared
                        .iter()
                        .find(|s| s.a == Role::Sender && s.b == Role::Receiver)
                        .map(|s| s.fraction)
                })
                .collect(),
        );
        let pinned = recv.iter().all(|(_, t)| !t.allowed.contains([',', '-']));
        sentences.push(format!(
            "{}: the receiver moved {} times a run{}, shared a CPU with the sender {:.0}% of the time and waited for a CPU {:.0}% of the time it wanted one",
            cell.label,
            moves,
            if pinned { " (pinned to one CPU)" } else { "" },
            shared * 100.0,
            waited * 100.0
        ));
        basis.push(format!(
            "{}: receiver migrations {moves} (median per run), shared {:.2}, run-queue wait {:.2} of run+wait",
            cell.label, shared, waited
        ));
    }
    if sentences.is_empty() {
        return Vec::new();
    }
    vec![Answer {
        topic: "placement".into(),
        text: format!("{}.", sentences.join("; ")),
        basis,
    }]
}

/// A side that used this share of a CPU or more was the bound of the rate.
const SATURATED: f64 = 0.9;

/// What bounded the multicast rate per cell: the sender (the generator) when it used a
/// whole CPU and the receiver kept up, the receiver when it lost messages or used a
/// whole CPU itself, else neither (the pair waited on each other or on the system).
fn mcast_bound(r: &ExperimentReport) -> Vec<Answer> {
    let mut sentences = Vec::new();
    let mut basis = Vec::new();
    for cell in &r.cells {
        let runs: Vec<&Run> = runs_of(r, cell.index)
            .filter(|x| x.values.contains_key("mcast.sent") && x.context.is_some())
            .collect();
        if runs.is_empty() {
            continue;
        }
        let share = |role: Role| {
            median(
                runs.iter()
                    .filter_map(|x| {
                        let c = x.context.as_ref()?;
                        let t = c.roles.iter().find(|t| t.role == role)?;
                        Some(t.cpu_ns as f64 / c.wall_ns.max(1) as f64)
                    })
                    .collect(),
            )
        };
        let (send, recv) = (share(Role::Sender), share(Role::Receiver));
        let sent = median(runs.iter().map(|x| x.values["mcast.sent"]).collect());
        let received = median(
            runs.iter()
                .filter_map(|x| x.values.get("mcast.received").copied())
                .collect(),
        );
        let lost = if sent > 0.0 {
            (1.0 - received / sent).max(0.0)
        } else {
            0.0
        };
        let bound = if lost > 0.01 || recv >= SATURATED && send < SATURATED {
            "the receiver was the bound"
        } else if send >= SATURATED {
            "the sender (the generator) was the bound, and the receiver kept up"
        } else {
            "neither side used a whole CPU: they waited on each other or on the system"
        };
        sentences.push(format!(
            "{}: sent {}, received {}; the sender used {:.0}% of a CPU, the receiver {:.0}%: {bound}",
            cell.label,
            show(sent, "msg/s"),
            show(received, "msg/s"),
            send * 100.0,
            recv * 100.0
        ));
        basis.push(format!(
            "{}: medians of {} runs: mcast.sent {sent:.0} msg/s, mcast.received {received:.0} msg/s, lost {:.2}%, CPU use sender {send:.2}, receiver {recv:.2} (saturated at {SATURATED})",
            cell.label,
            runs.len(),
            lost * 100.0
        ));
    }
    if sentences.is_empty() {
        return Vec::new();
    }
    vec![Answer {
        topic: "bound".into(),
        text: format!("{}.", sentences.join("; ")),
        basis,
    }]
}

/// The interrupts on the probe's CPUs per cell, and how busy those CPUs were.
fn probe_cpus(r: &ExperimentReport, cpus: &[u32]) -> Vec<Answer> {
    if cpus.is_empty() {
        return Vec::new();
    }
    let mut rows = Vec::new();
    for cell in &r.cells {
        let ctx = contexts(r, cell.index);
        if ctx.is_empty() {
            continue;
        }
        let per_s = |f: &dyn Fn(&RunContext) -> u64| -> f64 {
            median(
                ctx.iter()
                    .map(|x| f(x) as f64 * 1e9 / x.wall_ns.max(1) as f64)
                    .collect(),
            )
        };
        let loc = per_s(&|x| {
            cpus.iter()
                .filter_map(|c| x.cpu(*c))
                .map(|c| c.local_timer)
                .sum()
        });
        let dev = per_s(&|x| {
            cpus.iter()
                .filter_map(|c| x.cpu(*c))
                .map(|c| c.device_irqs)
                .sum()
        });
        let busy = median(
            ctx.iter()
                .map(|x| {
                    let b: u64 = cpus
                        .iter()
                        .filter_map(|c| x.cpu(*c))
                        .map(|c| c.busy_ns)
                        .sum();
                    b as f64 / (x.wall_ns.max(1) as f64 * cpus.len() as f64)
                })
                .collect(),
        );
        rows.push((cell.index, loc, dev, busy));
    }
    if rows.is_empty() {
        return Vec::new();
    }
    let list = cpus
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let basis: Vec<String> = rows
        .iter()
        .map(|(c, loc, dev, busy)| {
            format!(
                "{}: CPU {list} local timer {loc:.0}/s, device IRQs {dev:.0}/s, busy {:.0}%",
                label(r, *c),
                busy * 100.0
            )
        })
        .collect();
    let mut out = vec![Answer {
        topic: "interrupts".into(),
        text: format!(
            "On the probe's CPU {list}: local timer interrupts {} per second, device IRQs {} per second, by cell.",
            range(rows.iter().map(|x| x.1)),
            range(rows.iter().map(|x| x.2))
        ),
        basis,
    }];
    // A partitioned cell against its unpartitioned baseline under the same load: the
    // isolated CPU idles between wake-ups (and a VM pays an exit to wake it).
    let latency = r.metric("latency.avg");
    for cell in &r.cells {
        let Partition::On(_) = &cell.settings.partition else {
            continue;
        };
        if matches!(cell.settings.load, Load::None) {
            continue;
        }
        let Some(b) = r
            .baselines
            .get(cell.index)
            .copied()
            .filter(|&b| b != cell.index)
        else {
            continue;
        };
        let (Some(on), Some(off)) = (
            rows.iter().find(|x| x.0 == cell.index),
            rows.iter().find(|x| x.0 == b),
        ) else {
            continue;
        };
        let worse = latency.and_then(|s| s.comparisons.iter().find(|c| c.cell == cell.index));
        // Beside unequal foreign work the difference says nothing of partitioning.
        if let Some(Background::Unequal {
            cell_cpus,
            baseline_cpus,
        }) = worse.map(|c| &c.background)
        {
            out.push(Answer {
                topic: "latency".into(),
                text: format!(
                    "{}: the average latency cannot be judged against {}'s: their runs ran beside unequal foreign work ({cell_cpus:.2} against {baseline_cpus:.2} CPUs of other processes).",
                    cell.label,
                    label(r, b),
                ),
                basis: worse
                    .and_then(|c| c.ratio.as_ref())
                    .map(|x| vec![format!("latency.avg ratio {:.3}, not called real", x.value)])
                    .unwrap_or_default(),
            });
            continue;
        }
        // Partitioning takes the load (and its timer interrupts) off the CPU, and leaves
        // the CPU idle between wake-ups, each of which then pays the exit from idle: the
        // verdict says which of the two weighed more.
        let (word, weighed) = match worse.map(|c| &c.verdict) {
            Some(Significance::Real { better: false, .. }) => {
                ("worse", "the exits from idle cost more than the load had")
            }
            Some(Significance::Real { better: true, .. }) => (
                "better",
                "what the load had cost outweighed the exits from idle",
            ),
            _ => ("not really different", "the two about cancel out"),
        };
        if on.3 < 0.5 && off.3 >= 0.5 {
            out.push(Answer {
                topic: "latency".into(),
                text: format!(
                    "{}: the average latency is {word} than {}'s: partitioning took the load off the CPU (busy {:.0}% of the time against {:.0}%), but the CPU now idles between wake-ups and each wake-up pays the exit from idle, which the load had kept it from; {weighed}.",
                    cell.label,
                    label(r, b),
                    on.3 * 100.0,
                    off.3 * 100.0
                ),
                basis: vec![format!(
                    "local timer {:.0}/s against {:.0}/s, device IRQs {:.0}/s against {:.0}/s",
                    on.1, off.1, on.2, off.2
                )],
            });
        }
    }
    out
}

fn range(v: impl Iterator<Item = f64>) -> String {
    let v: Vec<f64> = v.collect();
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0, f64::max);
    if (hi - lo).abs() < 0.5 {
        format!("{hi:.0}")
    } else {
        format!("{lo:.0} to {hi:.0}")
    }
}

/// How the processes under test were woken in the traced runs: from idle (the CPU's
/// exit from idle in it) or by preempting a task, and the chains from an IRQ or softirq;
/// a figure whose switch-ins the trace did not record is said to be a bound.
fn wakeups(r: &ExperimentReport) -> Vec<Answer> {
    let mut parts = Vec::new();
    let mut basis = Vec::new();
    for e in &r.explanations {
        let cell = label(r, e.cell);
        for t in e
            .threads
            .iter()
            .filter(|t| t.role.is_some() && t.wakeups > 0)
        {
            let role = t.role.map_or("", |x| x.name());
            let idle = t.wake_idle_p50_ns.map(|n| show(n as f64, "ns"));
            let task = t.wake_task_p50_ns.map(|n| show(n as f64, "ns"));
            let split = match (idle, task) {
                (Some(i), Some(k)) => format!("{i} from idle, {k} on a busy CPU"),
                (Some(i), None) => format!("{i} from idle"),
                (None, Some(k)) => format!("{k} on a busy CPU"),
                (None, None) => "no recorded switch-in".to_string(),
            };
            parts.push(format!("{cell}, the {role}: {split}"));
            basis.push(format!(
                "run {}: {} {} wake-ups, {} of them with the switch-in inferred (upper bounds)",
                e.seq, role, t.wakeups, t.wakeups_inferred
            ));
        }
        for c in e.chains.iter().filter(|c| c.inferred > 0) {
            let bound = c
                .p50_ns
                .map_or_else(|| "-".into(), |n| show(n as f64, "ns"));
            parts.push(format!(
                "{cell}, {} -> {}: at most {bound} (median), {} of {} switch-ins not recorded, so a bound, not a value",
                c.source, c.comm, c.inferred, c.count
            ));
        }
    }
    if parts.is_empty() {
        return Vec::new();
    }
    vec![Answer {
        topic: "wakeups".into(),
        text: format!(
            "Median wake-up latency in the traced runs: {}.",
            parts.join("; ")
        ),
        basis,
    }]
}

/// The blamed spikes by cause.
fn spikes(r: &ExperimentReport) -> Vec<Answer> {
    if r.spike_causes.is_empty() {
        return Vec::new();
    }
    let total: u32 = r.spike_causes.iter().map(|c| c.spikes).sum();
    let parts: Vec<String> = r
        .spike_causes
        .iter()
        .map(|c| format!("{} {}", c.cause, c.spikes))
        .collect();
    let worst = r
        .explanations
        .iter()
        .flat_map(|e| e.spikes.iter().map(move |s| (e.seq, s)))
        .max_by_key(|(_, s)| s.latency_ns);
    vec![Answer {
        topic: "spikes".into(),
        text: format!(
            "{total} spikes blamed by cause: {}{}.",
            parts.join(", "),
            worst.map_or_else(String::new, |(seq, s)| format!(
                "; the worst, {} in run {seq}: {}",
                show(s.latency_ns as f64, "ns"),
                s.verdict
            ))
        ),
        basis: Vec::new(),
    }]
}

/// What the steps of each cell could be: never migrations where the roles were pinned
/// to one CPU each; foreign work or steal where the run was busy.
fn steps(r: &ExperimentReport) -> Vec<Answer> {
    let mut out = Vec::new();
    for w in &r.warnings {
        let Warning::Steps {
            series,
            cell,
            runs,
            of,
        } = w
        else {
            continue;
        };
        let stepped: Vec<&Run> = runs_of(r, *cell)
            .filter(|x| {
                x.series
                    .iter()
                    .any(|s| &s.name == series && !s.steps.is_empty())
            })
            .collect();
        let pinned = stepped.iter().all(|x| {
            x.context.as_ref().is_some_and(|c| {
                !c.roles.is_empty() && c.roles.iter().all(|t| !t.allowed.contains([',', '-']))
            })
        });
        let moved = stepped
            .iter()
            .filter(|x| {
                x.context
                    .as_ref()
                    .is_some_and(|c| c.roles.iter().any(|t| t.migrations > 0))
            })
            .count();
        let busy = stepped
            .iter()
            .filter(|x| x.context.as_ref().is_some_and(RunContext::busy))
            .count();
        let cause = if pinned {
            format!(
                "not migrations (every process under test was pinned to one CPU){}",
                if busy > 0 {
                    format!("; {busy} of them ran beside foreign work or steal")
                } else {
                    "; no foreign work or steal above the bounds either: the host, or the workload itself".to_string()
                }
            )
        } else {
            format!(
                "{moved} of them had migrations of a process under test, {busy} ran beside foreign work or steal"
            )
        };
        out.push(Answer {
            topic: "steps".into(),
            text: format!(
                "{}: level shifts in {series} in {runs} of {of} runs: {cause}.",
                label(r, *cell)
            ),
            basis: Vec::new(),
        });
    }
    out
}

/// What else the machine did.
fn background(r: &ExperimentReport) -> Vec<Answer> {
    let all: Vec<&RunContext> = r
        .runs
        .iter()
        .filter(|x| !x.warmup)
        .filter_map(|x| x.context.as_ref())
        .collect();
    if all.is_empty() {
        return Vec::new();
    }
    let busy = all.iter().filter(|x| x.busy()).count();
    let foreign = median(all.iter().map(|x| x.foreign_cpus()).collect());
    let steal = median(all.iter().map(|x| x.steal_fraction()).collect());
    let worst_foreign = all.iter().map(|x| x.foreign_cpus()).fold(0.0, f64::max);
    let unequal = r
        .stats
        .iter()
        .flat_map(|s| &s.comparisons)
        .filter(|c| matches!(c.background, Background::Unequal { .. }))
        .count();
    let mut same: Vec<&str> = r
        .stats
        .iter()
        .flat_map(|s| &s.comparisons)
        .filter_map(|c| match &c.background {
            Background::SameForeign { processes, .. } => Some(processes),
            _ => None,
        })
        .flatten()
        .map(String::as_str)
        .collect();
    same.sort_unstable();
    same.dedup();
    let text = if busy == 0 {
        format!(
            "The machine was quiet: other processes used {foreign:.2} CPUs (at most {worst_foreign:.2}) and the host stole {:.1}% in the median run.",
            steal * 100.0
        )
    } else {
        format!(
            "{busy} of {} runs ran beside foreign work or the host's steal (median {foreign:.2} CPUs of other processes, steal {:.1}%){}.",
            all.len(),
            steal * 100.0,
            match (unequal, same.is_empty()) {
                (0, true) => String::new(),
                (0, false) => format!(
                    ": the same foreign processes ({}) ran beside every run compared, so the comparisons stand under that load, each cell's placement deciding its share of the CPUs",
                    same.join(", ")
                ),
                (n, _) => format!(
                    ": {n} comparisons stood under unequal background and are not called real"
                ),
            }
        )
    };
    vec![Answer {
        topic: "background".into(),
        text,
        basis: Vec::new(),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_for_people_and_bitrates() {
        assert_eq!(show(1.5e9, "bit/s"), "1.50 Gbit/s");
        assert_eq!(show(850e6, "bit/s"), "850 Mbit/s");
        assert_eq!(show(19_200.0, "ns"), "19.2 µs");
        assert_eq!(show(2.5e6, "ns"), "2.50 ms");
        assert_eq!(show(327_400.0, "msg/s"), "327k msg/s");
        assert_eq!(show(1116.0, "op"), "1116 op");
        assert_eq!(show(1116.25, "op"), "1116.250 op");
        assert_eq!(show(3.0, ""), "3");
        assert_eq!(bitrate("1G"), Some(1e9));
        assert_eq!(bitrate("500M"), Some(5e8));
        assert_eq!(bitrate("unlimited"), None);
    }
}

#[cfg(test)]
mod report_tests {
    use super::*;
    use crate::context::{CpuContext, RoleTime, SharedCpu};
    use crate::stats::Config;
    use crate::{Recipe, Run};

    const TCP: &str = r#"
        name = "tcp"
        rounds = 4
        warmup = 0
        [factors]
        affinity = ["irq-cpu", "not-irq-cpu"]
        bitrate = ["1G", "unlimited"]
        [measure.tcp]
        client_cpus = "0"
        [baseline]
        affinity = "irq-cpu"
    "#;

    fn role(role: Role, cpu_ns: u64, allowed: &str, migrations: u64) -> RoleTime {
        RoleTime {
            role,
            comm: "x".into(),
            pid: 1,
            thread: false,
            allowed: allowed.into(),
            cpu_ns,
            wait_ns: cpu_ns / 10,
            migrations,
            voluntary_switches: 0,
            involuntary_switches: 0,
            cpus: vec![],
        }
    }

    fn ctx(roles: Vec<RoleTime>, net_rx_cpu: u32) -> RunContext {
        let cpu = |c: u32| CpuContext {
            cpu: c,
            busy_ns: 500_000_000,
            local_timer: 250,
            softirqs: if c == net_rx_cpu {
                [("NET_RX".to_string(), 9000)].into()
            } else {
                Default::default()
            },
            ..CpuContext::default()
        };
        RunContext {
            wall_ns: 1_000_000_000,
            cpus: vec![cpu(0), cpu(1)],
            roles,
            shared: vec![SharedCpu {
                a: Role::Sender,
                b: Role::Receiver,
                fraction: 0.25,
                samples: 50,
            }],
            ..RunContext::default()
        }
    }

    fn report(
        recipe: &str,
        value: impl Fn(usize) -> f64,
        context: impl Fn(usize) -> RunContext,
    ) -> (ExperimentReport, Recipe) {
        let recipe = Recipe::parse("t.toml", recipe).unwrap();
        let metric = recipe.metrics()[0].name.clone();
        let runs = recipe
            .plan(3)
            .runs
            .iter()
            .map(|p| Run {
                seq: p.seq,
                cell: p.cell,
                round: p.round,
                warmup: p.warmup,
                traced: false,
                values: [(
                    metric.clone(),
                    value(p.cell) * (1.0 + p.round as f64 * 1e-3),
                )]
                .into(),
                series: vec![],
                error: None,
                context: Some(context(p.cell)),
            })
            .collect();
        let r = ExperimentReport::new(
            &recipe.name,
            recipe.metrics(),
            recipe.cells(),
            recipe.baselines(),
            runs,
            Config::default(),
        );
        (r, recipe)
    }

    #[test]
    fn at_the_rate_limit_the_link_not_the_cpu_is_named() {
        // Cells: irq-cpu 1G, irq-cpu unlimited, not-irq-cpu 1G, not-irq-cpu unlimited.
        let (r, recipe) = report(
            TCP,
            |c| match c {
                0 | 2 => 0.999e9,
                1 => 12e9,
                _ => 6e9,
            },
            |c| {
                let server = if c % 2 == 0 { 310_000_000 } else { 990_000_000 };
                ctx(vec![role(Role::Server, server, "0-1", 0)], 0)
            },
        );
        assert_eq!(r.cells[0].label, "affinity=irq-cpu, bitrate=1G");
        let a = answer(&r, &recipe.measures);
        let bound: Vec<&Answer> = a.iter().filter(|x| x.topic == "bound").collect();
        assert_eq!(bound.len(), 2, "{a:#?}");
        assert!(
            bound[0].text.contains("the link, not the CPU")
                && bound[0].text.contains("at most 0.31 CPUs"),
            "{}",
            bound[0].text
        );
        assert!(
            bound[1]
                .text
                .contains("2 of 2 cells were bound by the server's CPU"),
            "{}",
            bound[1].text
        );
        assert!(
            bound[1].basis.iter().all(|b| b.contains("NET_RX on CPU 0")),
            "{:?}",
            bound[1].basis
        );
        // The verdicts, and a quiet machine.
        assert!(a
            .iter()
            .any(|x| x.topic == "verdict" && x.text.starts_with("tcp.throughput: ")));
        let bg = a.iter().find(|x| x.topic == "background").unwrap();
        assert!(bg.text.starts_with("The machine was quiet"), "{}", bg.text);
    }

    #[test]
    fn a_pinned_pair_is_said_not_to_move() {
        let (r, recipe) = report(
            r#"
            name = "mc"
            rounds = 4
            warmup = 0
            [factors]
            affinity = ["unpinned", "sender:0 receiver:1"]
            [measure.mcast]
            [baseline]
            affinity = "sender:0 receiver:1"
            "#,
            |_| 300_000.0,
            |c| {
                let (allowed, moves) = if c == 0 { ("0-1", 12) } else { ("1", 0) };
                ctx(
                    vec![
                        role(Role::Sender, 900_000_000, allowed, moves),
                        role(Role::Receiver, 600_000_000, allowed, moves),
                    ],
                    0,
                )
            },
        );
        let a = answer(&r, &recipe.measures);
        let p = a.iter().find(|x| x.topic == "placement").unwrap();
        assert!(p.text.contains("affinity=unpinned: the receiver moved 12 times a run, shared a CPU with the sender 25%"), "{}", p.text);
        assert!(p.text.contains("affinity=sender:0 receiver:1: the receiver moved 0 times a run (pinned to one CPU)"), "{}", p.text);
    }

    #[test]
    fn steps_of_runs_that_could_not_migrate_are_not_blamed_on_migrations() {
        use crate::report::{Series, Warning};
        use crate::stats::steps::Step;
        let (mut r, recipe) = report(
            r#"
            name = "mc"
            rounds = 4
            warmup = 0
            [factors]
            affinity = ["sender:0 receiver:0", "sender:0 receiver:1"]
            [measure.mcast]
            "#,
            |_| 300_000.0,
            |c| {
                let cpu = if c == 0 { "0" } else { "1" };
                ctx(
                    vec![
                        role(Role::Sender, 900_000_000, "0", 0),
                        role(Role::Receiver, 600_000_000, cpu, 0),
                    ],
                    0,
                )
            },
        );
        let step = Step {
            t_ns: 2_000_000_000,
            before: 300_000.0,
            after: 260_000.0,
            change: -0.13,
            held_ns: 3_000_000_000,
            p: 0.001,
        };
        for run in r.runs.iter_mut().filter(|x| x.cell == 0).take(2) {
            run.series.push(Series {
                name: "mcast.received".into(),
                unit: "msg/s".into(),
                t_ns: vec![],
                values: vec![],
                steps: vec![step.clone()],
            });
        }
        r.warnings.push(Warning::Steps {
            series: "mcast.received".into(),
            cell: 0,
            runs: 2,
            of: 4,
        });
        let a = answer(&r, &recipe.measures);
        let s = a.iter().find(|x| x.topic == "steps").unwrap();
        assert!(
            s.text.contains(
                "in 2 of 4 runs: not migrations (every process under test was pinned to one CPU)"
            ),
            "{}",
            s.text
        );
    }

    /// A partitioned cell under load against the unpartitioned one: the answer weighs
    /// the load taken off the CPU against the exits from idle the CPU then pays, with
    /// its interrupts as the basis.
    #[test]
    fn a_partitioned_cell_weighs_the_load_taken_off_against_the_exits_from_idle() {
        const PARTITION: &str = r#"
            name = "p"
            rounds = 5
            [factors]
            partition = ["off", "on:1"]
            load = ["cpu:150"]
            [measure.latency]
            cpus = "1"
            [baseline]
            partition = "off"
        "#;
        let (r, recipe) = report(
            PARTITION,
            |_| 40_000.0,
            |c| {
                let mut x = ctx(vec![], 0);
                let probe = &mut x.cpus[1];
                (probe.busy_ns, probe.local_timer, probe.device_irqs) = if c == 0 {
                    (990_000_000, 10_441, 3)
                } else {
                    (0, 857, 2)
                };
                x
            },
        );
        let a = answer(&r, &recipe.measures);
        let l = a
            .iter()
            .find(|a| a.topic == "latency")
            .expect("a latency answer");
        assert_eq!(
            l.text,
            "partition=on:1: the average latency is not really different than partition=off's: \
             partitioning took the load off the CPU (busy 0% of the time against 99%), but the \
             CPU now idles between wake-ups and each wake-up pays the exit from idle, which the \
             load had kept it from; the two about cancel out."
        );
        assert_eq!(
            l.basis,
            vec!["local timer 857/s against 10441/s, device IRQs 2/s against 3/s".to_string()]
        );
        // A busy loop beside every partitioned run and none beside the baseline's: the
        // latency is not weighed, it cannot be judged.
        let (r, recipe) = report(
            PARTITION,
            |c| if c == 0 { 40_000.0 } else { 20_000.0 },
            |c| {
                let mut x = ctx(vec![], 0);
                if c == 1 {
                    x.foreign_ns = x.wall_ns;
                }
                x
            },
        );
        let a = answer(&r, &recipe.measures);
        let l = a
            .iter()
            .find(|a| a.topic == "latency")
            .expect("a latency answer");
        assert_eq!(
            l.text,
            "partition=on:1: the average latency cannot be judged against partition=off's: \
             their runs ran beside unequal foreign work (1.00 against 0.00 CPUs of other \
             processes)."
        );
        assert!(
            l.basis.iter().all(|b| b.ends_with("not called real")),
            "{:?}",
            l.basis
        );
    }

    #[test]
    fn wake_ups_from_idle_are_told_apart_and_inferred_chains_are_bounds() {
        use crate::explain::{ChainSummary, Explanation, ThreadPlacement};
        let (mut r, recipe) = report(TCP, |_| 1e9, |_| ctx(vec![], 0));
        r.explanations.push(Explanation {
            seq: 3,
            cell: 2,
            trace: None,
            duration_ns: 1_000_000_000,
            lost_events: 0,
            threads: vec![ThreadPlacement {
                role: Some(Role::Server),
                tid: 7,
                tgid: Some(7),
                comm: "iperf3".into(),
                run_ns: 1,
                cpus: vec![],
                migrations: 0,
                migrations_per_s: 0.0,
                wakeups: 900,
                wake_p50_ns: Some(3_000),
                wake_max_ns: Some(90_000),
                wakeups_inferred: 40,
                wake_idle_p50_ns: Some(45_000),
                wake_task_p50_ns: Some(2_000),
            }],
            chains: vec![ChainSummary {
                source: "softirq NET_RX".into(),
                tid: 7,
                comm: "iperf3".into(),
                count: 50,
                source_cpus: vec![0],
                p50_ns: Some(1_500),
                max_ns: Some(9_000),
                inferred: 50,
            }],
            around_steps: vec![],
            spikes: vec![],
        });
        let a = answer(&r, &recipe.measures);
        let w = a.iter().find(|x| x.topic == "wakeups").unwrap();
        assert!(
            w.text
                .contains("the server: 45.0 µs from idle, 2.0 µs on a busy CPU"),
            "{}",
            w.text
        );
        assert!(
            w.text.contains("softirq NET_RX -> iperf3: at most 1.5 µs (median), 50 of 50 switch-ins not recorded"),
            "{}",
            w.text
        );
        assert!(w.basis[0].contains("900 wake-ups, 40 of them with the switch-in inferred"));
    }

    #[test]
    fn the_side_that_bounded_the_multicast_rate_is_named() {
        // Cell 0: the sender uses a whole CPU and everything arrives; cell 1: 5 % lost.
        let (mut r, recipe) = report(
            r#"
            name = "mc"
            rounds = 4
            warmup = 0
            [factors]
            affinity = ["sender:0 receiver:1", "sender:0 receiver:0"]
            [measure.mcast]
            "#,
            |_| 300_000.0,
            |_| {
                ctx(
                    vec![
                        role(Role::Sender, 970_000_000, "0", 0),
                        role(Role::Receiver, 600_000_000, "1", 0),
                    ],
                    0,
                )
            },
        );
        for run in &mut r.runs {
            let received = run.values["mcast.received"];
            let sent = if run.cell == 0 {
                received
            } else {
                received / 0.95
            };
            run.values.insert("mcast.sent".into(), sent);
        }
        let a = answer(&r, &recipe.measures);
        let b = a.iter().find(|x| x.topic == "bound").unwrap();
        assert!(
            b.text.contains("affinity=sender:0 receiver:1: sent 300k msg/s, received 300k msg/s; the sender used 97% of a CPU, the receiver 60%: the sender (the generator) was the bound"),
            "{}",
            b.text
        );
        assert!(
            b.text.contains("affinity=sender:0 receiver:0: sent 316k msg/s, received 300k msg/s; the sender used 97% of a CPU, the receiver 60%: the receiver was the bound"),
            "{}",
            b.text
        );
    }
}
