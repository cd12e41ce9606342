//! `jitterlab show`.

use std::time::{Duration, Instant};

use jitterlab_host::overview::Overview;
use jitterlab_host::tasks::{read_tasks, TaskQuery};
use jitterlab_host::{Cgroups, CpuMap, Error, Filter, IrqMap, Root, TaskList, Workqueues};

use crate::cli::{Color, Show, ShowView};
use crate::output::{emit, format};
use crate::EXIT_OK;

pub fn run(root: &Root, args: Show, color: Color) -> anyhow::Result<u8> {
    let c = &args.common;
    let filter = Filter::new(c.cpu.as_deref(), c.name.as_deref())?;
    let fmt = format(c.json, color);
    match args.view {
        None => {
            let cgroups = Cgroups::read(root)?;
            let cpus = CpuMap::read(root, &cgroups.isolated_cpus())?;
            let irqs = IrqMap::read(root)?;
            let threads = read_tasks(root, TaskQuery::all_threads())?;
            emit(&Overview::build(&cpus, &irqs, &threads, &filter), fmt)?;
        }
        Some(ShowView::Cpus) => {
            let cgroups = Cgroups::read(root)?;
            let mut cpus = CpuMap::read(root, &cgroups.isolated_cpus())?;
            filter.cpus_view(&mut cpus);
            emit(&cpus, fmt)?;
        }
        Some(ShowView::Irqs { interval }) => {
            let mut irqs = match interval {
                None => IrqMap::read(root)?,
                Some(s) if !(s > 0.0 && s <= 3600.0) => {
                    return Err(Error::Invalid(format!(
                        "--interval {s}: expected seconds above 0 and at most 3600"
                    ))
                    .into())
                }
                Some(s) => {
                    let before = IrqMap::read(root)?;
                    let start = Instant::now();
                    std::thread::sleep(Duration::from_secs_f64(s));
                    let after = IrqMap::read(root)?;
                    after.since(&before, start.elapsed().as_nanos() as u64)
                }
            };
            filter.irqs_view(&mut irqs);
            emit(&irqs, fmt)?;
        }
        Some(ShowView::Tasks { threads, pid }) => {
            let tasks = read_tasks(root, TaskQuery { threads, pid })?;
            emit(&TaskList::new(tasks, threads, pid, &filter), fmt)?;
        }
        Some(ShowView::Workqueues) => {
            let mut wq = Workqueues::read(root)?;
            filter.workqueues_view(&mut wq);
            emit(&wq, fmt)?;
        }
        Some(ShowView::Cgroups) => {
            let mut cg = Cgroups::read(root)?;
            filter.cgroups_view(&mut cg);
            emit(&cg, fmt)?;
        }
    }
    Ok(EXIT_OK)
}
