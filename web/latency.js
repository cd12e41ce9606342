// latency.js: a latency result (jitterlab.latency, docs/json.md) as pictures: per-CPU
// histograms (log count against linear latency, OSADL style, the maximum marked), a
// percentile plot on a "nines" axis from the exact buckets' cumulative counts, latency
// over time (the worst per pixel), the spike ledger, and the run's settings.
import { el, facts, fmtBool, fmtCount, fmtDur, fmtOpt, put, section, table } from "./tables.js";
import { decadeTicks, fmtCountTick, fmtUsTick, frame, legend, linear, log10, niceTicks, seriesColor, svgEl } from "./svg.js";

const PLOT_W = 1300;

/** The first value of 1, 2, 5 x 10^k at or over x. */
function niceStep(x) {
  const p = 10 ** Math.floor(Math.log10(x));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= x * (1 - 1e-12));
}

/** Log ticks between a and b: decades, with 2 and 5 between them over a short range. */
function logTicks(a, b) {
  const dec = decadeTicks(a, b);
  if (Math.log10(b / a) > 3.5) return dec;
  const out = [];
  for (let e = Math.floor(Math.log10(a)); 10 ** e <= b; e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= a && v <= b) out.push(v);
    }
  }
  return out;
}

/** A button group choosing one of `options` ([value, label]); calls `on(value)`. */
function choice(label, options, initial, on) {
  const group = el("div", { class: "jl-choice", role: "group", "aria-label": label }, el("span", null, `${label}: `));
  const buttons = options.map(([v, text]) => {
    const b = el("button", { type: "button", "aria-pressed": String(v === initial), dataset: { value: v } }, text);
    b.addEventListener("click", () => {
      for (const x of buttons) x.setAttribute("aria-pressed", String(x === b));
      on(v);
    });
    return b;
  });
  group.append(...buttons);
  return group;
}

function cpuLegend(cpus) {
  return legend(cpus.map((c, k) => ({ label: `CPU ${c.cpu}`, color: seriesColor(k) })));
}

// ---- Histograms

/** One CPU's bucket counts summed into bins of `binNs` (bin i: latencies in (i*bin, (i+1)*bin]). */
function binned(buckets, binNs, nbins) {
  const out = new Float64Array(nbins);
  for (const b of buckets) {
    const i = Math.max(0, Math.ceil(b.le_ns / binNs) - 1);
    if (i < nbins) out[i] += b.count;
  }
  return out;
}

/** The histogram plot, x up to `xMaxNs`. */
function histogramPlot(cpus, xMaxNs) {
  const width = PLOT_W, height = 480;
  const inner = width - 90;
  const binNs = Math.max(1000, niceStep((xMaxNs / inner) * 2 / 1000) * 1000);
  // A little room past the last value, so that its mark stands clear of the frame.
  const nbins = Math.max(1, Math.ceil((xMaxNs * 1.03) / binNs));
  const bins = cpus.map((c) => binned(c.buckets, binNs, nbins));
  let top = 1;
  for (const b of bins) for (const v of b) if (v > top) top = v;
  const xMaxUs = (nbins * binNs) / 1000;
  const f = frame({
    width, height, class: "jl-histogram",
    title: "latency histogram per CPU",
    x: (a, b) => linear(0, xMaxUs, a, b),
    y: (a, b) => log10(0.8, top * 2, a, b),
    xTicks: niceTicks(0, xMaxUs, 12), xFmt: fmtUsTick,
    yTicks: decadeTicks(1, top * 2), yFmt: fmtCountTick,
    xLabel: `latency (bins of ${fmtDur(binNs)})`,
    yLabel: `samples per ${fmtDur(binNs)}`,
  });
  const bottom = f.inner.bottom;
  cpus.forEach((c, k) => {
    const b = bins[k];
    // A step curve; empty bins drop to the axis, as in OSADL's plots.
    let d = `M${f.x(0)},${bottom}`;
    for (let i = 0; i < nbins; i++) {
      const y = b[i] > 0 ? f.y(b[i]) : bottom;
      d += `V${y.toFixed(1)}H${f.x(((i + 1) * binNs) / 1000).toFixed(1)}`;
    }
    d += `V${bottom}`;
    f.plot.append(svgEl("path", { class: "jl-series jl-hist-curve", d, style: `stroke: ${seriesColor(k)}`, "data-cpu": c.cpu }));
  });
  // The maximum of each CPU: a marked line, labelled; an arrow at the edge when beyond it.
  cpus.forEach((c, k) => {
    const beyond = c.max_ns > nbins * binNs;
    const x = beyond ? f.inner.right - 2 : f.x(c.max_ns / 1000);
    const ly = f.inner.top + 14 + 16 * k;
    const text = `CPU ${c.cpu} max ${fmtDur(c.max_ns)}${beyond ? " →" : ""}`;
    // The label on the side of the line with room for it.
    const right = x < (f.inner.left + f.inner.right) / 2;
    f.plot.append(svgEl("g", { class: "jl-max", "data-cpu": c.cpu, "data-max-ns": c.max_ns },
      svgEl("line", { x1: x, x2: x, y1: f.inner.top, y2: bottom, style: `stroke: ${seriesColor(k)}` }),
      svgEl("text", { x: right ? x + 4 : x - 4, y: ly, "text-anchor": right ? "start" : "end", style: `fill: ${seriesColor(k)}`, text }),
      svgEl("title", { text })));
  });
  return f.svg;
}

/** The histograms page. */
export function mountHistograms(root, ctx) {
  const cpus = ctx.report.cpus.filter((c) => c.samples > 0);
  if (!cpus.length) {
    put(root, section("Latency histograms", null, el("p", null, "no samples")));
    return;
  }
  const pick = (key) => Math.max(...cpus.map((c) => c[key]));
  const holder = el("div", { class: "jl-chart" });
  const draw = (key) => holder.replaceChildren(histogramPlot(cpus, Math.max(pick(key), 2000)), cpuLegend(cpus));
  draw("max_ns");
  put(root, section("Latency histograms",
    "samples per latency bin, one curve per CPU (log count, linear latency); the line marks each CPU's maximum",
    choice("latency axis up to", [["max_ns", "the maximum"], ["p99_99_ns", "p99.99"], ["p99_9_ns", "p99.9"], ["p99_ns", "p99"]], "max_ns", draw),
    holder, statsTable(ctx.report.cpus)));
}

/** Per-CPU figures, as the model gives them. */
function statsTable(cpus) {
  const d = (key, label) => ({ label, num: true, value: (r) => r[key], fmt: fmtDur });
  return table({
    id: "jl-latency-stats",
    columns: [
      { label: "CPU", num: true, value: (r) => r.cpu },
      { label: "samples", num: true, value: (r) => r.samples, fmt: fmtCount },
      d("min_ns", "min"), d("avg_ns", "avg"), d("stddev_ns", "stddev"), d("p50_ns", "p50"), d("p90_ns", "p90"),
      d("p99_ns", "p99"), d("p99_9_ns", "p99.9"), d("p99_99_ns", "p99.99"), d("max_ns", "max"),
      { label: "missed periods", num: true, value: (r) => r.missed_periods, fmt: fmtCount },
      { label: "deadline misses", num: true, value: (r) => r.deadline_misses, fmt: fmtCount },
    ],
    rows: cpus,
    rowAttrs: (r) => ({ dataset: { cpu: r.cpu } }),
  });
}

// ---- Percentiles

/** The percentile plot: latency against the nines (x = -log10(1 - fraction)). */
export function mountPercentiles(root, ctx) {
  const cpus = ctx.report.cpus.filter((c) => c.samples > 0);
  if (!cpus.length) {
    put(root, section("Percentiles", null, el("p", null, "no samples")));
    return;
  }
  const nines = Math.max(1, Math.ceil(Math.log10(Math.max(...cpus.map((c) => c.samples)))));
  const lo = Math.max(0.1, Math.min(...cpus.map((c) => c.min_ns)) / 1000 / 1.5);
  const hi = Math.max(...cpus.map((c) => c.max_ns)) / 1000 * 1.5;
  const f = frame({
    width: PLOT_W, height: 480, class: "jl-percentiles",
    title: "latency by percentile per CPU",
    x: (a, b) => linear(0, nines, a, b),
    y: (a, b) => log10(lo, hi, a, b),
    xTicks: Array.from({ length: nines + 1 }, (_, k) => k),
    xFmt: (k) => (k === 0 ? "0%" : `${(100 - 100 / 10 ** k).toFixed(Math.max(0, k - 2))}%`),
    yTicks: logTicks(lo, hi), yFmt: fmtUsTick,
    xLabel: "percentile (the nines: each step ten times rarer)", yLabel: "latency",
  });
  cpus.forEach((c, k) => {
    const total = c.buckets.reduce((a, b) => a + b.count, 0);
    const end = Math.log10(total); // the last sample: 1 - 1/N
    let cum = 0, x0 = 0, d = "";
    for (const b of c.buckets) {
      if (!b.count) continue;
      cum += b.count;
      const x1 = cum >= total ? Math.max(end, x0) : -Math.log10(1 - cum / total);
      const y = f.y(Math.max(lo, b.le_ns / 1000));
      d += d ? `V${y.toFixed(1)}H${f.x(Math.min(x1, nines)).toFixed(1)}` : `M${f.x(x0)},${y.toFixed(1)}H${f.x(Math.min(x1, nines)).toFixed(1)}`;
      x0 = x1;
    }
    f.plot.append(svgEl("path", { class: "jl-series jl-pct-curve", d, style: `stroke: ${seriesColor(k)}`, "data-cpu": c.cpu }));
    const mx = f.x(Math.min(end, nines)), my = f.y(c.max_ns / 1000);
    f.plot.append(svgEl("circle", { class: "jl-max-dot", cx: mx, cy: my, r: 4, style: `fill: ${seriesColor(k)}`, "data-cpu": c.cpu },
      svgEl("title", { text: `CPU ${c.cpu} max ${fmtDur(c.max_ns)} (1 of ${fmtCount(total)} samples)` })));
  });
  put(root, section("Percentiles",
    "the latency under which each fraction of the samples fell, from the exact histogram; the dot is the maximum",
    el("div", { class: "jl-chart" }, f.svg, cpuLegend(cpus)), statsTable(ctx.report.cpus)));
}

// ---- Over time

/** The worst latency per pixel column over the run, per CPU. */
export function mountOverTime(root, ctx) {
  const cpus = ctx.report.cpus.filter((c) => c.over_time);
  if (!cpus.length) {
    put(root, section("Latency over time", null, el("p", { class: "jl-not-recorded", id: "jl-overtime-missing" },
      "not recorded: this result has no latency over time (report.cpus[].over_time; a newer jitterlab latency records it)")));
    return;
  }
  const spanNs = Math.max(...cpus.map((c) => c.over_time.bucket_ns * c.over_time.worst_ns.length));
  let top = 1, bottomUs = Infinity;
  for (const c of cpus) for (const w of c.over_time.worst_ns) if (w > 0) { top = Math.max(top, w / 1000); bottomUs = Math.min(bottomUs, w / 1000); }
  const lo = Math.max(0.1, (Number.isFinite(bottomUs) ? bottomUs : 1) / 1.5), hi = top * 1.5;
  const f = frame({
    width: PLOT_W, height: 420, class: "jl-overtime",
    title: "worst latency over the run per CPU",
    x: (a, b) => linear(0, spanNs / 1e9, a, b),
    y: (a, b) => log10(lo, hi, a, b),
    xTicks: niceTicks(0, spanNs / 1e9, 12), xFmt: (v) => `${+v.toPrecision(6)} s`,
    yTicks: logTicks(lo, hi), yFmt: fmtUsTick,
    xLabel: "time from the start of the run", yLabel: "worst latency",
  });
  const px0 = Math.floor(f.inner.left), px1 = Math.ceil(f.inner.right);
  cpus.forEach((c, k) => {
    const { bucket_ns: bucket, worst_ns: worst } = c.over_time;
    // The worst of the buckets each pixel column covers (buckets wider than a pixel
    // cover several columns); no sample: a gap.
    const cols = new Float64Array(px1 - px0);
    for (let p = 0; p < cols.length; p++) {
      const i0 = Math.floor((f.x.invert(px0 + p) * 1e9) / bucket);
      const i1 = Math.min(worst.length - 1, Math.ceil((f.x.invert(px0 + p + 1) * 1e9) / bucket) - 1);
      for (let i = Math.max(0, i0); i <= i1; i++) if (worst[i] > cols[p]) cols[p] = worst[i];
    }
    let d = "";
    let pen = false;
    for (let p = 0; p < cols.length; p++) {
      if (!cols[p]) { pen = false; continue; }
      const y = f.y(Math.max(lo, cols[p] / 1000)).toFixed(1);
      d += pen ? `V${y}H${px0 + p + 1}` : `M${px0 + p},${y}H${px0 + p + 1}`;
      pen = true;
    }
    f.plot.append(svgEl("path", { class: "jl-series jl-overtime-curve", d, style: `stroke: ${seriesColor(k)}`, "data-cpu": c.cpu }));
  });
  put(root, section("Latency over time", `the worst sample per pixel, per CPU (buckets of ${fmtDur(cpus[0].over_time.bucket_ns)} from the start of the run)`,
    el("div", { class: "jl-chart" }, f.svg, cpuLegend(cpus))));
}

// ---- Spikes

/** The spike ledger: every sample over the threshold, with the interrupts around it. */
export function mountSpikes(root, ctx) {
  const sp = ctx.report.spikes;
  if (!sp) {
    put(root, section("Spikes", null, el("p", { class: "jl-not-recorded" }, "no spike ledger: the run had no --spike-threshold")));
    return;
  }
  const list = sp.spikes;
  const cpuIndex = new Map(ctx.report.cpus.map((c, k) => [c.cpu, k]));
  const parts = [facts([
    ["threshold", fmtDur(sp.threshold_ns), "threshold_ns"],
    ["spikes kept", fmtCount(list.length), "spikes"],
    ["dropped (ledger full)", fmtCount(sp.dropped), "dropped"],
  ])];
  if (list.length) {
    const end = Math.max(...list.map((s) => s.t_ns), ctx.report.wall_ns ?? 0) / 1e9;
    const lo = Math.max(0.1, (sp.threshold_ns / 1000) / 1.2), hi = Math.max(...list.map((s) => s.latency_ns)) / 1000 * 1.5;
    const f = frame({
      width: PLOT_W, height: 320, class: "jl-spikes",
      title: "spikes over the run",
      x: (a, b) => linear(0, end || 1, a, b),
      y: (a, b) => log10(lo, hi, a, b),
      xTicks: niceTicks(0, end || 1, 12), xFmt: (v) => `${+v.toPrecision(6)} s`,
      yTicks: logTicks(lo, hi), yFmt: fmtUsTick,
      xLabel: "time from the start of the run", yLabel: "latency",
    });
    for (const s of list) {
      f.plot.append(svgEl("circle", { class: "jl-spike-dot", cx: f.x(s.t_ns / 1e9), cy: f.y(s.latency_ns / 1000), r: 3.5, style: `fill: ${seriesColor(cpuIndex.get(s.cpu) ?? 0)}`, "data-cpu": s.cpu },
        svgEl("title", { text: `CPU ${s.cpu}, sample ${s.sample}, at ${fmtDur(s.t_ns)}: ${fmtDur(s.latency_ns)}` })));
    }
    parts.push(el("div", { class: "jl-chart" }, f.svg, cpuLegend(ctx.report.cpus)));
    parts.push(table({
      id: "jl-spike-table",
      columns: [
        { label: "at", num: true, value: (r) => r.t_ns, fmt: fmtDur, title: "from the start of the run" },
        { label: "CPU", num: true, value: (r) => r.cpu },
        { label: "sample", num: true, value: (r) => r.sample, fmt: fmtCount },
        { label: "latency", num: true, value: (r) => r.latency_ns, fmt: fmtDur },
        { label: "window", num: true, value: (r) => r.window_ns, fmt: fmtDur, title: "the time the interrupts were counted over" },
        { label: "interrupts and softirqs in the window", value: (r) => r.interrupts.map((i) => `${i.name} x${i.count}`).join(", ") || "-" },
      ],
      rows: list,
    }));
  }
  put(root, section("Spikes", "every sample over the threshold, with the interrupts its CPU took around it", parts));
}

// ---- Run

function loadSpec(spec) {
  const [k, v] = Object.entries(spec)[0] ?? ["?", ""];
  return `${k}:${v}`;
}

/** The run: its settings, the machine, and what the probe noticed. */
export function mountRun(root, ctx) {
  const r = ctx.report;
  const c = r.config, e = r.environment;
  const stop = c.stop.loops !== undefined ? `after ${fmtCount(c.stop.loops)} wake-ups per CPU` : `after ${fmtDur(c.stop.duration_ns)}`;
  put(root,
    section("Warnings", null, r.warnings.length
      ? el("ul", { class: "jl-warning-list" }, r.warnings.map((w) => el("li", null, w)))
      : el("p", null, "none")),
    section("Settings", null, facts([
      ["CPUs", c.cpus, "cpus"],
      ["policy", `${c.policy}, priority ${c.priority}`, "policy"],
      ["interval", fmtDur(c.interval_ns), "interval_ns"],
      ["stop", stop, "stop"],
      ["deadline", fmtDur(c.deadline_ns), "deadline_ns"],
      ["/dev/cpu_dma_latency held at 0", `${fmtBool(c.dma_latency)} asked, ${fmtBool(r.dma_latency_held)} held`, "dma_latency"],
      ["interval under 10 us forced", fmtBool(c.force)],
      ["spike threshold", fmtDur(c.spike_threshold_ns), "spike_threshold_ns"],
      ["break above", fmtDur(c.break_ns), "break_ns"],
      ["fail above", fmtDur(r.fail_above_ns), "fail_above_ns"],
    ])),
    section("The run", null, facts([
      ["wall time", fmtDur(r.wall_ns), "wall_ns"],
      ["memory locked", fmtBool(r.mlocked), "mlocked"],
      ["cancelled", fmtBool(r.cancelled), "cancelled"],
      ["failed (over --fail-above)", fmtBool(r.failed), "failed"],
      ["ticks stolen by the hypervisor", r.steal_ticks.length ? r.steal_ticks.map(([cpu, t]) => `CPU ${cpu}: ${fmtCount(t)}`).join(", ") : "-", "steal_ticks"],
      ["break hit", r.break_hit ? `${fmtDur(r.break_hit.latency_ns)} on CPU ${r.break_hit.cpu} at sample ${fmtCount(r.break_hit.sample)}${r.break_hit.traced ? " (traced)" : ""}` : "-", "break_hit"],
      ["trace buffers stopped by the break", r.break_buffers.length ? r.break_buffers.join(", ") : "-"],
      ["load CPUs", fmtOpt(r.load_cpus), "load_cpus"],
    ]), r.loads.length ? table({
      id: "jl-loads",
      columns: [
        { label: "load", value: (x) => loadSpec(x.spec) },
        { label: "operations", num: true, value: (x) => x.ops, fmt: fmtCount },
        { label: "exit", value: (x) => x.exit, fmt: fmtOpt },
      ],
      rows: r.loads,
    }) : el("p", null, "no load generator")),
    section("The machine", null, facts([
      ["kernel", e.kernel_release, "kernel_release"],
      ["version", e.kernel_version],
      ["preemption", `${fmtOpt(e.preemption)}${e.preempt_rt ? " (PREEMPT_RT)" : ""}`, "preemption"],
      ["command line", fmtOpt(e.cmdline)],
      ["isolated CPUs", fmtOpt(e.isolated_cpus)],
      ["nohz_full", fmtOpt(e.nohz_full)],
      ["clock source", fmtOpt(e.clocksource)],
      ["virtualization", fmtOpt(e.virtualization), "virtualization"],
      ["cpuidle", `${fmtOpt(e.cpuidle_driver)} / ${fmtOpt(e.cpuidle_governor)}`],
      ["cpufreq governors", e.cpufreq_governors?.length ? e.cpufreq_governors.join(", ") : "-"],
    ])),
  );
}
