// main.js: starts the viewer.
import { readMeta, readTimeline } from "./data.js";

async function start() {
  const meta = readMeta();
  if (meta.format !== 1) throw new Error(`report format ${meta.format}; this viewer reads format 1`);
  const lanes = await readTimeline(meta);
  const out = document.createElement("pre");
  out.id = "jl-status";
  out.textContent = `${meta.title}: ${meta.report.schema}` +
    (lanes ? `, ${lanes.map((l) => l.slices.start.length).reduce((a, b) => a + b, 0)} slices` : "");
  document.body.append(out);
  window.jitterlab = { meta, lanes, ready: true };
}

start().catch((e) => {
  const p = document.createElement("pre");
  p.className = "jl-error";
  p.textContent = `jitterlab: ${e.message}`;
  document.body.append(p);
  window.jitterlab = Object.assign(window.jitterlab || {}, { error: e.message });
});
