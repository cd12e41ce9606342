// tlformat.js: how the timeline and task view write times and durations: as the text
// report does (crates/render/src/units.rs duration_ns, analyze's seconds), so a figure
// on the page can be found in `jitterlab analyze`'s output.

/** `x` with `p` decimals as Rust's `{:.p}` writes it: an exact tie rounds to even. */
export function tlFixed(x, p) {
  const exact = x.toFixed(60);
  const dot = exact.indexOf(".");
  if (/^50*$/.test(exact.slice(dot + 1 + p))) {
    const cut = exact.slice(0, p ? dot + 1 + p : dot);
    if (Number(cut[cut.length - 1]) % 2 === 0) return cut;
  }
  return x.toFixed(p);
}

/** A duration in ns as `850 ns`, `12.3 us`, `4.56 ms`, `1.23 s` (units::duration_ns). */
export function tlDur(ns) {
  if (ns == null || Number.isNaN(ns)) return "-";
  const neg = ns < 0;
  const a = Math.abs(Math.round(ns));
  let s;
  if (a < 1e3) s = `${a} ns`;
  else if (a < 1e6) s = `${tlFixed(a / 1e3, 1)} us`;
  else if (a < 1e9) s = `${tlFixed(a / 1e6, 2)} ms`;
  else s = `${tlFixed(a / 1e9, 2)} s`;
  return neg ? `-${s}` : s;
}

/** An absolute trace time (origin_ns + relative ns) in seconds as analyze prints it. */
export function tlAbs(meta, rel) {
  const o = meta.timeline.origin_ns;
  // origin_ns may pass 2^53: split it so the sum stays exact to the microsecond.
  const sec = Math.floor(o / 1e9);
  const ns = o - sec * 1e9 + Math.round(rel);
  const s = sec + Math.floor(ns / 1e9);
  const frac = ns - Math.floor(ns / 1e9) * 1e9;
  return `${s}.${String(Math.floor(frac / 1e3)).padStart(6, "0")}`;
}

/** A relative time in seconds with nine decimals (the URL fragment's unit). */
export function tlRelSecs(rel) {
  return (rel / 1e9).toFixed(9);
}

/** A tick label of the time axis: the value in the unit of the step. */
export function tlTick(t, step) {
  const units = [[1e9, "s"], [1e6, "ms"], [1e3, "us"], [1, "ns"]];
  let [div, name] = units.find(([d]) => step >= d) || units[3];
  // Past 1000 of the step's unit, seconds with as many decimals as the step needs.
  if (Math.abs(t) / div >= 1000 && div < 1e9) {
    [div, name] = [1e9, "s"];
  }
  const dec = Math.max(0, Math.ceil(-Math.log10(step / div) - 1e-9));
  return `${(t / div).toFixed(dec)} ${name}`;
}

/** Text made safe for innerHTML. */
export function tlEsc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
