//! Recipes: parsing, errors with their line and column, checks against a machine,
//! cells, baselines, plans, and the built-in recipes.

use std::collections::BTreeSet;

use jitterlab_cpuset::CpuSet;
use jitterlab_experiment::recipe::{
    builtin, builtins, Extract, HostFacts, IrqFacts, IrqLevel, IrqSelector, Load, Order, Partition,
    Placement, Role, Trace,
};
use jitterlab_experiment::stats::Direction;
use jitterlab_experiment::{Recipe, RecipeError};

const FULL: &str = r#"
name = "full"
description = "every knob"
rounds = 4
duration = "2s"
warmup = 2
order = "abba"
seed = 7
noise = 0.05
trace = "all"
setup = "echo start"
teardown = "echo end"

[factors]
load = ["none", "cpu:2", "cmd:stress-ng --cpu 2"]
affinity = ["unpinned", "1", "0-1"]
partition = ["off", "on:1"]
irq = ["unchanged", "virtio1-input.0=0"]

[[factors.setup]]
name = "rps-off"
setup = "echo 0 > /tmp/x"

[workload]
command = "iperf3 -s"

[measure.latency]
cpus = "1"
interval = "500us"
priority = 90
break = "300us"

[[measure.command]]
name = "throughput"
command = "iperf3 -c 127.0.0.1 -t {duration} -J"
json = "end.sum_received.bits_per_second"
unit = "bit/s"
better = "higher"

[baseline]
affinity = "unpinned"
"#;

#[test]
fn a_full_recipe() {
    let r = Recipe::parse("full.toml", FULL).unwrap();
    assert_eq!((r.rounds, r.duration_ns, r.warmup), (4, 2_000_000_000, 2));
    assert_eq!(
        (r.order, r.seed, r.trace),
        (Order::Abba, Some(7), Trace::All)
    );
    assert_eq!(r.noise, 0.05);
    // Factors in the fixed order, whatever the file's.
    let kinds: Vec<&str> = r.factors.iter().map(|f| f.kind.name()).collect();
    assert_eq!(kinds, ["affinity", "irq", "partition", "load", "setup"]);
    let lat = r.measures.latency.as_ref().unwrap();
    assert_eq!(
        (lat.interval_ns, lat.priority, lat.break_ns),
        (500_000, 90, Some(300_000))
    );
    let cmd = &r.measures.commands[0];
    assert_eq!(
        cmd.extract,
        Extract::Json("end.sum_received.bits_per_second".into())
    );
    assert_eq!(cmd.direction, Direction::HigherIsBetter);
    let metrics: Vec<String> = r.metrics().into_iter().map(|m| m.name).collect();
    assert_eq!(
        metrics,
        [
            "latency.min",
            "latency.avg",
            "latency.p50",
            "latency.p99",
            "latency.p99.9",
            "latency.max",
            "latency.missed",
            "throughput"
        ]
    );

    // 3 x 2 x 2 x 3 x 1 cells, the last factor changing fastest; the label names
    // the factors that vary.
    let cells = r.cells();
    assert_eq!(cells.len(), 36);
    assert_eq!(
        cells[0].label,
        "affinity=unpinned, irq=unchanged, partition=off, load=none"
    );
    assert_eq!(
        cells[1].label,
        "affinity=unpinned, irq=unchanged, partition=off, load=cpu:2"
    );
    assert_eq!(
        cells[35].label,
        "affinity=0-1, irq=virtio1-input.0=0, partition=on:1, load=cmd:stress-ng --cpu 2"
    );
    // Every level, the one-level factor's too, as the label words it.
    assert_eq!(
        cells[35].level_labels,
        [
            "affinity=0-1",
            "irq=virtio1-input.0=0",
            "partition=on:1",
            "load=cmd:stress-ng --cpu 2",
            "setup=rps-off"
        ]
    );
    let s = &cells[35].settings;
    assert_eq!(s.partition, Partition::parse("on:1").unwrap());
    assert_eq!(s.load, Load::Cmd("stress-ng --cpu 2".into()));
    assert_eq!(s.setup.as_ref().unwrap().name, "rps-off");
    let a = s.affinity.as_ref().unwrap();
    assert_eq!(
        a.placement(Role::Workload),
        Placement::Cpus(CpuSet::parse_list("0-1").unwrap())
    );

    // Baseline affinity=unpinned: each cell against the unpinned cell with its
    // other levels; the unpinned cells are their own.
    let b = r.baselines();
    assert_eq!(b[0], 0);
    assert_eq!(b[12], 0); // affinity=1, the rest as cell 0
    assert_eq!(b[35], 11);
    assert_eq!((0..12).filter(|&c| b[c] == c).count(), 12);

    // The recipe and its cells serialize (for --json and the saved results).
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["factors"][2]["levels"][1]["partition"]["cpus"], "1");
    let cell = serde_json::to_value(&cells[35]).unwrap();
    assert_eq!(
        cell["settings"]["load"],
        serde_json::json!({"kind": "cmd", "arg": "stress-ng --cpu 2"})
    );
    assert_eq!(
        cell["settings"]["affinity"]["pins"][0]["placement"],
        serde_json::json!({"kind": "cpus", "cpus": "0-1"})
    );
}

#[test]
fn defaults_and_one_cell() {
    let r = Recipe::parse("min.toml", "name = \"min\"\n[measure.latency]\n").unwrap();
    assert_eq!((r.rounds, r.duration_ns, r.warmup), (15, 10_000_000_000, 1));
    assert_eq!(
        (r.order, r.trace, r.noise),
        (Order::Interleaved, Trace::First, 0.02)
    );
    let cells = r.cells();
    assert_eq!(cells.len(), 1);
    assert_eq!(cells[0].label, "default");
    assert_eq!(r.baselines(), [0]);
    // A factor with one level is named in the label when nothing varies.
    let r = Recipe::parse(
        "one.toml",
        "name = \"one\"\n[factors]\nload = [\"io:4\"]\n[measure.latency]\n",
    )
    .unwrap();
    assert_eq!(r.cells()[0].label, "load=io:4");
}

#[test]
fn plans_are_seeded_and_complete() {
    let text = FULL.replace("order = \"abba\"", "order = \"interleaved\"");
    let r = Recipe::parse("full.toml", &text).unwrap();
    let cells = r.cells().len();
    let plan = r.plan(11);
    assert_eq!(plan, r.plan(11));
    assert_ne!(plan.runs, r.plan(12).runs);
    assert_eq!(plan.runs.len(), cells * (2 + 4));
    // Warm-up rounds first; every round runs each cell once.
    let (warm, measured): (Vec<_>, Vec<_>) = plan.runs.iter().partition(|p| p.warmup);
    assert_eq!(warm.len(), 2 * cells);
    assert!(plan.runs[..2 * cells].iter().all(|p| p.warmup));
    for round in 0..4 {
        let cells_of_round: BTreeSet<usize> = measured
            .iter()
            .filter(|p| p.round == round)
            .map(|p| p.cell)
            .collect();
        assert_eq!(cells_of_round.len(), cells);
    }
    // Each round its own order.
    let order = |round: u32| -> Vec<usize> {
        measured
            .iter()
            .filter(|p| p.round == round)
            .map(|p| p.cell)
            .collect()
    };
    assert_ne!(order(0), order(1));
    assert!(plan.runs.iter().enumerate().all(|(i, p)| p.seq == i));
    // trace = "all": every measured run, no warm-up run.
    assert!(plan.runs.iter().all(|p| p.trace != p.warmup));
}

#[test]
fn abba_and_sequential_orders() {
    let text = |order: &str| {
        format!(
            "name = \"x\"\nrounds = 4\nwarmup = 1\norder = \"{order}\"\n\
             [factors]\nload = [\"none\", \"cpu:1\"]\n[measure.latency]\n"
        )
    };
    let cells = |order: &str| -> Vec<(usize, bool, bool)> {
        let r = Recipe::parse("x.toml", &text(order)).unwrap();
        r.plan(1)
            .runs
            .iter()
            .map(|p| (p.cell, p.warmup, p.trace))
            .collect()
    };
    let abba: Vec<usize> = cells("abba").iter().map(|c| c.0).collect();
    assert_eq!(abba, [0, 1, 0, 1, 1, 0, 0, 1, 1, 0]);
    let seq = cells("sequential");
    assert_eq!(
        seq.iter().map(|c| c.0).collect::<Vec<_>>(),
        [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    );
    // trace = "first" (the default): the first measured run of each cell.
    assert_eq!(
        seq.iter().map(|c| (c.1, c.2)).collect::<Vec<_>>()[..3],
        [(true, false), (false, true), (false, false)]
    );
}

/// Where an error points, as "LINE:COLUMN", and its message.
fn error(text: &str) -> (String, String) {
    let e: RecipeError = Recipe::parse("bad.toml", text).unwrap_err();
    assert_eq!(e.file, "bad.toml");
    assert!(e
        .to_string()
        .starts_with(&format!("bad.toml:{}:{}: ", e.line, e.column)));
    (format!("{}:{}", e.line, e.column), e.message)
}

#[test]
fn errors_name_line_and_column() {
    let base = "name = \"x\"\n[measure.latency]\n";
    // TOML syntax.
    let (at, msg) = error("name = \"x\"\nrounds = = 3\n");
    assert_eq!(at, "2:10", "{msg}");
    // Unknown key.
    let (at, msg) = error(&format!("{base}colour = \"red\"\n"));
    assert_eq!(at, "3:1", "{msg}");
    assert!(msg.contains("unknown field `colour`"), "{msg}");
    // Wrong type.
    let (at, msg) = error("name = \"x\"\nrounds = \"ten\"\n[measure.latency]\n");
    assert_eq!(at, "2:10", "{msg}");
    // Out of range.
    let (at, msg) = error("name = \"x\"\nrounds = 1\n[measure.latency]\n");
    assert_eq!(
        (at.as_str(), msg.as_str()),
        ("2:10", "rounds 1: expected 2 to 10000")
    );
    // A bad level, pointed at in its array.
    let (at, msg) = error(&format!(
        "{base}[factors]\nload = [\"none\", \"cpu:2\", \"gpu:3\"]\n"
    ));
    assert_eq!(at, "4:26", "{msg}");
    assert!(msg.contains("unknown load \"gpu\""), "{msg}");
    let (at, msg) = error(&format!("{base}[factors]\npartition = [\"off\", \"on\"]\n"));
    assert_eq!(at, "4:21");
    assert!(msg.contains("expected off or on:CPUS"), "{msg}");
    let (at, msg) = error(&format!("{base}[factors]\nload = [\"cpu:2\", \"cpu:2\"]\n"));
    assert_eq!(
        (at.as_str(), msg.as_str()),
        ("4:18", "load: level cpu:2 given twice")
    );
    // Durations.
    let (at, msg) = error("name = \"x\"\nduration = \"10\"\n[measure.latency]\n");
    assert_eq!(at, "2:12");
    assert!(
        msg.contains("give a unit (ns, us, ms, s, m, h), e.g. 10us or 10s"),
        "{msg}"
    );
    // Nothing to measure.
    let (at, msg) = error("name = \"x\"\n");
    assert_eq!(at, "1:1");
    assert!(msg.starts_with("nothing to measure"), "{msg}");
    // Affinity without a process to place.
    let (at, msg) = error(&format!("{base}[factors]\naffinity = [\"0\", \"1\"]\n"));
    assert_eq!(at, "4:12");
    assert!(msg.contains("expected [workload]"), "{msg}");
    // A role the recipe does not have.
    let (at, msg) =
        error("name = \"x\"\n[measure.tcp]\n[factors]\naffinity = [\"unpinned\", \"sender:0\"]\n");
    assert_eq!(at, "4:25");
    assert!(
        msg.contains("unknown role \"sender\" (roles here: server, client)"),
        "{msg}"
    );
    // A command measure with neither json nor regex, and a regex without a group.
    let cmd = "name = \"x\"\n[[measure.command]]\nname = \"t\"\ncommand = \"x\"\nunit = \"u\"\nbetter = \"higher\"\n";
    let (at, msg) = error(cmd);
    assert_eq!(at, "2:1", "{msg}"); // the table's header
    assert!(msg.contains("expected one of json"), "{msg}");
    let (at, msg) = error(&format!("{cmd}regex = \"[0-9]+\"\n"));
    assert_eq!(at, "7:9");
    assert!(msg.contains("exactly one capture group"), "{msg}");
    let (at, msg) = error(&cmd.replace("\"higher\"", "\"faster\""));
    assert_eq!(at, "6:10", "{msg}");
    assert!(msg.contains("unknown variant `faster`"), "{msg}");
    // Baselines.
    let (at, msg) = error(&format!(
        "{base}[factors]\nload = [\"none\", \"cpu:2\"]\n[baseline]\nload = \"cpu:3\"\n"
    ));
    assert_eq!(at, "6:8");
    assert!(
        msg.contains("is not one of its levels (none, cpu:2)"),
        "{msg}"
    );
    let (at, msg) = error(&format!(
        "{base}[factors]\nload = [\"none\", \"cpu:2\"]\n[baseline]\npartition = \"off\"\n"
    ));
    assert_eq!(at, "6:13");
    assert!(msg.contains("no factor \"partition\""), "{msg}");
    // Columns count characters, not bytes.
    let (at, _) = error("name = \"x\"\n[measure.latency]\n# é\n[factors]\nload = [\"µ\"]\n");
    assert_eq!(at, "5:9");
}

#[test]
fn builtins_parse_and_reproduce_the_seeds() {
    let names: Vec<&str> = builtins().iter().map(|b| b.name).collect();
    assert_eq!(
        names,
        ["tcp-affinity", "mcast-pinning", "partition", "latency-hunt"]
    );
    for b in builtins() {
        let r = b.recipe().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.name, b.name);
        assert!(!r.description.is_empty());
        assert!(
            b.text.starts_with('#'),
            "{}: opens with what it asks",
            b.name
        );
    }
    assert!(builtin("nope").is_none());

    let tcp = builtin("tcp-affinity").unwrap().recipe().unwrap();
    assert_eq!(tcp.cells().len(), 12);
    assert_eq!(tcp.metrics()[0].name, "tcp.throughput");
    let b = tcp.baselines();
    let cells = tcp.cells();
    // not-irq-cpu, unlimited, under load: against irq-cpu, unlimited, under load.
    let c = cells
        .iter()
        .find(|c| {
            c.label == "affinity=not-irq-cpu, bitrate=unlimited, load=cmd:stress-ng --cpu 2 --quiet"
        })
        .unwrap();
    assert_eq!(
        cells[b[c.index]].label,
        "affinity=irq-cpu, bitrate=unlimited, load=cmd:stress-ng --cpu 2 --quiet"
    );

    let mcast = builtin("mcast-pinning").unwrap().recipe().unwrap();
    let labels: Vec<String> = mcast.cells().into_iter().map(|c| c.label).collect();
    assert_eq!(
        labels,
        [
            "affinity=unpinned",
            "affinity=sender:0 receiver:1",
            "affinity=sender:0 receiver:0"
        ]
    );
    // Against the pair pinned apart.
    assert_eq!(mcast.baselines(), [1, 1, 1]);

    let part = builtin("partition").unwrap().recipe().unwrap();
    let cells = part.cells();
    let b = part.baselines();
    let on_cpu = cells
        .iter()
        .find(|c| c.label == "partition=on:1, load=cpu:150")
        .unwrap();
    assert_eq!(cells[b[on_cpu.index]].label, "partition=off, load=cpu:150");

    let hunt = builtin("latency-hunt").unwrap().recipe().unwrap();
    assert_eq!(hunt.cells().len(), 1);
    assert_eq!(hunt.trace, Trace::All);
    assert!(hunt.measures.latency.as_ref().unwrap().break_ns.is_some());
}

#[test]
fn precision_is_a_percentage_of_interleaved_rounds() {
    let base = "name = \"x\"\n[measure.latency]\n";
    let r = Recipe::parse("p.toml", &format!("precision = \"3%\"\n{base}")).unwrap();
    assert_eq!(r.precision, Some(0.03));
    assert_eq!(Recipe::parse("p.toml", base).unwrap().precision, None);
    let (at, msg) = error(&format!("precision = \"60%\"\n{base}"));
    assert_eq!(at, "1:13", "{msg}");
    assert!(msg.contains("below 50%"), "{msg}");
    let (at, msg) = error(&format!("order = \"sequential\"\nprecision = 0.05\n{base}"));
    assert_eq!(at, "2:13", "{msg}");
    assert!(msg.contains("interleaved or abba"), "{msg}");
}

/// A made-up 2-CPU machine with three IRQs of the CI VM.
fn two_cpus() -> HostFacts {
    HostFacts {
        online: CpuSet::parse_list("0-1").unwrap(),
        irqs: [
            (36, "virtio1-req.0"),
            (38, "virtio2-input.0"),
            (42, "virtio3-tx"),
        ]
        .map(|(irq, name)| IrqFacts {
            irq,
            names: vec![name.to_string()],
        })
        .into(),
    }
}

/// Where `Recipe::parse_on` against `machine` points, as "LINE:COLUMN", and its message.
fn refused_on(machine: &HostFacts, text: &str) -> (String, String) {
    let e: RecipeError = Recipe::parse_on("bad.toml", text, machine).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("bad.toml:{}:{}: ", e.line, e.column)),
        "{e}"
    );
    (format!("{}:{}", e.line, e.column), e.message)
}

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// IRQ selectors no machine has are syntax errors, found without a machine.
#[test]
fn irq_selectors_are_checked_without_a_machine() {
    // The reproducer: its first level's glob does not parse.
    let (at, msg) = error(&fixture("bad-irq-partition.toml"));
    assert_eq!(at, "5:8", "{msg}");
    assert!(
        msg.starts_with("irq: \"[\" is neither an IRQ number nor a glob over IRQ names:"),
        "{msg}"
    );
    let base = "name = \"x\"\n[measure.latency]\n[factors]\n";
    let (at, msg) = error(&format!("{base}irq = [\"unchanged\", \"-1=0\"]\n"));
    assert_eq!(at, "4:21", "{msg}");
    assert!(
        msg.starts_with("irq: IRQ -1: expected an IRQ number (0 or more)"),
        "{msg}"
    );
    let (at, msg) = error(&format!("{base}irq = [\"4294967296=0\"]\n"));
    assert_eq!(at, "4:8", "{msg}");
    assert!(
        msg.contains("expected an IRQ number from 0 to 4294967295"),
        "{msg}"
    );
    // Numbers and globs as `irq set` reads them.
    assert_eq!(IrqSelector::parse("36"), Ok(IrqSelector::Number(36)));
    assert!(matches!(
        IrqSelector::parse("virtio*-input.0"),
        Ok(IrqSelector::Glob(_))
    ));
    let names = ["virtio2-input.0".to_string()];
    let sel = |s: &str| IrqSelector::parse(s).unwrap();
    assert!(sel("virtio*-input.0").matches(38, &names));
    assert!(sel("3?").matches(38, &names), "a glob over numbers too");
    assert!(!sel("eth*").matches(38, &names));
    assert!(!sel("37").matches(38, &names));
    // Without a machine, what the machine lacks is not known.
    let r = Recipe::parse(
        "ok.toml",
        &format!("{base}irq = [\"999=7\"]\npartition = [\"on:99\"]\n"),
    )
    .unwrap();
    assert_eq!(r.factors[0].levels.len(), 1);
}

/// Every CPU and IRQ a recipe names is checked against the machine before anything
/// runs: each error points at the value and says what the machine has.
#[test]
fn recipes_are_checked_against_the_machine() {
    let m = two_cpus();
    // The reproducers.
    let bad = fixture("bad-irq-partition.toml").replace("irq = [\"[=0\", \"-1=0\"]\n", "");
    let (at, msg) = refused_on(&m, &bad);
    assert_eq!(
        (at.as_str(), msg.as_str()),
        (
            "5:14",
            "partition on:99: CPU 99 is not online (online: 0-1)"
        )
    );
    let (at, msg) = refused_on(&m, &bad.replace("\"on:99\", ", ""));
    assert_eq!(
        (at.as_str(), msg.as_str()),
        (
            "5:14",
            "partition on:0-1: no CPU is left for housekeeping (online: 0-1); isolate fewer CPUs"
        )
    );
    let (at, msg) = refused_on(&m, &fixture("latency-cpus-99.toml"));
    assert_eq!(
        (at.as_str(), msg.as_str()),
        (
            "17:8",
            "latency cpus \"99\": CPU 99 is not online (online: 0-1)"
        )
    );
    // IRQs: a number, a glob, the CPUs.
    let base = "name = \"x\"\n[measure.latency]\n[factors]\n";
    let irq = |level: &str| refused_on(&m, &format!("{base}irq = [\"unchanged\", \"{level}\"]\n"));
    let (at, msg) = irq("999=0");
    assert_eq!(at, "4:21");
    assert_eq!(
        msg,
        "irq 999=0: no IRQ 999 on this machine (jitterlab show irqs lists them)"
    );
    let (_, msg) = irq("eth0-*=0");
    assert_eq!(
        msg,
        "irq eth0-*=0: no IRQ of this machine is named \"eth0-*\" (jitterlab show irqs lists them)"
    );
    let (_, msg) = irq("virtio2-input.0=2-3");
    assert_eq!(
        msg,
        "irq virtio2-input.0=2-3: CPU 2-3 is not online (online: 0-1)"
    );
    // Affinity levels: the main process, and a process by its role.
    let (at, msg) = refused_on(
        &m,
        "name = \"x\"\n[workload]\ncommand = \"w\"\n[measure.latency]\n[factors]\naffinity = [\"0\", \"3\"]\n",
    );
    assert_eq!(
        (at.as_str(), msg.as_str()),
        ("6:18", "affinity 3: CPU 3 is not online (online: 0-1)")
    );
    let (_, msg) = refused_on(
        &m,
        "name = \"x\"\n[measure.mcast]\n[factors]\naffinity = [\"sender:0 receiver:1-2\"]\n",
    );
    assert_eq!(
        msg,
        "affinity sender:0 receiver:1-2: the receiver: CPU 2 is not online (online: 0-1)"
    );
    // The measures' CPUs.
    for (table, key) in [
        ("tcp", "server_cpus"),
        ("tcp", "client_cpus"),
        ("mcast", "sender_cpus"),
        ("mcast", "receiver_cpus"),
    ] {
        let (at, msg) = refused_on(
            &m,
            &format!("name = \"x\"\n[measure.{table}]\n{key} = \"1,4\"\n"),
        );
        assert_eq!(at, format!("3:{}", key.len() + 4), "{msg}");
        assert_eq!(
            msg,
            format!("{table} {key} \"1,4\": CPU 4 is not online (online: 0-1)")
        );
    }
    // What the machine has passes, the built-in recipes too.
    let ok = format!(
        "{base}irq = [\"unchanged\", \"36=0\", \"virtio3-*=1\", \"3?=0-1\"]\npartition = [\"off\", \"on:1\"]\n"
    );
    let r = Recipe::parse_on("ok.toml", &ok, &m).unwrap();
    assert_eq!(r.factors[0].levels.len(), 4);
    assert!(matches!(
        &r.factors[0].levels[1],
        jitterlab_experiment::recipe::Level::Irq(IrqLevel::Set { .. })
    ));
    for b in builtins() {
        Recipe::parse_on(b.name, b.text, &m).unwrap_or_else(|e| panic!("{e}"));
    }
    // On one CPU, the partition recipe cannot run.
    let one = HostFacts {
        online: CpuSet::parse_list("0").unwrap(),
        ..two_cpus()
    };
    let e = Recipe::parse_on("partition", builtin("partition").unwrap().text, &one).unwrap_err();
    assert_eq!(
        e.message,
        "latency cpus \"1\": CPU 1 is not online (online: 0)"
    );
    assert_eq!(
        Partition::parse("on:1"),
        Ok(Partition::On(CpuSet::parse_list("1").unwrap()))
    );
}

/// `irq-cpu` and `not-irq-cpu` name the CPU of the peer whose softirq wakes the process:
/// a role without such a peer, or a peer left unpinned, is a recipe error; on a machine,
/// `not-irq-cpu` must leave a CPU.
#[test]
fn irq_cpu_needs_a_pinned_peer() {
    let tcp = |level: &str, client: &str| {
        format!("name = \"x\"\n[factors]\naffinity = [\"unpinned\", \"{level}\"]\n[measure.tcp]\n{client}")
    };
    let (at, msg) = error(&tcp("irq-cpu", ""));
    assert_eq!(at, "3:25", "{msg}");
    assert_eq!(
        msg,
        "affinity: irq-cpu for the server: the client must be pinned (its softirq runs where \
         it runs); set client_cpus in the measure or place it at this level"
    );
    let (_, msg) = error(&tcp("server:not-irq-cpu client:unpinned", ""));
    assert!(
        msg.starts_with("affinity: not-irq-cpu for the server: the client must be pinned"),
        "{msg}"
    );
    let (_, msg) = error(&tcp("client:irq-cpu", "client_cpus = \"0\"\n"));
    assert_eq!(
        msg,
        "affinity: irq-cpu for the client: jitterlab finds the softirq CPU of the tcp server \
         and the mcast receiver only"
    );
    let (_, msg) = error(
        "name = \"x\"\n[workload]\ncommand = \"w\"\n[measure.latency]\n[factors]\naffinity = [\"irq-cpu\"]\n",
    );
    assert!(
        msg.contains("irq-cpu for the workload: jitterlab finds"),
        "{msg}"
    );
    // A peer pinned by its measure or at the level.
    for ok in [
        tcp("irq-cpu", "client_cpus = \"0\"\n"),
        tcp("server:not-irq-cpu client:1", ""),
        "name = \"x\"\n[measure.mcast]\nsender_cpus = \"0\"\n[factors]\naffinity = [\"irq-cpu\"]\n"
            .to_string(),
    ] {
        Recipe::parse("ok.toml", &ok).unwrap_or_else(|e| panic!("{e}"));
        Recipe::parse_on("ok.toml", &ok, &two_cpus()).unwrap_or_else(|e| panic!("{e}"));
    }
    // On a machine, not-irq-cpu needs a CPU beside the peer's.
    let (at, msg) = refused_on(&two_cpus(), &tcp("not-irq-cpu", "client_cpus = \"0-1\"\n"));
    assert_eq!(
        (at.as_str(), msg.as_str()),
        (
            "3:25",
            "affinity: not-irq-cpu for the server: no online CPU is left beside the client's \
             0-1 (online: 0-1)"
        )
    );
}
