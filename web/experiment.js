// experiment.js: a result of jitterlab experiment (jitterlab.experiment, docs/json.md):
// the answers first, the blamed spikes by cause; per metric a strip plot of the runs
// per cell (warm-up runs hollow, the median and its interval as a bar, the baseline
// marked, the verdict beside each cell) and its table; the machine during each cell's
// runs; the per-interval series of a cell's runs with their steps marked; the trace
// explanations with a link to each trace's own report; the runs. Every figure is the
// model's: medians, intervals, ratios, p-values, verdicts and steps come with it.
import { el, facts, fixed, fmtBool, fmtCount, fmtDur, fmtOpt, put, section, table, timelineLink, traceLink } from "./tables.js";
import { frame, legend, linear, niceTicks, seriesColor, svgEl } from "./svg.js";

/** The width of a series plot, px (scaled down to the page's). */
const EXP_W = 1300;

/**
 * How a metric's figures are printed, as the text output does (units.rs, Scale): `ns`
 * as us, ms or s and `bit/s`, `B/s` with an SI prefix, chosen for `largest`; the
 * decimals that give `smallest` (default: largest) three significant digits.
 */
export function expScale(unit, largest, smallest = largest) {
  const m = Number.isFinite(largest) ? Math.abs(largest) : 0;
  let div = 1, shown = unit;
  if (unit === "ns") {
    const s = [[1e9, "s"], [1e6, "ms"], [1e3, "us"]].find(([d]) => m >= d);
    if (s) [div, shown] = s;
  } else if (unit === "bit/s" || unit === "B/s") {
    const s = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]].find(([d]) => m >= d);
    if (s) [div, shown] = [s[0], `${s[1]}${unit}`];
  }
  const dec = (x) => (x < 10 ? 2 : x < 100 ? 1 : 0);
  let decimals = dec(m / div);
  const sm = Math.abs(smallest) / div;
  if (Number.isFinite(sm) && sm > 0) decimals = Math.max(decimals, dec(sm));
  const num = (v) => (v === null || v === undefined ? (v === null ? "inf" : "-") : Number.isNaN(v) ? "-" : fixed(v / div, decimals));
  return { div, unit: shown, decimals, num, fmt: (v) => (v === undefined || Number.isNaN(v) ? "-" : `${num(v)}${shown ? ` ${shown}` : ""}`) };
}

/** One value in `unit`, in its own scale: `12.3 us`, `9.41 Gbit/s`. */
export function expValue(v, unit) {
  return v === null || v === undefined ? "-" : expScale(unit, v).fmt(v);
}

/** A ratio: three decimals; null (an unbounded end) as `inf`. */
function expRatio(r) {
  return r === null ? "inf" : r === undefined ? "-" : fixed(r, 3);
}

/**
 * An estimate's interval, `[0.782, 0.819]`, each end by `num`; one unbounded above (a
 * null `high`: a ratio whose baseline resamples reached 0) as `[3.000, ∞)`, as the
 * text output prints it.
 */
export function expInterval(e, num) {
  return e.high === null || !Number.isFinite(e.high) ? `[${num(e.low)}, ∞)` : `[${num(e.low)}, ${num(e.high)}]`;
}

/** A p-value: `0.034`, `1.2e-5` under 0.001. */
function expP(p) {
  if (p === null || p === undefined) return "-";
  return p < 0.001 ? p.toExponential(1).replace(/e([+-])0*(\d)/, "e$1$2").replace("e+", "e") : fixed(p, 3);
}

const EXP_REASONS = { too_few_runs: "too few runs", not_significant: "not significant", within_noise: "within noise", no_ratio: "baseline median 0", unequal_background: "unequal background" };

/** A verdict in words, as the text output prints it (Verdict's Display). */
export function verdictText(v) {
  if (!v) return "-";
  if (v.verdict === "real") return `${v.better ? "better" : "worse"} (${v.change})`;
  const why = (v.reasons ?? []).map((r) => EXP_REASONS[r] ?? r);
  return `no real difference${why.length ? ` (${why.join(", ")})` : ""}`;
}

const cellLabel = (r, c) => r.cells[c]?.label ?? `cell ${c}`;

/** Which runs a comparison stood on when not all of them, as the text output words it
 * under the verdict; null when all were compared (or the runs carry no context). */
export function expBackground(b) {
  switch (b?.kind) {
    case "quiet_runs_only": return `compared on ${b.cell_runs} and ${b.baseline_runs} quiet runs`;
    case "same_foreign": return `beside ${b.processes.length ? b.processes.join(", ") : "foreign work"} wanting ${fixed(b.demand, 2)} CPUs in every run (got ${fixed(b.cell_cpus, 2)} and ${fixed(b.baseline_cpus, 2)})`;
    case "unequal": return `foreign CPUs ${fixed(b.cell_cpus, 2)} against ${fixed(b.baseline_cpus, 2)}`;
    default: return null;
  }
}

/** A verdict in its colour, with which runs it stands on under it. */
function verdictCell(cmp) {
  const v = cmp.verdict;
  const cls = v.verdict === "real" ? (v.better ? " jl-better" : " jl-worse") : "";
  const note = expBackground(cmp.background);
  return [
    el("span", { class: `jl-verdict-text${cls}`, dataset: { verdict: verdictText(v) } }, verdictText(v)),
    note ? el("div", { class: `jl-bg-note jl-bg-${cmp.background.kind.replaceAll("_", "-")}`, title: "the runs measured beside foreign work are left out of the comparison, or, with too few without it, the difference is never called real" }, note) : null,
  ];
}

/** The header's line under the title. */
export function expSubtitle(r) {
  const warm = r.runs.filter((x) => x.warmup).length;
  const failed = r.runs.filter((x) => x.error !== null).length;
  const n = (k, one, many) => `${k} ${k === 1 ? one : many}`;
  const traced = r.runs.filter((x) => x.traced).length;
  return `experiment ${r.name}: ${n(r.cells.length, "cell", "cells")}, ${n(r.metrics.length, "metric", "metrics")}, ${n(r.runs.length, "run", "runs")} (${warm} warm-up, ${failed} failed, ${traced} traced); seed ${r.seed}`;
}

/** The warnings in words, for the header. */
export function expNotes(r) {
  const unit = (name) => r.metrics.find((m) => m.name === name)?.unit ?? "";
  return r.warnings.map((w) => {
    const cell = cellLabel(r, w.cell);
    switch (w.kind) {
      case "drift": return { cls: "warn", text: `drift: ${w.metric} in ${cell} trends across the rounds (Spearman's rho ${fixed(w.rho, 2)}, p ${expP(w.p)}): the machine changed while it ran` };
      case "slow_first_run": return { cls: "warn", text: `slow first run: ${w.metric} in ${cell}: ${expValue(w.first, unit(w.metric))}, the others ${expValue(w.others_worst, unit(w.metric))} at worst (median ${expValue(w.others_median, unit(w.metric))}): more warm-up` };
      case "steps": return { cls: "warn", text: `steps: ${w.series} in ${cell}: level shifts in ${w.runs} of ${w.of} runs (the Series page marks them)` };
      case "busy_runs": return {
        cls: "warn",
        text: `busy: ${cell}: ${w.runs} of ${w.of} run${w.of === 1 ? "" : "s"} measured beside foreign work (median ${fixed(w.foreign_cpus, 2)} CPUs of other processes${w.top ? `, most ${w.top}` : ""}, steal ${fixed(w.steal * 100, 1)}%)${w.runs === w.of ? ": its comparisons stand only against cells beside the same work" : ": compared on its quiet runs where there are enough, else not called real"}`,
      };
      case "kernel_messages": return { cls: "warn", text: `kernel: ${cell}: the kernel logged ${w.messages} warning${w.messages === 1 ? "" : "s"} in ${w.runs} of ${w.of} run${w.of === 1 ? "" : "s"}, first in run ${w.run}: "${w.first}"` };
      case "failed_runs": return { cls: "warn", text: `failed: ${cell}: ${w.runs} run${w.runs === 1 ? "" : "s"} left out of the statistics` };
      default: return { cls: "warn", text: `${w.kind}: ${JSON.stringify(w)}` };
    }
  });
}

/**
 * The cells in table order, grouped as the text output groups them: each cell that is
 * its own baseline with the cells compared with it, under a title naming the levels they
 * share (`load=none`) and each labelled by the levels that set it apart (`affinity=1`)
 * when the experiment has a baseline per level (the cells' `level_labels`); then any
 * other cell, by its label. [{ title (or null), rows: [{ cell, head, label }] }]
 */
export function expGroups(r) {
  const n = r.cells.length;
  const base = (c) => r.baselines[c] ?? c;
  const parts = (c) => r.cells[c]?.level_labels;
  // Which factors take more than one level among `cells` (null: not known).
  const varying = (cells) => {
    const ls = cells.map(parts);
    if (!ls.length || ls.some((l) => !Array.isArray(l) || l.length !== ls[0].length)) return null;
    return ls[0].map((_, f) => ls.some((l) => l[f] !== ls[0][f]));
  };
  const all = varying([...Array(n).keys()]);
  const out = [], shown = new Set();
  for (let h = 0; h < n; h++) {
    if (base(h) !== h) continue;
    const group = [h, ...[...Array(n).keys()].filter((c) => c !== h && base(c) === h)];
    const apart = varying(group);
    const shared = all && apart ? all.map((v, f) => v && !apart[f]) : null;
    const titled = group.length > 1 && shared?.some(Boolean);
    const pick = (c, which) => parts(c).filter((_, f) => which[f]).join(", ");
    out.push({
      title: titled ? pick(h, shared) : null,
      rows: group.map((c) => ({ cell: c, head: c === h, label: (titled && pick(c, apart)) || cellLabel(r, c) })),
    });
    for (const c of group) shown.add(c);
  }
  const rest = [...Array(n).keys()].filter((c) => !shown.has(c));
  if (rest.length) out.push({ title: null, rows: rest.map((c) => ({ cell: c, head: false, label: cellLabel(r, c) })) });
  return out;
}

/** A sortable table (tables.js) in a box of its own that scrolls sideways, its first
 * column sticky, when the page is narrower than the table. */
function boxed(spec) {
  return el("div", { class: "jl-scroll" }, table(spec));
}

/** The runs of `cell` drawn for `metric`: not failed, with a finite value. */
function drawnRuns(r, cell, metric) {
  return r.runs.filter((x) => x.cell === cell && x.error === null && typeof x.values[metric] === "number" && Number.isFinite(x.values[metric]));
}

/** A strip's height, px. */
const ROW_H = 34;
/** Where the value range lies in a strip's width, percent: room for a dot at either end. */
const STRIP_PAD = 1.5;

/** `v` as a percentage of a strip's width on [lo, hi]. */
function stripX(v, lo, hi) {
  return `${(STRIP_PAD + ((v - lo) / (hi - lo)) * (100 - 2 * STRIP_PAD)).toFixed(3)}%`;
}

/** A row's cells beyond its label: the ratio and the verdict, or the baseline's tag. */
function stripVerdict(r, head, cmp) {
  if (head) return [el("td", { class: "jl-ratio-text" }), el("td", { class: "jl-strip-verdict" }, el("span", { class: "jl-verdict-text jl-baseline-tag", dataset: { verdict: "baseline" } }, "baseline"))];
  if (!cmp) return [el("td", { class: "jl-ratio-text" }, "-"), el("td", { class: "jl-strip-verdict" })];
  return [
    el("td", { class: "jl-ratio-text", title: `ratio to ${cellLabel(r, cmp.baseline)}, p (Holm) ${expP(cmp.p_holm)}` },
      cmp.ratio ? `×${expRatio(cmp.ratio.value)} ${expInterval(cmp.ratio, expRatio)}` : "×-"),
    el("td", { class: "jl-strip-verdict" }, verdictCell(cmp)),
  ];
}

/**
 * The strip plot of one metric, a table: a row per cell (its label, its strip: a dot per
 * run, the median and its interval as a bar; the ratio to its baseline and the verdict),
 * the groups' titles between them, the axis under them. Its labels and verdicts are the
 * page's text, wrapping as text does, so none is cut off; the box scrolls, its first
 * column sticky, when the page is too narrow for it.
 */
function stripPlot(r, ms, scale) {
  const groups = expGroups(r);
  const rows = groups.flatMap((g) => g.rows);
  const name = ms.metric.name;
  const values = [];
  for (const { cell } of rows) for (const x of drawnRuns(r, cell, name)) values.push(x.values[name]);
  for (const c of ms.cells) if (c.median) values.push(c.median.value, c.median.low, ...(c.median.high === null ? [] : [c.median.high]));
  let lo = Math.min(...values), hi = Math.max(...values);
  if (!Number.isFinite(lo)) [lo, hi] = [0, 1];
  const pad = (hi - lo) * 0.06 || Math.abs(hi) * 0.05 || 1;
  [lo, hi] = [(lo - pad) / scale.div, (hi + pad) / scale.div];
  const at = (v) => stripX(v / scale.div, lo, hi);
  const ticks = niceTicks(lo, hi, 8).filter((t) => t >= lo && t <= hi);
  const grid = () => ticks.map((t) => svgEl("line", { class: "jl-strip-grid", x1: stripX(t, lo, hi), x2: stripX(t, lo, hi), y1: 0, y2: ROW_H }));
  const confidence = Math.round(r.config.confidence * 100);
  const body = el("tbody");
  let band = 0;
  for (const g of groups) {
    if (g.title) body.append(el("tr", { class: "jl-strip-group" }, el("th", { colspan: 4, scope: "rowgroup" }, el("span", { class: "jl-group-title" }, g.title))));
    for (const { cell, head, label } of g.rows) {
      const summary = ms.cells.find((c) => c.cell === cell);
      const cmp = ms.comparisons.find((c) => c.cell === cell);
      const svg = svgEl("svg", { class: "jl-plot jl-strip-svg", width: "100%", height: ROW_H, role: "img", "aria-label": `${name} of ${cellLabel(r, cell)}: a dot per run` }, grid());
      const m = summary?.median;
      if (m) {
        const x0 = at(m.low), x1 = m.high === null ? `${100 - STRIP_PAD}%` : at(m.high);
        svg.append(
          svgEl("rect", { class: "jl-ci", x: x0, y: ROW_H / 2 - 4, width: `${Math.max(0.1, parseFloat(x1) - parseFloat(x0)).toFixed(3)}%`, height: 8 },
            svgEl("title", { text: `median ${scale.fmt(m.value)}, ${confidence}% interval ${expInterval(m, scale.num)} ${scale.unit}` })),
          svgEl("line", { class: "jl-median", x1: at(m.value), x2: at(m.value), y1: ROW_H / 2 - 10, y2: ROW_H / 2 + 10 }));
      }
      for (const x of drawnRuns(r, cell, name)) {
        const jitter = ((x.round % 5) - 2) * 2.5 + (x.warmup ? -8 : 0);
        svg.append(svgEl("circle", { class: `jl-run${x.warmup ? " jl-warmup" : ""}`, cx: at(x.values[name]), cy: ROW_H / 2 + jitter, r: 3.5, "data-seq": x.seq },
          svgEl("title", { text: `run ${x.seq}, ${x.warmup ? "warm-up" : `round ${x.round}`}: ${expValue(x.values[name], ms.metric.unit)}` })));
      }
      body.append(el("tr", { class: `jl-strip${head ? " jl-baseline" : ""}${band++ % 2 === 0 ? " jl-band" : ""}`, dataset: { cell, metric: name } },
        el("th", { class: "jl-strip-label", scope: "row", title: cellLabel(r, cell) }, `${head ? "" : "↳ "}${label}`),
        el("td", { class: "jl-strip-plot" }, svg),
        ...stripVerdict(r, head, cmp)));
    }
  }
  // The axis: the ticks' values under the strips, and what they are.
  const axis = svgEl("svg", { class: "jl-plot jl-strip-svg jl-strip-axis", width: "100%", height: 38, role: "img", "aria-label": `the axis of ${name}` },
    ticks.map((t) => {
      const x = parseFloat(stripX(t, lo, hi));
      return svgEl("g", null,
        svgEl("line", { class: "jl-strip-tick", x1: `${x}%`, x2: `${x}%`, y1: 0, y2: 4 }),
        svgEl("text", { class: "jl-tick-label", x: `${x}%`, y: 15, "text-anchor": x < 6 ? "start" : x > 94 ? "end" : "middle", text: String(+t.toPrecision(6)) }));
    }),
    svgEl("text", { class: "jl-axis-label", x: "50%", y: 33, "text-anchor": "middle", text: `${name} (${scale.unit}${ms.metric.direction === "lower_is_better" ? ", lower is better" : ", higher is better"})` }));
  body.append(el("tr", { class: "jl-strip-axis-row" }, el("th", { scope: "row" }), el("td", { class: "jl-strip-plot" }, axis), el("td"), el("td")));
  const t = el("table", { class: "jl-strips", dataset: { metric: name }, "aria-label": `${name}: the runs per cell` }, body);
  return el("div", { class: "jl-chart" }, el("div", { class: "jl-scroll" }, t), legend([
    { label: "a measured run", color: "var(--jl-series-0)", cls: "jl-legend-run" },
    { label: "a warm-up run (hollow, not in the statistics)", color: "transparent", cls: "jl-legend-warmup" },
    { label: `the median and its ${confidence}% interval`, color: "var(--jl-fg)", cls: "jl-legend-ci" },
  ]));
}

/** A metric's table, the model's figures in one scale, grouped as the strip plot. */
function metricTable(r, ms, scale, k) {
  const row = ({ cell, head, label }) => ({ cell, head, label, summary: ms.cells.find((c) => c.cell === cell), cmp: ms.comparisons.find((c) => c.cell === cell) });
  return boxed({
    id: `jl-metric-${k}`,
    columns: [
      { label: "cell", value: (x) => x.label, fmt: (v, x) => `${x.head ? "" : "↳ "}${v}` },
      { label: "runs", num: true, value: (x) => x.summary?.runs },
      { label: `median (${scale.unit})`, num: true, value: (x) => x.summary?.median?.value, fmt: (v) => (v === undefined ? "-" : scale.num(v)) },
      { label: "interval", num: true, value: (x) => x.summary?.median?.low, fmt: (v, x) => (x.summary?.median ? expInterval(x.summary.median, scale.num) : "-"), title: `the median's ${Math.round(r.config.confidence * 100)}% bootstrap interval` },
      { label: "ratio", num: true, value: (x) => x.cmp?.ratio?.value, fmt: (v, x) => (x.head ? "baseline" : x.cmp?.ratio ? `${expRatio(v)} ${expInterval(x.cmp.ratio, expRatio)}` : "-"), title: "the cell's median over its baseline's (the cell its row is under), with its interval" },
      { label: "p (Holm)", num: true, value: (x) => x.cmp?.p_holm, fmt: (v, x) => (x.head ? "" : expP(v)) },
      { label: "verdict", value: (x) => (x.cmp ? verdictText(x.cmp.verdict) : x.head ? "" : null), fmt: (v, x) => (x.cmp ? verdictCell(x.cmp) : v), wrap: true, title: "real or not, and on which runs when not all" },
    ],
    groups: expGroups(r).map((g) => ({ title: g.title, head: null, rows: g.rows.map(row) })),
    rowAttrs: (x) => ({ dataset: { cell: x.cell } }),
  });
}

/** The answers: each sentence, the figures it rests on in small print under it. */
function answersSection(r) {
  if (!r.answers?.length) return null;
  return el("section", { class: "jl-section jl-answers", id: "jl-answers" }, el("h2", null, "Answers"),
    el("ul", { class: "jl-answer-list" }, r.answers.map((a) => el("li", { class: "jl-answer", dataset: { topic: a.topic } },
      el("p", { class: "jl-answer-text" }, a.text),
      a.basis.length ? el("ul", { class: "jl-basis" }, a.basis.map((b) => el("li", null, b))) : null))));
}

/** The blamed spikes of the traced runs by cause (`spike_causes`), each cause with the
 * runs whose spike it was, linked into their traces' timelines. */
function spikeCauses(r) {
  if (!r.spike_causes?.length) return null;
  const spikes = r.explanations.flatMap((e) => (e.spikes ?? []).map((s) => ({ e, s })));
  return section("Blamed spikes by cause", "the latency probe's spikes in the traced runs, each blamed on what took most of its window (the Traces page has each one)",
    boxed({
      id: "jl-spike-causes",
      columns: [
        { label: "cause", value: (c) => c.cause, fmt: (v) => v.replaceAll("_", " ") },
        { label: "spikes", num: true, value: (c) => c.spikes, fmt: fmtCount },
        { label: "stopped a trace", num: true, value: (c) => c.marked, fmt: fmtCount, title: "spikes that stopped their run's trace (break)" },
        {
          label: "runs", value: (c) => c.cause, wrap: true, title: "each run's spike in its trace's timeline",
          fmt: (v) => spikes.filter((x) => x.s.cause === v).flatMap(({ e, s }, k) => [k ? ", " : "", timelineLink(e.trace, [s.t_ns - s.latency_ns, s.t_ns], `run ${e.seq}`)]),
        },
      ],
      rows: r.spike_causes,
      rowAttrs: (c) => ({ dataset: { cause: c.cause } }),
    }));
}

/** The results page: the answers first, the spikes by cause, then per metric its strip
 * plot and table. */
export function mountResults(root, ctx) {
  const r = ctx.report;
  put(root, answersSection(r) ?? "", spikeCauses(r) ?? "");
  r.stats.forEach((ms, k) => {
    const medians = ms.cells.map((c) => c.median).filter(Boolean);
    const largest = Math.max(0, ...medians.flatMap((m) => [m.value, m.low, m.high]).filter((v) => v !== null && Number.isFinite(v)).map(Math.abs));
    const nonzero = medians.map((m) => Math.abs(m.value)).filter((v) => v > 0);
    const scale = expScale(ms.metric.unit, largest, nonzero.length ? Math.min(...nonzero) : largest);
    put(root, section(`${ms.metric.name} (${ms.metric.unit}, ${ms.metric.direction === "lower_is_better" ? "lower" : "higher"} is better)`,
      "each dot a run; the bar the median and its interval; each cell against its baseline (↳ under it): the ratio of medians and the verdict (real only when Holm's p is under alpha and the whole interval is beyond the noise)",
      stripPlot(r, ms, scale), metricTable(r, ms, scale, k)));
  });
  put(root, machineDuring(r) ?? "");
}

/** A count a second as the text output prints it: `3953`, `3.0`, `12.1k`; 0 as `0`. */
export function expPerS(x) {
  if (x === 0) return "0";
  if (x < 10) return fixed(x, 1);
  if (x < 10000) return fixed(x, 0);
  return `${fixed(x / 1e3, 1)}k`;
}

/** Softirq vectors shown per CPU before `+N`, as the text output. */
const EXP_SOFTIRQS = 3;

/**
 * What else the machine did during each cell's runs (`cell_contexts`, medians over the
 * cell's measured runs): per cell the CPU use beside the experiment and the steal, per
 * CPU its busy time, interrupts and softirqs a second; grouped as the metric tables.
 */
function machineDuring(r) {
  if (!r.cell_contexts?.length) return null;
  const groups = expGroups(r).map((g) => ({
    title: g.title,
    head: null,
    rows: g.rows.map((x) => ({ ...x, ctx: r.cell_contexts.find((c) => c.cell === x.cell) })).filter((x) => x.ctx),
  })).filter((g) => g.rows.length);
  const label = { label: "cell", value: (x) => x.label, fmt: (v, x) => `${x.head ? "" : "↳ "}${v}` };
  const cpus = (v) => fixed(v, 2);
  const perCell = boxed({
    id: "jl-machine-cells",
    columns: [
      label,
      { label: "runs", num: true, value: (x) => x.ctx.runs, title: "measured runs with a context" },
      { label: "busy runs", num: true, value: (x) => x.ctx.busy_runs, title: "of which beside foreign work or under the host's steal" },
      { label: "foreign", num: true, value: (x) => x.ctx.foreign_cpus, fmt: cpus, title: "processes outside the experiment, CPUs" },
      { label: "kernel", num: true, value: (x) => x.ctx.kernel_cpus, fmt: cpus, title: "kernel threads, CPUs" },
      { label: "tools", num: true, value: (x) => x.ctx.tools_cpus, fmt: cpus, title: "jitterlab's own threads and the loads it started, CPUs" },
      { label: "tested", num: true, value: (x) => x.ctx.tested_cpus, fmt: cpus, title: "the processes under test, CPUs" },
      { label: "steal", num: true, value: (x) => x.ctx.steal, fmt: (v) => `${fixed(v * 100, 1)}%`, title: "of the CPU time, taken by the host" },
    ],
    groups,
    rowAttrs: (x) => ({ dataset: { cell: x.cell } }),
  });
  const perCpu = boxed({
    id: "jl-machine-cpus",
    columns: [
      label,
      { label: "CPU", num: true, value: (x) => x.cpu.cpu },
      { label: "busy", num: true, value: (x) => x.cpu.busy, fmt: (v) => `${fixed(v * 100, 0)}%`, title: "time not idle" },
      { label: "LOC/s", num: true, value: (x) => x.cpu.local_timer_per_s, fmt: expPerS, title: "local timer interrupts a second" },
      { label: "device/s", num: true, value: (x) => x.cpu.device_irqs_per_s, fmt: expPerS, title: "device interrupts a second" },
      { label: "other/s", num: true, value: (x) => x.cpu.other_irqs_per_s, fmt: expPerS, title: "other architecture interrupts a second (rescheduling, function calls, TLB shootdowns...)" },
      {
        label: "softirqs/s (most first)", value: (x) => x.cpu.softirqs_per_s[0]?.per_s ?? 0,
        fmt: (_, x) => [...x.cpu.softirqs_per_s.slice(0, EXP_SOFTIRQS).map((v) => `${v.name} ${expPerS(v.per_s)}`), ...(x.cpu.softirqs_per_s.length > EXP_SOFTIRQS ? [`+${x.cpu.softirqs_per_s.length - EXP_SOFTIRQS}`] : [])].join(", ") || "-",
        title: "the vectors that ran, by their median rate",
      },
    ],
    groups: groups.map((g) => ({ ...g, rows: g.rows.flatMap((x) => x.ctx.cpus.map((cpu) => ({ ...x, cpu }))) })),
    rowAttrs: (x) => ({ dataset: { cell: x.cell, cpu: x.cpu.cpu } }),
  });
  const sec = section("The machine during the runs", "medians over each cell's measured runs; CPU use in CPUs (1.00: one CPU the whole run), foreign: processes outside the experiment",
    perCell, el("h3", null, "Per CPU: time not idle, interrupts and softirqs a second"), perCpu);
  sec.id = "jl-machine";
  return sec;
}

/** A button group choosing a cell. */
function expCellChoice(r, cells, initial, on) {
  const group = el("div", { class: "jl-choice", role: "group", "aria-label": "cell" }, el("span", null, "cell: "));
  const buttons = cells.map((c) => {
    const b = el("button", { type: "button", "aria-pressed": String(c === initial), dataset: { cell: c } }, cellLabel(r, c));
    b.addEventListener("click", () => {
      for (const x of buttons) x.setAttribute("aria-pressed", String(x === b));
      on(c);
    });
    return b;
  });
  group.append(...buttons);
  return group;
}

/** One series' runs in one cell: a polyline per run, its steps marked. */
function seriesPlot(r, name, cell) {
  const runs = r.runs.filter((x) => x.cell === cell).map((x) => ({ run: x, s: x.series.find((s) => s.name === name) })).filter((x) => x.s && x.s.values.length);
  if (!runs.length) return el("p", { class: "jl-not-recorded" }, `no run of ${cellLabel(r, cell)} has a ${name} series`);
  const unit = runs[0].s.unit;
  let tMax = 0, lo = Infinity, hi = -Infinity;
  for (const { s } of runs) {
    tMax = Math.max(tMax, s.t_ns[s.t_ns.length - 1] ?? 0);
    for (const v of s.values) if (v !== null && Number.isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  }
  if (!Number.isFinite(lo)) [lo, hi] = [0, 1];
  const scale = expScale(unit, Math.max(Math.abs(lo), Math.abs(hi)));
  const pad = (hi - lo) * 0.08 || Math.abs(hi) * 0.05 || 1;
  const [y0, y1] = [(lo - pad) / scale.div, (hi + pad) / scale.div];
  const f = frame({
    width: EXP_W, height: 380, class: "jl-series-plot", title: `${name} per interval, ${cellLabel(r, cell)}`,
    x: (a, b) => linear(0, tMax / 1e9 || 1, a, b),
    y: (a, b) => linear(y0, y1, a, b),
    xTicks: niceTicks(0, tMax / 1e9 || 1, 12), xFmt: (v) => `${+v.toPrecision(6)} s`,
    yTicks: niceTicks(y0, y1, 6), yFmt: (v) => String(+v.toPrecision(6)),
    xLabel: "time from the start of the run", yLabel: `${name} (${scale.unit})`,
  });
  runs.forEach(({ run, s }, k) => {
    let d = "";
    s.values.forEach((v, i) => {
      if (v === null || !Number.isFinite(v)) return;
      d += `${d ? "L" : "M"}${f.x(s.t_ns[i] / 1e9).toFixed(1)},${f.y(v / scale.div).toFixed(1)}`;
    });
    f.plot.append(svgEl("path", { class: `jl-series jl-series-run${run.warmup ? " jl-warmup" : ""}`, d, style: `stroke: ${seriesColor(k)}`, "data-seq": run.seq },
      svgEl("title", { text: `run ${run.seq}, ${run.warmup ? "warm-up" : `round ${run.round}`}` })));
    for (const st of s.steps) {
      const x = f.x(st.t_ns / 1e9);
      const text = `run ${run.seq}: step at ${fmtDur(st.t_ns)}, ${expValue(st.before, unit)} -> ${expValue(st.after, unit)} (${st.change >= 0 ? "+" : ""}${(st.change * 100).toFixed(1)}%), held ${fmtDur(st.held_ns)}`;
      f.plot.append(svgEl("g", { class: "jl-step-mark", "data-seq": run.seq, "data-t-ns": st.t_ns },
        svgEl("line", { x1: x, x2: x, y1: f.inner.top, y2: f.inner.bottom, style: `stroke: ${seriesColor(k)}` }),
        svgEl("path", { d: `M${x - 6},${f.inner.top}L${x + 6},${f.inner.top}L${x},${f.inner.top + 9}Z`, style: `fill: ${seriesColor(k)}` }),
        svgEl("text", { x: x + 8, y: f.inner.top + 12, text: `step, run ${run.seq}` }),
        svgEl("title", { text })));
    }
  });
  return el("div", { class: "jl-chart" }, f.svg, legend(runs.map(({ run }, k) => ({
    label: `run ${run.seq} (${run.warmup ? "warm-up" : `round ${run.round}`}${run.series.some((s) => s.steps.length) ? ", steps" : ""})`, color: seriesColor(k),
  }))));
}

/** The series page: per series, a cell selector and its runs. */
export function mountSeries(root, ctx) {
  const r = ctx.report;
  const names = [...new Set(r.runs.flatMap((x) => x.series.map((s) => s.name)))];
  if (!names.length) {
    put(root, section("Series", null, el("p", { class: "jl-not-recorded" }, "no run recorded a per-interval series")));
    return;
  }
  for (const name of names) {
    const cells = r.cells.map((_, c) => c).filter((c) => r.runs.some((x) => x.cell === c && x.series.some((s) => s.name === name)));
    // The first cell with a step, else the first.
    const first = cells.find((c) => r.runs.some((x) => x.cell === c && x.series.some((s) => s.name === name && s.steps.length))) ?? cells[0];
    const holder = el("div", { class: "jl-series-holder", dataset: { series: name } });
    const draw = (c) => holder.replaceChildren(seriesPlot(r, name, c));
    draw(first);
    put(root, section(`${name} per interval`, "a line per run of the chosen cell (warm-up runs dashed); a marked line is a step: a level shift found in that run's series",
      expCellChoice(r, cells, first, draw), holder));
  }
}

/** The explanations: where the threads ran, what woke them, what moved around the steps. */
export function mountTraces(root, ctx) {
  const r = ctx.report;
  r.explanations.forEach((e, k) => {
    const run = r.runs.find((x) => x.seq === e.seq);
    const parts = [facts([
      ["cell", cellLabel(r, e.cell)],
      ["traced", fmtDur(e.duration_ns), "duration_ns"],
      ["events lost", fmtCount(e.lost_events), "lost_events"],
      ["trace", e.trace ? el("a", { class: "jl-trace-link", href: traceLink(e.trace), title: "the trace's report, written beside it (relative to the experiment's directory)" }, `${e.trace} — its timeline`) : "not kept", "trace"],
    ])];
    parts.push(el("h3", null, "Where the threads ran"), boxed({
      id: `jl-threads-${k}`,
      columns: [
        { label: "role", value: (t) => t.role, fmt: fmtOpt },
        { label: "comm", value: (t) => t.comm },
        { label: "tid", num: true, value: (t) => t.tid },
        { label: "run time", num: true, value: (t) => t.run_ns, fmt: fmtDur },
        { label: "CPUs (run time)", value: (t) => t.cpus.map((c) => c.cpu).join(","), fmt: (_, t) => t.cpus.map((c) => `${c.cpu}: ${fmtDur(c.run_ns)}`).join(", ") || "-", wrap: true },
        { label: "migrations", num: true, value: (t) => t.migrations, fmt: fmtCount },
        { label: "migrations/s", num: true, value: (t) => t.migrations_per_s, fmt: (v) => v.toFixed(1) },
        { label: "wake-ups", num: true, value: (t) => t.wakeups, fmt: fmtCount },
        { label: "wake p50", num: true, value: (t) => t.wake_p50_ns, fmt: fmtDur },
        { label: "from idle p50", num: true, value: (t) => t.wake_idle_p50_ns, fmt: fmtDur, title: "wake-ups that found their CPU idle: they pay the idle exit (a VM exit on a guest)" },
        { label: "from task p50", num: true, value: (t) => t.wake_task_p50_ns, fmt: fmtDur, title: "wake-ups that preempted or followed another task on their CPU" },
        { label: "wake max", num: true, value: (t) => t.wake_max_ns, fmt: fmtDur },
        { label: "inferred", num: true, value: (t) => t.wakeups_inferred ?? 0, fmt: fmtCount, title: "wake-ups whose switch-in the trace did not record: their latency is an upper bound" },
      ],
      rows: e.threads,
      rowAttrs: (t) => ({ dataset: { tid: t.tid } }),
    }));
    parts.push(el("h3", null, "What woke them"), e.chains.length ? boxed({
      id: `jl-wakers-${k}`,
      columns: [
        { label: "woken by", value: (c) => c.source },
        { label: "woken", value: (c) => `${c.comm}-${c.tid}` },
        { label: "wake-ups", num: true, value: (c) => c.count, fmt: fmtCount },
        { label: "on CPUs", value: (c) => c.source_cpus.join(", ") || "-" },
        { label: "p50", num: true, value: (c) => c.p50_ns, fmt: fmtDur, title: "from the IRQ's (or softirq's) exit to the switch-in" },
        { label: "max", num: true, value: (c) => c.max_ns, fmt: fmtDur },
        { label: "inferred", num: true, value: (c) => c.inferred ?? 0, fmt: fmtCount, title: "of these, the ones whose switch-in was inferred: upper bounds" },
      ],
      rows: e.chains,
    }) : el("p", { class: "jl-not-recorded" }, "no wake-up by an IRQ or softirq"));
    if (e.around_steps.length) {
      const rows = e.around_steps.flatMap((s) => (s.migrations.length ? s.migrations : [null]).map((m) => ({ s, m })));
      parts.push(el("h3", null, "Migrations within a second of each step"), boxed({
        id: `jl-step-migrations-${k}`,
        columns: [
          { label: "step", value: (x) => x.s.step_t_ns, fmt: (v, x) => `${x.s.series} at ${fmtDur(v)}` },
          { label: "at", num: true, value: (x) => x.m?.t_ns, fmt: fmtDur },
          { label: "thread", value: (x) => (x.m ? `${x.m.comm}-${x.m.tid}` : "(none)") },
          { label: "from CPU", num: true, value: (x) => x.m?.from_cpu },
          { label: "to CPU", num: true, value: (x) => x.m?.to_cpu },
        ],
        rows,
      }));
    }
    if (e.spikes?.length) {
      parts.push(el("h3", null, "The latency probe's spikes, blamed"), boxed({
        id: `jl-spikes-${k}`,
        columns: [
          { label: "CPU", num: true, value: (x) => x.cpu },
          { label: "latency", num: true, value: (x) => x.latency_ns, fmt: fmtDur },
          { label: "at", num: true, value: (x) => x.t_ns, fmt: fmtDur },
          { label: "cause", value: (x) => x.cause, fmt: (v, x) => `${v.replace("_", " ")}${x.marked ? " (stopped the trace)" : ""}` },
          { label: "verdict", value: (x) => x.verdict, wrap: true },
          { label: "in the trace", value: (x) => x.t_ns, fmt: (v, x) => timelineLink(e.trace, [x.t_ns - x.latency_ns, x.t_ns]), title: "the wake-up in its trace's timeline: the cursors on the waking and the switch-in" },
        ],
        rows: e.spikes,
      }));
    }
    put(root, el("div", { class: "jl-explanation", dataset: { seq: e.seq } },
      section(`Run ${e.seq}${run ? `, ${run.warmup ? "warm-up" : `round ${run.round}`}` : ""}: ${cellLabel(r, e.cell)}`, null, parts)));
  });
}

/** The runs, the settings of the statistics and the machine. */
export function mountRuns(root, ctx) {
  const r = ctx.report;
  const c = r.config, m = r.machine;
  put(root,
    section("The statistics", null, facts([
      ["seed", String(r.seed), "seed"],
      ["intervals", `${Math.round(c.confidence * 100)}% percentile bootstrap, ${fmtCount(c.resamples)} resamples`],
      ["a real difference", `Holm-corrected Mann-Whitney p under ${c.alpha} and the ratio's interval beyond ${+(c.noise * 100).toPrecision(6)}% noise`],
      ["runs a cell needs", String(c.min_runs)],
      ["steps", `a shift of ${+(c.steps.min_shift * 100).toPrecision(6)}% held ${fmtDur(c.steps.min_hold_ns)}`],
    ])),
    section("The machine", null, m ? facts([
      ["host", m.hostname, "hostname"],
      ["kernel", m.kernel, "kernel"],
      ["CPUs", m.cpus, "cpus"],
      ["preemption", fmtOpt(m.preemption)],
      ["virtualization", fmtOpt(m.virtualization)],
    ]) : el("p", { class: "jl-not-recorded" }, "not recorded")),
    section("Runs", "in the order they ran", boxed({
      id: "jl-runs",
      columns: [
        { label: "run", num: true, value: (x) => x.seq },
        { label: "cell", value: (x) => cellLabel(r, x.cell) },
        { label: "round", num: true, value: (x) => x.round },
        { label: "warm-up", value: (x) => fmtBool(x.warmup) },
        { label: "traced", value: (x) => fmtBool(x.traced) },
        ...r.metrics.map((mt) => ({ label: mt.name, num: true, value: (x) => x.values[mt.name], fmt: (v) => expValue(v, mt.unit) })),
        // What else the machine did (context): CPU time over the run's wall time is CPUs.
        { label: "foreign", num: true, value: (x) => (x.context?.wall_ns ? x.context.foreign_ns / x.context.wall_ns : null), fmt: (v) => (v === null ? "-" : fixed(v, 2)), title: "CPUs that processes outside the experiment kept busy during the run" },
        { label: "most foreign", value: (x) => x.context?.foreign_top[0]?.comm ?? null, fmt: fmtOpt, title: "the foreign process that used most CPU time during the run" },
        { label: "steal", num: true, value: (x) => (x.context?.wall_ns && x.context.cpus.length ? x.context.cpus.reduce((a, c) => a + c.steal_ns, 0) / (x.context.wall_ns * x.context.cpus.length) : null), fmt: (v) => (v === null ? "-" : `${fixed(v * 100, 1)}%`), title: "of the CPUs' time during the run, taken by the host" },
        { label: "error", value: (x) => x.error, fmt: fmtOpt, wrap: true },
      ],
      rows: r.runs,
      rowAttrs: (x) => ({ class: x.error !== null ? "jl-failed" : null, dataset: { seq: x.seq } }),
    })),
  );
}
