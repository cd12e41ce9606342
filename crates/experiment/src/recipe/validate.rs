//! From TOML to a checked [`Recipe`], every error with its line and column.

use std::ops::Range;

use jitterlab_cpuset::CpuSet;
use jitterlab_units::{format_ns, parse_duration_ns};
use toml::Spanned;

use super::facts::HostFacts;
use super::levels::{Affinity, IrqLevel, Load, Partition, Placement, Role, SetupLevel};
use super::measure::{CommandMeasure, Extract, LatencyMeasure, McastMeasure, Measures, TcpMeasure};
use super::raw;
use super::Order;
use super::{BaselineLevel, Factor, FactorKind, Level, Recipe, RecipeError, Workload};
use crate::stats::Direction;

/// The file and its text, to turn spans into lines and columns.
struct Source<'a> {
    file: &'a str,
    text: &'a str,
    /// The machine the recipe is checked against, if any.
    machine: Option<&'a HostFacts>,
}

impl Source<'_> {
    fn err(&self, span: Range<usize>, message: impl Into<String>) -> RecipeError {
        let at = span.start.min(self.text.len());
        let before = self.text.get(..at).unwrap_or("");
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        RecipeError {
            file: self.file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    fn at<T>(&self, s: &Spanned<T>, message: impl Into<String>) -> RecipeError {
        self.err(s.span(), message)
    }

    /// An integer in `min ..= max`, or `default` when absent.
    fn int(
        &self,
        v: &Option<Spanned<i64>>,
        what: &str,
        min: i64,
        max: i64,
        default: i64,
    ) -> Result<i64, RecipeError> {
        match v {
            None => Ok(default),
            Some(s) if (min..=max).contains(s.get_ref()) => Ok(*s.get_ref()),
            Some(s) => Err(self.at(
                s,
                format!("{what} {}: expected {min} to {max}", s.get_ref()),
            )),
        }
    }

    /// A duration (`10s`, `100ms`) in `min ..= max` ns, or `default`.
    fn duration(
        &self,
        v: &Option<Spanned<String>>,
        what: &str,
        min: u64,
        max: u64,
        default: u64,
    ) -> Result<u64, RecipeError> {
        let Some(s) = v else { return Ok(default) };
        let ns = parse_duration_ns(s.get_ref()).map_err(|e| self.at(s, format!("{what}: {e}")))?;
        if !(min..=max).contains(&ns) {
            return Err(self.at(
                s,
                format!(
                    "{what} {:?}: expected {} to {}",
                    s.get_ref(),
                    format_ns(min),
                    format_ns(max)
                ),
            ));
        }
        Ok(ns)
    }

    fn cpus(&self, v: &Option<Spanned<String>>, what: &str) -> Result<Option<CpuSet>, RecipeError> {
        let Some(s) = v else { return Ok(None) };
        match CpuSet::parse_list(s.get_ref()) {
            Ok(set) if !set.is_empty() => {
                if let Some(m) = self.machine {
                    m.check_cpus(&set)
                        .map_err(|e| self.at(s, format!("{what} {:?}: {e}", s.get_ref())))?;
                }
                Ok(Some(set))
            }
            Ok(_) => Err(self.at(
                s,
                format!("{what}: expected a CPU list (1, 0-1), not an empty one"),
            )),
            Err(e) => Err(self.at(s, format!("{what}: {e}"))),
        }
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

pub(super) fn parse(
    file: &str,
    text: &str,
    machine: Option<&HostFacts>,
) -> Result<Recipe, RecipeError> {
    let src = Source {
        file,
        text,
        machine,
    };
    let r: raw::Recipe = toml::from_str(text).map_err(|e| {
        let message = (e.message().trim_end())
            .replace("expected i64", "expected an integer")
            .replace("expected f64", "expected a number");
        src.err(e.span().unwrap_or(0..0), message)
    })?;

    if !is_name(r.name.get_ref()) {
        return Err(src.at(&r.name, "name: expected letters, digits, '.', '_' or '-'"));
    }
    // A percentage ("2%") or a fraction (0.02) in [low, high).
    let fraction = |v: &Spanned<toml::Value>, what: &str, low: f64, high: f64| {
        let f = match v.get_ref() {
            toml::Value::Float(f) => Some(*f),
            toml::Value::String(s) => s
                .trim()
                .strip_suffix('%')
                .and_then(|p| p.trim().parse::<f64>().ok())
                .map(|p| p / 100.0),
            _ => None,
        };
        match f {
            Some(f) if (low..high).contains(&f) => Ok(f),
            _ => Err(src.at(
                v,
                format!(
                    "{what}: expected a percentage (\"2%\") or a fraction (0.02) below {}%",
                    high * 100.0
                ),
            )),
        }
    };
    let noise = match &r.noise {
        None => 0.02,
        Some(v) => fraction(v, "noise", 0.0, 0.5)?,
    };
    let precision = match &r.precision {
        None => None,
        Some(v) => {
            let p = fraction(v, "precision", 0.0001, 0.5)?;
            if r.order == Some(Order::Sequential) {
                return Err(src.at(
                    v,
                    "precision: stopping early needs rounds of every cell (order interleaved or abba)",
                ));
            }
            Some(p)
        }
    };

    let measures = measures(&src, &r.measure)?;
    let workload = r.workload.as_ref().map(|w| Workload {
        command: w.command.get_ref().clone(),
    });
    if let Some(w) = &r.workload {
        if w.command.get_ref().trim().is_empty() {
            return Err(src.at(&w.command, "workload command: expected a command line"));
        }
    }
    let factors = factors(&src, &r.factors, workload.is_some(), &measures)?;
    let mut recipe = Recipe {
        name: r.name.get_ref().clone(),
        description: r.description.clone().unwrap_or_default(),
        rounds: src.int(&r.rounds, "rounds", 2, 10_000, 15)? as u32,
        duration_ns: src.duration(
            &r.duration,
            "duration",
            1_000_000,
            86_400_000_000_000,
            10_000_000_000,
        )?,
        warmup: src.int(&r.warmup, "warmup", 0, 100, 1)? as u32,
        order: r.order.unwrap_or_default(),
        seed: match &r.seed {
            None => None,
            Some(_) => Some(src.int(&r.seed, "seed", 0, i64::MAX, 0)? as u64),
        },
        noise,
        precision,
        trace: r.trace.unwrap_or_default(),
        setup: r.setup.clone(),
        teardown: r.teardown.clone(),
        factors,
        workload,
        measures,
        baseline: Vec::new(),
    };
    recipe.baseline = match &r.baseline {
        Some(b) => baseline(&src, b, &recipe.factors)?,
        None => (recipe.factors.iter().enumerate())
            .map(|(factor, f)| BaselineLevel {
                factor,
                level: f.levels[0].clone(),
            })
            .collect(),
    };
    Ok(recipe)
}

fn measures(src: &Source, m: &raw::Measures) -> Result<Measures, RecipeError> {
    let mut out = Measures::default();
    if let Some(l) = &m.latency {
        out.latency = Some(LatencyMeasure {
            cpus: src.cpus(&l.cpus, "latency cpus")?,
            interval_ns: src.duration(
                &l.interval,
                "latency interval",
                10_000,
                1_000_000_000,
                1_000_000,
            )?,
            priority: src.int(&l.priority, "latency priority", 1, 99, 95)? as u8,
            break_ns: match &l.break_ {
                None => None,
                b => Some(src.duration(b, "latency break", 1_000, 10_000_000_000, 0)?),
            },
        });
    }
    let mut names: Vec<String> = Vec::new();
    for c in &m.command {
        let c_ref = c.get_ref();
        let name = c_ref.name.get_ref();
        if !is_name(name) {
            return Err(src.at(
                &c_ref.name,
                "command name: expected letters, digits, '.', '_' or '-'",
            ));
        }
        if names.contains(name)
            || ["latency.", "tcp.", "mcast."]
                .iter()
                .any(|p| name.starts_with(p))
        {
            return Err(src.at(
                &c_ref.name,
                format!("command name {name:?}: taken by another measure"),
            ));
        }
        names.push(name.clone());
        if c_ref.command.get_ref().trim().is_empty() {
            return Err(src.at(&c_ref.command, "command: expected a command line"));
        }
        let (extract, span) = match (&c_ref.json, &c_ref.regex) {
            (Some(j), None) => (Extract::Json(j.get_ref().clone()), j.span()),
            (None, Some(r)) => (Extract::Regex(r.get_ref().clone()), r.span()),
            _ => {
                return Err(src.at(
                    c,
                    format!("command {name:?}: expected one of json = \"a.b.c\" (a path into its JSON output) or regex = \"...(number)...\""),
                ))
            }
        };
        extract
            .check()
            .map_err(|e| src.err(span, format!("command {name:?}: {e}")))?;
        out.commands.push(CommandMeasure {
            name: name.clone(),
            command: c_ref.command.get_ref().clone(),
            extract,
            unit: c_ref.unit.clone(),
            direction: match c_ref.better {
                raw::Better::Higher => Direction::HigherIsBetter,
                raw::Better::Lower => Direction::LowerIsBetter,
            },
        });
    }
    if let Some(t) = &m.tcp {
        if let Some(b) = &t.bitrate {
            check_bitrate(b.get_ref()).map_err(|e| src.at(b, format!("tcp bitrate: {e}")))?;
        }
        out.tcp = Some(TcpMeasure {
            bitrate: (t.bitrate.as_ref())
                .map(|b| b.get_ref().trim().to_string())
                .filter(|b| b != "unlimited"),
            streams: src.int(&t.streams, "tcp streams", 1, 128, 1)? as u32,
            interval_ns: src.duration(
                &t.interval,
                "tcp interval",
                100_000_000,
                10_000_000_000,
                1_000_000_000,
            )?,
            server_cpus: src.cpus(&t.server_cpus, "tcp server_cpus")?,
            client_cpus: src.cpus(&t.client_cpus, "tcp client_cpus")?,
        });
    }
    if let Some(mc) = &m.mcast {
        out.mcast = Some(McastMeasure {
            payload: src.int(&mc.payload, "mcast payload", 16, 65_000, 64)? as u32,
            rate: match &mc.rate {
                None => None,
                r => Some(src.int(r, "mcast rate", 1, 100_000_000, 1)? as u64),
            },
            interval_ns: src.duration(
                &mc.interval,
                "mcast interval",
                1_000_000,
                10_000_000_000,
                100_000_000,
            )?,
            sender_cpus: src.cpus(&mc.sender_cpus, "mcast sender_cpus")?,
            receiver_cpus: src.cpus(&mc.receiver_cpus, "mcast receiver_cpus")?,
        });
    }
    if out.latency.is_none() && out.commands.is_empty() && out.tcp.is_none() && out.mcast.is_none()
    {
        return Err(src.err(
            0..0,
            "nothing to measure: expected [measure.latency], [[measure.command]], [measure.tcp] or [measure.mcast]",
        ));
    }
    Ok(out)
}

fn factors(
    src: &Source,
    f: &raw::Factors,
    workload: bool,
    m: &Measures,
) -> Result<Vec<Factor>, RecipeError> {
    let mut roles = Vec::new();
    if workload {
        roles.push(Role::Workload);
    }
    if m.tcp.is_some() {
        roles.extend([Role::Server, Role::Client]);
    }
    if m.mcast.is_some() {
        roles.extend([Role::Sender, Role::Receiver]);
    }
    // The main process: the workload, else the TCP server, else the receiver.
    let main = [Role::Workload, Role::Server, Role::Receiver]
        .into_iter()
        .find(|r| roles.contains(r));

    let mut out = Vec::new();
    let mut strings = |kind: FactorKind,
                       values: &raw::Strings,
                       parse: &dyn Fn(&str) -> Result<Level, String>|
     -> Result<(), RecipeError> {
        let Some(values) = values else { return Ok(()) };
        if values.get_ref().is_empty() {
            return Err(src.at(
                values,
                format!("{}: expected at least one level", kind.name()),
            ));
        }
        let mut levels: Vec<Level> = Vec::new();
        for v in values.get_ref() {
            let level =
                parse(v.get_ref()).map_err(|e| src.at(v, format!("{}: {e}", kind.name())))?;
            if levels.contains(&level) {
                return Err(src.at(v, format!("{}: level {level} given twice", kind.name())));
            }
            if let Some(m) = src.machine {
                m.check_level(&level)
                    .map_err(|e| src.at(v, format!("{} {level}: {e}", kind.name())))?;
            }
            levels.push(level);
        }
        out.push(Factor { kind, levels });
        Ok(())
    };
    if let Some(values) = &f.affinity {
        let Some(main) = main else {
            return Err(src.at(
                values,
                "affinity places a process under test: expected [workload], [measure.tcp] or [measure.mcast] in the recipe",
            ));
        };
        strings(FactorKind::Affinity, &f.affinity, &|s| {
            let a = Affinity::parse(s, main, &roles)?;
            check_irq_cpu(&a, m, src.machine)?;
            Ok(Level::Affinity(a))
        })?;
    }
    strings(FactorKind::Irq, &f.irq, &|s| {
        IrqLevel::parse(s).map(Level::Irq)
    })?;
    strings(FactorKind::Partition, &f.partition, &|s| {
        Partition::parse(s).map(Level::Partition)
    })?;
    if let Some(values) = &f.bitrate {
        if m.tcp.is_none() {
            return Err(src.at(
                values,
                "bitrate is measure.tcp's: expected [measure.tcp] in the recipe",
            ));
        }
        strings(FactorKind::Bitrate, &f.bitrate, &|s| {
            check_bitrate(s).map(|()| Level::Bitrate(s.trim().to_string()))
        })?;
    }
    strings(FactorKind::Load, &f.load, &|s| {
        Load::parse(s).map(Level::Load)
    })?;
    if let Some(setups) = &f.setup {
        let mut levels: Vec<Level> = Vec::new();
        for s in setups.get_ref() {
            let s = s.get_ref();
            let name = s.name.get_ref();
            if !is_name(name) {
                return Err(src.at(
                    &s.name,
                    "setup name: expected letters, digits, '.', '_' or '-'",
                ));
            }
            if levels.iter().any(|l| l.to_string() == *name) {
                return Err(src.at(&s.name, format!("setup: level {name} given twice")));
            }
            levels.push(Level::Setup(SetupLevel {
                name: name.clone(),
                setup: s.setup.clone(),
                teardown: s.teardown.clone(),
            }));
        }
        if levels.is_empty() {
            return Err(src.at(setups, "setup: expected at least one level"));
        }
        out.push(Factor {
            kind: FactorKind::Setup,
            levels,
        });
    }
    Ok(out)
}

/// `irq-cpu` and `not-irq-cpu` can be found: the role has a peer that raises its
/// softirq, and that peer is pinned (at the level, else by its measure's `*_cpus`); on
/// `machine`, `not-irq-cpu` leaves an online CPU.
fn check_irq_cpu(a: &Affinity, m: &Measures, machine: Option<&HostFacts>) -> Result<(), String> {
    for pin in &a.pins {
        let (role, placement) = (pin.role, &pin.placement);
        if !matches!(placement, Placement::IrqCpu | Placement::NotIrqCpu) {
            continue;
        }
        let peer = role.softirq_peer().ok_or_else(|| {
            format!(
                "{placement} for the {}: jitterlab finds the softirq CPU of the tcp server \
                 and the mcast receiver only",
                role.name()
            )
        })?;
        let peer_cpus = match a.pins.iter().find(|p| p.role == peer) {
            Some(p) => match &p.placement {
                Placement::Cpus(set) => Some(set.clone()),
                _ => None,
            },
            None => m.default_cpus(peer),
        };
        let Some(peer_cpus) = peer_cpus else {
            return Err(format!(
                "{placement} for the {}: the {} must be pinned (its softirq runs where it \
                 runs); set {}_cpus in the measure or place it at this level",
                role.name(),
                peer.name(),
                peer.name()
            ));
        };
        if let (Placement::NotIrqCpu, Some(machine)) = (placement, machine) {
            if machine.online.difference(&peer_cpus).is_empty() {
                return Err(format!(
                    "not-irq-cpu for the {}: no online CPU is left beside the {}'s {peer_cpus} \
                     (online: {})",
                    role.name(),
                    peer.name(),
                    machine.online
                ));
            }
        }
    }
    Ok(())
}

/// iperf3's `-b`: a number with an optional K, M or G (`1G`, `500M`), or
/// `unlimited`.
fn check_bitrate(s: &str) -> Result<(), String> {
    let s = s.trim();
    if s == "unlimited" {
        return Ok(());
    }
    let digits = s.trim_end_matches(['K', 'M', 'G', 'k', 'm', 'g']);
    if digits.is_empty() || digits.parse::<f64>().is_err() || s.len() - digits.len() > 1 {
        return Err(format!(
            "{s:?}: expected iperf3's -b form (1G, 500M) or unlimited"
        ));
    }
    Ok(())
}

/// The levels that `[baseline]` names, one per factor named.
fn baseline(
    src: &Source,
    b: &Spanned<std::collections::BTreeMap<String, Spanned<String>>>,
    factors: &[Factor],
) -> Result<Vec<BaselineLevel>, RecipeError> {
    if b.get_ref().is_empty() {
        return Err(src.at(
            b,
            "baseline: expected a level of at least one factor (affinity = \"unpinned\")",
        ));
    }
    let mut wanted = Vec::new();
    for (key, value) in b.get_ref() {
        let Some(fi) = factors.iter().position(|f| f.kind.name() == key) else {
            let names: Vec<&str> = factors.iter().map(|f| f.kind.name()).collect();
            return Err(src.at(
                value,
                format!(
                    "baseline: no factor {key:?} in this recipe (its factors: {})",
                    names.join(", ")
                ),
            ));
        };
        let factor = &factors[fi];
        let level = factor
            .levels
            .iter()
            .find(|l| same_level(l, value.get_ref()))
            .ok_or_else(|| {
                let levels: Vec<String> = factor.levels.iter().map(|l| l.to_string()).collect();
                src.at(
                    value,
                    format!(
                        "baseline: {key} = {:?} is not one of its levels ({})",
                        value.get_ref(),
                        levels.join(", ")
                    ),
                )
            })?;
        wanted.push(BaselineLevel {
            factor: fi,
            level: level.clone(),
        });
    }
    wanted.sort_by_key(|b| b.factor);
    Ok(wanted)
}

/// Whether `text` names `level` (parsed the way its factor's levels are).
fn same_level(level: &Level, text: &str) -> bool {
    match level {
        Level::Affinity(a) => {
            // A bare placement is the main process's, the level's first role.
            let main = a.pins.first().map_or(Role::Workload, |p| p.role);
            let all = [
                Role::Workload,
                Role::Server,
                Role::Client,
                Role::Sender,
                Role::Receiver,
            ];
            Affinity::parse(text, main, &all).is_ok_and(|b| b.pins == a.pins)
        }
        Level::Irq(i) => IrqLevel::parse(text).is_ok_and(|x| &x == i),
        Level::Partition(p) => Partition::parse(text).is_ok_and(|x| &x == p),
        Level::Bitrate(b) => b == text.trim(),
        Level::Load(l) => Load::parse(text).is_ok_and(|x| &x == l),
        Level::Setup(s) => s.name == text.trim(),
    }
}
