// main.js: starts the viewer.
import { readMeta, readTimeline } from "./data.js";
import { mountTimeline } from "./timeline.js";
import { mountTaskView } from "./taskview.js";

// TEMPORARY (viewer-timeline): the timeline full-page, and the task view below it,
// until the page shell of viewer-pages lands (its main.js replaces this one).
async function start() {
  const t0 = performance.now();
  const meta = readMeta();
  if (meta.format !== 1) throw new Error(`report format ${meta.format}; this viewer reads format 1`);
  const lanes = await readTimeline(meta);
  const t1 = performance.now();
  window.jitterlab = { meta, lanes, decodeMs: t1 - t0 };
  if (!lanes) return;
  const tlEl = document.createElement("section");
  const tvEl = document.createElement("section");
  document.body.append(tlEl, tvEl);
  const ctx = { meta, lanes, report: meta.report.data, nav: null };
  let timeline = null;
  ctx.nav = {
    show() {},
    openTimeline(o) {
      if (o.t0 != null) timeline.goTo(o.t0, o.t1);
      if (o.slice != null) timeline.select({ cpu: o.cpu, slice: o.slice, reveal: o.t0 == null });
      tlEl.scrollIntoView();
    },
  };
  timeline = mountTimeline(tlEl, ctx);
  setTimeout(() => (window.jitterlab.taskview = mountTaskView(tvEl, ctx)), 100);
}

start().catch((e) => {
  const p = document.createElement("pre");
  p.className = "jl-error";
  p.textContent = `jitterlab: ${e.message}`;
  document.body.append(p);
  throw e;
});
