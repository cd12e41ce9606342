//! The levels of the factors: what one cell sets. Each parses from the string a
//! recipe gives and prints back as that string (the cells' labels use it).

use std::fmt;

use jitterlab_cpuset::CpuSet;
use serde::{Deserialize, Serialize};

/// Where a process is let run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "cpus", rename_all = "kebab-case")]
pub enum Placement {
    /// Left to the scheduler (every CPU it is allowed by default).
    Unpinned,
    /// Pinned, with all its threads, to these CPUs.
    Cpus(CpuSet),
    /// The CPU that handles its IRQ or network softirq (found by the runner).
    IrqCpu,
    /// Every online CPU but the one of `IrqCpu`.
    NotIrqCpu,
}

impl Placement {
    /// `unpinned`, `irq-cpu`, `not-irq-cpu`, or a CPU list (`1`, `0-1`).
    pub fn parse(s: &str) -> Result<Placement, String> {
        match s.trim() {
            "unpinned" => Ok(Placement::Unpinned),
            "irq-cpu" => Ok(Placement::IrqCpu),
            "not-irq-cpu" => Ok(Placement::NotIrqCpu),
            t => match CpuSet::parse_list(t) {
                Ok(set) if !set.is_empty() => Ok(Placement::Cpus(set)),
                _ => Err(format!(
                    "{s:?}: expected unpinned, irq-cpu, not-irq-cpu or a CPU list (1, 0-1)"
                )),
            },
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Placement::Unpinned => f.write_str("unpinned"),
            Placement::Cpus(set) => write!(f, "{set}"),
            Placement::IrqCpu => f.write_str("irq-cpu"),
            Placement::NotIrqCpu => f.write_str("not-irq-cpu"),
        }
    }
}

/// A process of the experiment that an affinity level can place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The `[workload]` command.
    Workload,
    /// The iperf3 server of `measure.tcp`.
    Server,
    /// The iperf3 client of `measure.tcp`.
    Client,
    /// The multicast sender of `measure.mcast`.
    Sender,
    /// The multicast receiver of `measure.mcast`.
    Receiver,
}

impl Role {
    /// The role's name in a recipe.
    pub fn name(self) -> &'static str {
        match self {
            Role::Workload => "workload",
            Role::Server => "server",
            Role::Client => "client",
            Role::Sender => "sender",
            Role::Receiver => "receiver",
        }
    }

    /// The peer whose network softirq wakes this role, whose CPU `irq-cpu` names: on
    /// veth and loopback the NET_RX softirq runs on the CPU of the sending task (raised
    /// by it, no hardirq), so the CPU that handles the tcp server's packets is the
    /// client's, the mcast receiver's the sender's. Other roles have none.
    pub fn softirq_peer(self) -> Option<Role> {
        match self {
            Role::Server => Some(Role::Client),
            Role::Receiver => Some(Role::Sender),
            _ => None,
        }
    }

    fn parse(s: &str) -> Option<Role> {
        [
            Role::Workload,
            Role::Server,
            Role::Client,
            Role::Sender,
            Role::Receiver,
        ]
        .into_iter()
        .find(|r| r.name() == s)
    }
}

/// One process's placement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pin {
    /// Which process.
    pub role: Role,
    /// Where it runs.
    pub placement: Placement,
}

/// A level of the `affinity` factor: the placement of one or more processes,
/// `1` (the recipe's main process on CPU 1) or `sender:0 receiver:1`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Affinity {
    /// The placements, one per role named, in the order given.
    pub pins: Vec<Pin>,
    /// Whether the level named no role (it placed the main process).
    #[serde(skip)]
    pub(crate) implicit: bool,
}

impl Affinity {
    /// Parses a level; a bare placement is `main`'s. `roles` are the roles the
    /// recipe has.
    pub(crate) fn parse(s: &str, main: Role, roles: &[Role]) -> Result<Affinity, String> {
        let words: Vec<&str> = s.split_whitespace().collect();
        if words.is_empty() {
            return Err("an empty affinity: expected unpinned, irq-cpu or a CPU list".into());
        }
        if words.len() == 1 && !words[0].contains(':') {
            return Ok(Affinity {
                pins: vec![Pin {
                    role: main,
                    placement: Placement::parse(words[0])?,
                }],
                implicit: true,
            });
        }
        let names: Vec<&str> = roles.iter().map(|r| r.name()).collect();
        let mut pins: Vec<Pin> = Vec::new();
        for word in words {
            let (role, place) = word.split_once(':').ok_or_else(|| {
                format!(
                    "{word:?}: expected ROLE:PLACEMENT (roles here: {})",
                    names.join(", ")
                )
            })?;
            let role = Role::parse(role)
                .filter(|r| roles.contains(r))
                .ok_or_else(|| {
                    format!("unknown role {role:?} (roles here: {})", names.join(", "))
                })?;
            if pins.iter().any(|p| p.role == role) {
                return Err(format!("role {:?} placed twice", role.name()));
            }
            pins.push(Pin {
                role,
                placement: Placement::parse(place)?,
            });
        }
        Ok(Affinity {
            pins,
            implicit: false,
        })
    }

    /// Where `role` runs at this level (unpinned when not named).
    pub fn placement(&self, role: Role) -> Placement {
        self.pins
            .iter()
            .find(|p| p.role == role)
            .map_or(Placement::Unpinned, |p| p.placement.clone())
    }
}

impl fmt::Display for Affinity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.implicit {
            if let [pin] = self.pins.as_slice() {
                return write!(f, "{}", pin.placement);
            }
        }
        for (i, pin) in self.pins.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            write!(f, "{sep}{}:{}", pin.role.name(), pin.placement)?;
        }
        Ok(())
    }
}

/// A level of the `irq` factor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum IrqLevel {
    /// IRQ affinities as they are.
    Unchanged,
    /// `SELECTOR=CPUS`: the IRQs that `jitterlab irq set` selects (a number or a
    /// glob over IRQ names) on these CPUs.
    Set {
        /// The IRQ number or name glob.
        selector: String,
        /// Their CPUs.
        cpus: CpuSet,
    },
}

impl IrqLevel {
    /// `unchanged` or `SELECTOR=CPUS` (`virtio1-input.0=1`, `36=0`).
    pub fn parse(s: &str) -> Result<IrqLevel, String> {
        let s = s.trim();
        if s == "unchanged" {
            return Ok(IrqLevel::Unchanged);
        }
        let expected =
            || format!("{s:?}: expected unchanged or IRQ=CPUS (virtio1-input.0=1, 36=0)");
        let (sel, cpus) = s.rsplit_once('=').ok_or_else(expected)?;
        let cpus = CpuSet::parse_list(cpus.trim()).map_err(|e| e.to_string())?;
        if sel.trim().is_empty() || cpus.is_empty() {
            return Err(expected());
        }
        let selector = IrqSelector::parse(sel.trim())?;
        Ok(IrqLevel::Set {
            selector: selector.to_string(),
            cpus,
        })
    }
}

/// What the left of an `irq` level's `=` names, as `jitterlab irq set` reads it: an
/// IRQ number, or else a glob over IRQ names and numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IrqSelector {
    /// The IRQ with this number.
    Number(u32),
    /// The IRQs whose number, label or an action's name the glob matches.
    Glob(glob::Pattern),
}

impl IrqSelector {
    /// A selector as `irq set` takes it; what no machine can have is an error: a
    /// negative or too large number, a glob that does not parse (`[`).
    pub fn parse(s: &str) -> Result<IrqSelector, String> {
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        if digits(s) {
            return s
                .parse()
                .map(IrqSelector::Number)
                .map_err(|_| format!("IRQ {s}: expected an IRQ number from 0 to {}", u32::MAX));
        }
        if s.strip_prefix('-').is_some_and(digits) {
            return Err(format!(
                "IRQ {s}: expected an IRQ number (0 or more) or a glob over IRQ names (virtio1-input.0, eth0-*)"
            ));
        }
        glob::Pattern::new(s)
            .map(IrqSelector::Glob)
            .map_err(|e| format!("{s:?} is neither an IRQ number nor a glob over IRQ names: {e}"))
    }

    /// Whether it names the IRQ numbered `irq` whose label and action names are `names`.
    pub fn matches(&self, irq: u32, names: &[String]) -> bool {
        match self {
            IrqSelector::Number(n) => *n == irq,
            IrqSelector::Glob(p) => {
                p.matches(&irq.to_string()) || names.iter().any(|n| p.matches(n))
            }
        }
    }
}

impl fmt::Display for IrqSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IrqSelector::Number(n) => write!(f, "{n}"),
            IrqSelector::Glob(p) => f.write_str(p.as_str()),
        }
    }
}

impl fmt::Display for IrqLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IrqLevel::Unchanged => f.write_str("unchanged"),
            IrqLevel::Set { selector, cpus } => write!(f, "{selector}={cpus}"),
        }
    }
}

/// A level of the `partition` factor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "cpus", rename_all = "snake_case")]
pub enum Partition {
    /// No partition.
    Off,
    /// `jitterlab isolate CPUS` for the cell's runs, reverted after.
    On(CpuSet),
}

impl Partition {
    /// `off` or `on:CPUS` (`on:1`).
    pub fn parse(s: &str) -> Result<Partition, String> {
        let s = s.trim();
        if s == "off" {
            return Ok(Partition::Off);
        }
        match s.strip_prefix("on:").map(|c| CpuSet::parse_list(c.trim())) {
            Some(Ok(set)) if !set.is_empty() => Ok(Partition::On(set)),
            Some(Err(e)) => Err(e.to_string()),
            _ => Err(format!("{s:?}: expected off or on:CPUS (on:1, on:2-3)")),
        }
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Partition::Off => f.write_str("off"),
            Partition::On(set) => write!(f, "on:{set}"),
        }
    }
}

/// A level of the `load` factor: the forms of `jitterlab latency --load`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "arg", rename_all = "snake_case")]
pub enum Load {
    /// No load.
    None,
    /// `cpu:N`: N threads looping `usleep(1)`.
    Cpu(usize),
    /// `io:N`: N threads writing 4 KiB with O_SYNC.
    Io(usize),
    /// `mem:N`: N threads streaming memory.
    Mem(usize),
    /// `cmd:COMMAND`: an external load, run by `sh -c`.
    Cmd(String),
}

impl Load {
    /// `none`, `cpu:N`, `io:N`, `mem:N` (N from 1 to 10000) or `cmd:COMMAND`.
    pub fn parse(s: &str) -> Result<Load, String> {
        let t = s.trim();
        if t == "none" {
            return Ok(Load::None);
        }
        let (kind, arg) = t
            .split_once(':')
            .ok_or_else(|| format!("{s:?}: expected none, cpu:N, io:N, mem:N or cmd:COMMAND"))?;
        let count = || match arg.parse::<usize>() {
            Ok(n) if (1..=10_000).contains(&n) => Ok(n),
            _ => Err(format!(
                "{s:?}: expected a thread count from 1 to 10000 after '{kind}:'"
            )),
        };
        match kind {
            "cpu" => Ok(Load::Cpu(count()?)),
            "io" => Ok(Load::Io(count()?)),
            "mem" => Ok(Load::Mem(count()?)),
            "cmd" if !arg.trim().is_empty() => Ok(Load::Cmd(arg.trim().to_string())),
            "cmd" => Err(format!("{s:?}: expected a command after 'cmd:'")),
            _ => Err(format!(
                "{s:?}: unknown load {kind:?} (none, cpu, io, mem, cmd)"
            )),
        }
    }
}

impl fmt::Display for Load {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Load::None => f.write_str("none"),
            Load::Cpu(n) => write!(f, "cpu:{n}"),
            Load::Io(n) => write!(f, "io:{n}"),
            Load::Mem(n) => write!(f, "mem:{n}"),
            Load::Cmd(c) => write!(f, "cmd:{c}"),
        }
    }
}

/// A level of the `setup` factor: free commands run before and after the cell's
/// runs (`sh -c`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SetupLevel {
    /// The level's name, in labels.
    pub name: String,
    /// Run before each of the cell's runs.
    pub setup: Option<String>,
    /// Run after each of the cell's runs, also when it failed.
    pub teardown: Option<String>,
}

impl fmt::Display for SetupLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_print_as_parsed() {
        let roles = [Role::Sender, Role::Receiver];
        for s in ["1", "0-1", "unpinned", "irq-cpu", "sender:0 receiver:1"] {
            assert_eq!(
                Affinity::parse(s, Role::Receiver, &roles)
                    .unwrap()
                    .to_string(),
                s
            );
        }
        let a = Affinity::parse("sender:0 receiver:1", Role::Receiver, &roles).unwrap();
        assert_eq!(
            a.placement(Role::Sender),
            Placement::Cpus(CpuSet::first_n(1))
        );
        assert!(Affinity::parse("server:1", Role::Receiver, &roles)
            .unwrap_err()
            .contains("unknown role \"server\""));
        for s in ["unchanged", "virtio1-input.0=1", "36=0-1"] {
            assert_eq!(IrqLevel::parse(s).unwrap().to_string(), s);
        }
        for s in ["off", "on:1", "on:2-3"] {
            assert_eq!(Partition::parse(s).unwrap().to_string(), s);
        }
        for s in ["none", "cpu:150", "io:2", "mem:1", "cmd:stress-ng --cpu 2"] {
            assert_eq!(Load::parse(s).unwrap().to_string(), s);
        }
        // IRQ selectors as `irq set` reads them: what no machine has is refused.
        for (s, e) in [
            (
                "[=0",
                "\"[\" is neither an IRQ number nor a glob over IRQ names",
            ),
            ("-1=0", "IRQ -1: expected an IRQ number (0 or more)"),
            (
                "4294967296=0",
                "IRQ 4294967296: expected an IRQ number from 0 to 4294967295",
            ),
        ] {
            let err = IrqLevel::parse(s).unwrap_err();
            assert!(err.starts_with(e), "{s}: {err}");
        }
        assert_eq!(IrqLevel::parse("036=1").unwrap().to_string(), "36=1");
        assert!(Load::parse("cpu:0").is_err());
        assert!(Partition::parse("on:").is_err());
        assert!(Placement::parse("x").is_err());
    }
}
