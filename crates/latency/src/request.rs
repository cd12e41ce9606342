//! `jitterlab latency` as one call: the probe on the live machine, with its loads beside
//! it, the environment and the host's steal time read around it, and the report built.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use jitterlab_cpuset::CpuSet;
use jitterlab_host::env::{steal_ticks, Environment};
use jitterlab_host::Root;

use crate::load::LoadSpec;
use crate::probe::{live_for, Live, Run};
use crate::{Config, Error, LatencyReport};

/// What to measure.
#[derive(Clone, Debug)]
pub struct Request {
    /// The probe.
    pub config: Config,
    /// Loads to run while it measures (none: an idle run).
    pub loads: Vec<LoadSpec>,
    /// CPUs the loads run on (default: all online).
    pub load_cpus: Option<CpuSet>,
    /// A latency above this, ns, fails the run ([`LatencyReport::failed`]).
    pub fail_above_ns: Option<u64>,
}

/// A finished measurement.
#[derive(Debug)]
pub struct Measured {
    /// The result model.
    pub report: LatencyReport,
    /// The run's histograms, for the cyclictest histogram.
    pub run: Run,
}

/// Checks the request, starts the loads (and lets them settle for 200 ms), calls
/// `on_start` with the live figures of each measuring thread (for a progress line), runs
/// the probe until it stops or `cancel` is set, stops the loads and builds the report.
/// Call [`jitterlab_host::child::cancel_on_signals`] before, so that Ctrl-C reports what
/// was measured.
pub fn measure(
    root: &Root,
    req: &Request,
    cancel: &Arc<AtomicBool>,
    on_start: impl FnOnce(&[Arc<Live>]),
) -> Result<Measured, Error> {
    if !root.is_live() {
        return Err(Error::Invalid(
            "latency measures this machine; it cannot take --root".into(),
        ));
    }
    let online = jitterlab_host::cpus::online(root)?;
    req.config.validate(&online)?;
    let load_cpus = match &req.load_cpus {
        Some(set) => {
            jitterlab_host::cpus::check_online(root, set)?;
            set.clone()
        }
        None => online,
    };
    let environment = Environment::read(root)?;
    let steal_before = steal_ticks(root)?;
    let loads = if req.loads.is_empty() {
        None
    } else {
        let loads = crate::load::start(&req.loads, &load_cpus)?;
        // Let the generators reach their steady state before measuring.
        std::thread::sleep(std::time::Duration::from_millis(200));
        Some(loads)
    };
    let live = live_for(&req.config);
    on_start(&live);
    let start_wall_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|d| u64::try_from(d.as_nanos()).ok());
    let result = crate::run(&req.config, cancel, &live);
    let load_results = loads.map(|l| l.stop()).unwrap_or_default();
    let run = result?;
    let steal_after = steal_ticks(root)?;
    let mut report = LatencyReport::build(
        environment,
        req.config.clone(),
        &run,
        req.fail_above_ns,
        &steal_before,
        &steal_after,
    );
    report.start_wall_ns = start_wall_ns;
    if !load_results.is_empty() {
        report.load_cpus = Some(load_cpus);
        report.loads = load_results;
    }
    Ok(Measured { report, run })
}
