//! `jitterlab latency`.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use jitterlab_cpuset::CpuSet;
use jitterlab_host::env::{steal_ticks, Environment};
use jitterlab_host::{Error, Root};
use jitterlab_latency::plot::LatencyPlot;
use jitterlab_latency::probe::live_for;
use jitterlab_latency::{Config, CyclictestHistogram, LatencyReport, Stop};
use jitterlab_render::{render, write_cyclictest_histogram, write_latency_plot, Format};

use crate::cli::{Color, Latency};
use crate::output::{cancel_on_signals, emit, format, progress};
use crate::{EXIT_LIMIT, EXIT_OK};

/// Ten seconds, when neither --loops nor --duration is given.
const DEFAULT_DURATION_NS: u64 = 10_000_000_000;

pub fn run(root: &Root, args: Latency, color: Color) -> anyhow::Result<u8> {
    if !root.is_live() {
        return Err(
            Error::Invalid("latency measures this machine; it cannot take --root".into()).into(),
        );
    }
    let online = root.read_cpu_list("/sys/devices/system/cpu/online")?;
    let cpus = match &args.cpus {
        Some(list) => {
            CpuSet::parse_list(list).map_err(|e| Error::Invalid(format!("--cpus: {e}")))?
        }
        None => online.clone(),
    };
    let policy = args.policy.policy();
    let config = Config {
        cpus,
        policy,
        priority: args
            .priority
            .unwrap_or(if policy.is_realtime() { 95 } else { 0 }),
        interval_ns: args.interval,
        stop: match (args.loops, args.duration) {
            (Some(n), _) => Stop::Loops(n),
            (None, Some(d)) => Stop::DurationNs(d),
            (None, None) => Stop::DurationNs(DEFAULT_DURATION_NS),
        },
        deadline_ns: args.deadline.unwrap_or(args.interval),
        dma_latency: !args.no_dma_latency,
        force: args.force,
        spike_threshold_ns: args.spike_threshold,
        break_ns: args.break_us.map(|us| us.saturating_mul(1000)),
    };
    config.validate(&online)?;
    let load_cpus = match &args.load_cpus {
        Some(list) => {
            let set = CpuSet::parse_list(list)
                .map_err(|e| Error::Invalid(format!("--load-cpus: {e}")))?;
            jitterlab_host::cpus::check_online(root, &set)?;
            set
        }
        None => online.clone(),
    };
    let environment = Environment::read(root)?;
    let steal_before = steal_ticks(root)?;

    let cancel = cancel_on_signals();
    let loads = if args.loads.is_empty() {
        None
    } else {
        let loads = jitterlab_latency::load::start(&args.loads, &load_cpus)?;
        // Let the generators reach their steady state before measuring.
        std::thread::sleep(std::time::Duration::from_millis(200));
        Some(loads)
    };
    let live = live_for(&config);
    let done = Arc::new(AtomicBool::new(false));
    let display = io::stderr()
        .is_terminal()
        .then(|| progress(live.clone(), config.stop, Arc::clone(&done)));
    let result = jitterlab_latency::run(&config, &cancel, &live);
    done.store(true, Ordering::Relaxed);
    if let Some(d) = display {
        let _ = d.join();
    }
    let load_results = loads.map(|l| l.stop()).unwrap_or_default();
    let run = result?;

    let steal_after = steal_ticks(root)?;
    let fail_above_ns = args.fail_above.map(|us| us.saturating_mul(1000));
    let mut report = LatencyReport::build(
        environment,
        config,
        &run,
        fail_above_ns,
        &steal_before,
        &steal_after,
    );
    if !load_results.is_empty() {
        report.load_cpus = Some(load_cpus);
        report.loads = load_results;
    }
    if let Some(path) = &args.histogram_cyclictest {
        let hist = CyclictestHistogram::build(&run, args.histogram_rows);
        let mut out = create(path)?;
        write_cyclictest_histogram(&hist, &mut out)?;
        out.flush()?;
    }
    if let Some(path) = &args.plot {
        let mut out = create(path)?;
        write_latency_plot(&LatencyPlot::build(&report), &mut out)?;
        out.flush()?;
    }
    match args.json.as_deref() {
        Some(p) if p.as_os_str() == "-" => emit(&report, Format::Json)?,
        Some(p) => {
            let mut out = create(p)?;
            render(&report, Format::Json, &mut out)?;
            out.flush()?;
            emit(&report, format(false, color))?;
        }
        None => emit(&report, format(false, color))?,
    }
    // A sample over --fail-above, or a run ended by --break, is a limit hit.
    Ok(if report.failed || report.break_hit.is_some() {
        EXIT_LIMIT
    } else {
        EXIT_OK
    })
}

fn create(path: &std::path::Path) -> anyhow::Result<BufWriter<File>> {
    let file = File::create(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(BufWriter::new(file))
}
