// main.js: starts the viewer: decodes the report (data.js), draws the header and the
// tabs, mounts each page when it is first shown, and keeps the shown tab in the URL
// fragment as `view=NAME` (other keys of the fragment, like the timeline's `t=`, are
// left as they are). Sets window.jitterlab.ready when the first page is drawn, or
// window.jitterlab.error with what went wrong. A compare page (meta.compare) reads both
// traces' data, gives every page a ctx.other (B's), and has a Timelines tab instead of
// the timeline and the task view (web/compare.js).
import { readMeta, readTimeline } from "./data.js";
import { el, fmtCount, fmtDur, fmtLost, fmtTs } from "./tables.js";
import { mountBlame, mountCpus, mountFunctions, mountIrqs, mountSummary, mountTaskTable } from "./sections.js";
import { mountHistograms, mountOverTime, mountPercentiles, mountRun, mountSpikes } from "./latency.js";
import { expNotes, expSubtitle, mountResults, mountRuns, mountSeries, mountTraces } from "./experiment.js";
import { auditNotes, auditSubtitle, mountAuditFindings, mountAuditMeasured, mountAuditRecommendations, mountAuditVerdict } from "./audit.js";

/** The fragment key of the shown tab. */
const VIEW_KEY = "view";

/** The value of `key` in the URL fragment (`#view=irqs&t=1,2`), or null. */
export function fragmentGet(key) {
  for (const part of location.hash.replace(/^#/, "").split("&")) {
    const i = part.indexOf("=");
    if (i > 0 && decodeURIComponent(part.slice(0, i)) === key) return decodeURIComponent(part.slice(i + 1));
  }
  return null;
}

/** Sets `key` in the URL fragment, keeping every other key as it is (pushes a history
 * entry when `push`, so Back returns to the previous tab). */
export function fragmentSet(key, value, push = false) {
  const prefix = `${encodeURIComponent(key)}=`;
  const parts = location.hash.replace(/^#/, "").split("&").filter((p) => p && !p.startsWith(prefix));
  if (value !== null && value !== undefined) parts.unshift(prefix + encodeURIComponent(value));
  const url = `${location.pathname}${location.search}${parts.length ? `#${parts.join("&")}` : ""}`;
  if (push) history.pushState(null, "", url);
  else history.replaceState(null, "", url);
}

const hasTimeline = (ctx) => !!ctx.lanes;

/** The tabs of a trace's report, in order; a tab is there when `when(ctx)`. */
const ANALYZE_TABS = [
  // The timeline and the task view are other modules' (web/timeline.js, web/taskview.js).
  { id: "timeline", label: "Timeline", when: (c) => hasTimeline(c) && typeof mountTimeline === "function", mount: (e, c) => mountTimeline(e, c) },
  { id: "tasks", label: "Tasks", title: "the task view", when: (c) => hasTimeline(c) && typeof mountTaskView === "function", mount: (e, c) => mountTaskView(e, c) },
  { id: "summary", label: "Summary", when: (c) => c.report.summary, mount: mountSummary },
  { id: "cpus", label: "CPUs", when: (c) => c.report.cpus, mount: mountCpus },
  { id: "tasktable", label: "Tasks table", when: (c) => c.report.tasks, mount: mountTaskTable },
  { id: "irqs", label: "IRQs", when: (c) => c.report.irqs, mount: mountIrqs },
  { id: "blame", label: "Blame", when: (c) => c.report.blame, mount: mountBlame },
  { id: "functions", label: "Functions", when: (c) => c.report.functions, mount: mountFunctions },
];

/** The tabs of a compare page: the two timelines, then the sections as A, B and B/A. */
const COMPARE_TABS = [
  { id: "timeline", label: "Timelines", title: "A's timeline over B's, on one time axis", when: (c) => hasTimeline(c) || hasTimeline(c.other), mount: (e, c) => mountCompareTimelines(e, c) },
  ...ANALYZE_TABS.filter((t) => !["timeline", "tasks"].includes(t.id)).map((t) => ({ ...t, when: (c) => t.when(c) || t.when(c.other) })),
];

/** The tabs of a latency result. */
const LATENCY_TABS = [
  { id: "histograms", label: "Histograms", when: () => true, mount: mountHistograms },
  { id: "percentiles", label: "Percentiles", when: () => true, mount: mountPercentiles },
  { id: "overtime", label: "Over time", when: () => true, mount: mountOverTime },
  { id: "spikes", label: "Spikes", when: () => true, mount: mountSpikes },
  { id: "run", label: "Run", when: () => true, mount: mountRun },
];

/** The tabs of an experiment's result. */
const EXPERIMENT_TABS = [
  { id: "results", label: "Results", when: () => true, mount: mountResults },
  { id: "series", label: "Series", when: () => true, mount: mountSeries },
  { id: "traces", label: "Traces", title: "what the traced runs show", when: (c) => c.report.explanations?.length > 0, mount: mountTraces },
  { id: "runs", label: "Runs", when: () => true, mount: mountRuns },
];

/** The tabs of an audit's result. */
const AUDIT_TABS = [
  { id: "verdict", label: "Verdict", when: () => true, mount: mountAuditVerdict },
  { id: "findings", label: "Findings", when: () => true, mount: mountAuditFindings },
  { id: "recommendations", label: "Recommendations", when: () => true, mount: mountAuditRecommendations },
  { id: "measured", label: "Measured", title: "the latency probe, its blamed spikes, the noise probe", when: (c) => !!c.report.measured, mount: mountAuditMeasured },
];

/** Each schema's tabs (a trace's by default). */
const TABS_OF = { "jitterlab.latency": LATENCY_TABS, "jitterlab.experiment": EXPERIMENT_TABS, "jitterlab.audit": AUDIT_TABS };

/** What the header says under the title. */
function subtitle(meta) {
  const r = meta.report.data;
  if (meta.report.schema === "jitterlab.experiment") return expSubtitle(r);
  if (meta.report.schema === "jitterlab.audit") return auditSubtitle(r);
  if (meta.report.schema === "jitterlab.latency") {
    const cpus = (r.cpus ?? []).map((c) => c.cpu).join(", ");
    const env = r.environment ?? {};
    return `latency probe: CPUs ${cpus || "-"}, ${fmtDur(r.wall_ns)}${env.kernel_release ? `, kernel ${env.kernel_release}` : ""}`;
  }
  const src = r.source ?? {};
  const s = r.summary;
  const span = s ? `, ${fmtDur(s.span_ns)} from ${fmtTs(s.start_ns)} s` : "";
  const cpus = src.cpus ?? s?.cpus;
  return `${src.format ?? "trace"}${cpus ? `, ${cpus} CPUs` : ""}${span}`;
}

/** The header's notes: what the user should know before reading any number. */
function notes(meta) {
  const r = meta.report.data;
  if (meta.report.schema === "jitterlab.experiment") return expNotes(r);
  if (meta.report.schema === "jitterlab.audit") return auditNotes(r);
  const out = [];
  for (const w of r.warnings ?? []) out.push({ cls: "warn", text: w });
  if (meta.report.schema === "jitterlab.latency") {
    if (r.failed) out.push({ cls: "warn", text: `failed: a latency exceeded --fail-above ${fmtDur(r.fail_above_ns)}` });
    if (r.cancelled) out.push({ cls: "warn", text: "the run was cancelled before its end: the figures cover the part that ran" });
    if (r.break_hit) out.push({ cls: "warn", text: `--break hit: ${fmtDur(r.break_hit.latency_ns)} on CPU ${r.break_hit.cpu} at sample ${fmtCount(r.break_hit.sample)}${r.break_hit.traced ? "; tracing was turned off there" : ""}` });
    return out;
  }
  const s = r.summary;
  if (s) {
    const lost = s.lost_per_cpu.map((l, cpu) => [cpu, l]).filter(([, l]) => l !== 0);
    if (lost.length) {
      out.push({ cls: "warn", text: `events were lost (ring-buffer overruns): ${lost.map(([c, l]) => `CPU ${c}: ${fmtLost(l)}`).join(", ")}; the state of those CPUs is unknown around them` });
    } else if (!s.lost_recorded) {
      out.push({ cls: "warn", text: "lost events: unknown (this format does not record them)" });
    }
    if (s.skipped > 0) out.push({ cls: "warn", text: `records skipped as undecodable: ${fmtCount(s.skipped)}` });
  }
  const f = r.filter;
  if (f) {
    const what = [];
    if (f.from_ns !== null && f.from_ns !== undefined) what.push(`from ${fmtTs(f.from_ns)} s`);
    if (f.to_ns !== null && f.to_ns !== undefined) what.push(`to ${fmtTs(f.to_ns)} s`);
    if (f.cpus) what.push(`CPUs ${f.cpus}`);
    if (f.pid !== null && f.pid !== undefined) what.push(`process ${f.pid}`);
    out.push({ cls: "info", text: `only ${what.join(", ")}` });
  }
  const lo = meta.timeline?.left_out;
  if (lo) {
    out.push({
      cls: "warn",
      text: `the timeline stops at +${fmtDur(lo.after)}: ${fmtCount(lo.slices)} slices, ${fmtCount(lo.irqs + lo.softirqs)} IRQ and softirq spans and ${fmtCount(lo.wakes)} wake-ups after it are not in this file (over --max-slices ${fmtCount(lo.max_slices)}); the tables cover the whole trace. To see them: a narrower --from/--to, --cpu, or a higher --max-slices`,
    });
  }
  if (meta.report.schema === "jitterlab.analyze" && !meta.timeline) {
    out.push({ cls: "info", text: "a saved result: no timeline (jitterlab view TRACE draws one)" });
  }
  return out;
}

function header(meta) {
  if (meta.compare) return compareHeader(meta);
  const list = notes(meta);
  return el("header", { class: "jl-header" },
    el("div", { class: "jl-titles" },
      el("h1", { id: "jl-title" }, meta.title),
      el("p", { class: "jl-subtitle", id: "jl-source" }, subtitle(meta)),
      el("p", { class: "jl-generator" }, `${meta.generator} · ${meta.report.schema} v${meta.report.version}`)),
    list.length ? el("ul", { class: "jl-notes", id: "jl-notes" }, list.map((n) => el("li", { class: `jl-note-${n.cls}` }, n.text))) : null);
}

/** A compare page's header: each side's source and notes, under its name. */
function compareHeader(meta) {
  const sides = [meta, compareSide(meta)];
  const names = [meta.compare.a, meta.compare.b];
  const list = sides.flatMap((m, i) => notes(m).map((n) => ({ ...n, text: `${i ? "B" : "A"}: ${n.text}` })));
  return el("header", { class: "jl-header" },
    el("div", { class: "jl-titles" },
      el("h1", { id: "jl-title" }, meta.title),
      sides.map((m, i) => el("p", { class: "jl-subtitle", id: i ? "jl-source-b" : "jl-source" }, `${i ? "B" : "A"}: ${names[i]}: ${subtitle(m)}`)),
      el("p", { class: "jl-generator" }, `${meta.generator} · ${meta.report.schema} v${meta.report.version}, two compared`)),
    list.length ? el("ul", { class: "jl-notes", id: "jl-notes" }, list.map((n) => el("li", { class: `jl-note-${n.cls}` }, n.text))) : null);
}

/** Shows an error plainly at the top of the page. */
function showError(message, where) {
  const box = el("div", { class: "jl-error", role: "alert" }, el("strong", null, "This report could not be shown"), el("pre", null, message));
  (where ?? document.getElementById("jl-app") ?? document.body).prepend(box);
}

async function start() {
  const meta = readMeta();
  if (meta.format !== 3) throw new Error(`report format ${meta.format}; this viewer reads format 3 (another jitterlab wrote it: open it with that one's view)`);
  if (!meta.report || !meta.report.data) throw new Error("the report holds no result (meta.report.data)");
  const app = el("div", { id: "jl-app" });
  document.body.append(app);
  app.append(header(meta));

  const metaB = meta.compare ? compareSide(meta) : null;
  let dataError = null;
  const [lanes, lanesB] = await Promise.all([meta, metaB].map(async (m, i) => {
    if (!m) return null;
    try {
      return await readTimeline(m);
    } catch (e) {
      // The tables are still worth showing without the timeline.
      const what = metaB ? `${i ? "B" : "A"}'s timeline` : "the timeline";
      dataError = `${what}'s data could not be read: ${e.message}`;
      showError(`${dataError}\nThe tables below come from the report's JSON; ${what} and the task view are left out.`, app);
      return null;
    }
  }));

  const tabs = [];
  const panels = new Map();
  const views = {};
  const ctx = { meta, lanes, report: meta.report.data, nav: null, name: meta.compare?.a ?? meta.title, other: null };
  if (metaB) ctx.other = { meta: metaB, lanes: lanesB, report: metaB.report.data, nav: null, name: meta.compare.b, other: null };
  const byId = (id) => tabs.find((t) => t.id === id);
  let current = null;

  const tablist = el("nav", { class: "jl-tabs", role: "tablist", "aria-label": "pages" });
  const main = el("main", { class: "jl-main" });

  function show(id, push = false) {
    const tab = byId(id) ?? tabs[0];
    if (!tab) return;
    if (current !== tab.id) {
      for (const t of tabs) {
        const on = t === tab;
        t.button.setAttribute("aria-selected", String(on));
        t.button.tabIndex = on ? 0 : -1;
        panels.get(t.id).hidden = !on;
      }
      current = tab.id;
    }
    if (!tab.mounted) {
      tab.mounted = true;
      const panel = panels.get(tab.id);
      try {
        views[tab.id] = tab.mount(panel, ctx) ?? null;
      } catch (e) {
        console.error(e);
        panel.prepend(el("div", { class: "jl-error", role: "alert" }, el("strong", null, `The ${tab.label} page failed`), el("pre", null, e.message)));
      }
    }
    if (fragmentGet(VIEW_KEY) !== tab.id) fragmentSet(VIEW_KEY, tab.id, push);
  }

  // The shell's navigation, for side `side` of a compare page (0: A, 1: B).
  const navOf = (side) => ({
    show: (id) => show(id, true),
    openTimeline({ t0, t1, cpu, slice } = {}) {
      if (!byId("timeline")) return false;
      show("timeline", true);
      const tl = metaB ? views.timeline?.side(side) : views.timeline;
      if (!tl) return false;
      if (t0 !== undefined && t1 !== undefined) tl.goTo(t0, t1);
      if (cpu !== undefined && cpu !== null) tl.select({ cpu, slice });
      return true;
    },
    /** Whether openTimeline can go anywhere. */
    canOpenTimeline: () => !!byId("timeline") && !!(side ? lanesB : lanes),
  });
  const nav = navOf(0);
  ctx.nav = nav;
  if (ctx.other) ctx.other.nav = navOf(1);

  const all = metaB ? COMPARE_TABS : TABS_OF[meta.report.schema] ?? ANALYZE_TABS;
  for (const t of all) {
    if (!t.when(ctx)) continue;
    const tab = { ...t, mounted: false };
    tab.button = el("button", {
      type: "button", role: "tab", id: `jl-tab-${t.id}`, class: "jl-tab", "aria-controls": `jl-page-${t.id}`,
      "aria-selected": "false", tabindex: "-1", title: t.title, dataset: { view: t.id },
      on: { click: () => show(t.id, true) },
    }, t.label);
    tablist.append(tab.button);
    const panel = el("section", { class: "jl-page", id: `jl-page-${t.id}`, role: "tabpanel", "aria-labelledby": `jl-tab-${t.id}`, hidden: true, tabindex: "-1" });
    panels.set(t.id, panel);
    main.append(panel);
    tabs.push(tab);
  }
  if (!tabs.length) throw new Error(`the report has nothing this viewer shows (schema ${meta.report.schema})`);
  tablist.addEventListener("keydown", (ev) => {
    const i = tabs.findIndex((t) => t.id === current);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[ev.key];
    if (to === undefined) return;
    ev.preventDefault();
    const t = tabs[(to + tabs.length) % tabs.length];
    show(t.id, true);
    t.button.focus();
  });
  app.append(tablist, main);
  const fromUrl = () => show(fragmentGet(VIEW_KEY) ?? tabs[0].id);
  window.addEventListener("hashchange", fromUrl);
  window.addEventListener("popstate", fromUrl);

  window.jitterlab = {
    meta, lanes, nav, ctx, views,
    tabs: tabs.map((t) => t.id),
    view: () => current,
    block: (k) => readBlock(document, k),
    rawBlock: (k) => blockBytes(document.getElementById(`jl-data-${k}`).textContent),
    ready: false,
    error: dataError,
  };
  fromUrl();
  window.jitterlab.ready = true;
}

start().catch((e) => {
  showError(e.message);
  window.jitterlab = Object.assign(window.jitterlab || {}, { error: e.message });
});
