// svg.js: the plots' SVG: elements, scales, axes with ticks in the figures' units.

const SVG_NS = "http://www.w3.org/2000/svg";

/** An SVG element: `svgEl("path", { d, class }, ...children)`. */
export function svgEl(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") e.textContent = v;
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
    else e.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) if (c) e.append(c instanceof Node ? c : String(c));
  return e;
}

/** The colour of the k-th series (a CPU): a CSS variable of style.css, 8 of them. */
export function seriesColor(k) {
  return `var(--jl-series-${k % 8})`;
}

/** A linear scale from [d0, d1] to [r0, r1]. */
export function linear(d0, d1, r0, r1) {
  const k = d1 === d0 ? 0 : (r1 - r0) / (d1 - d0);
  const f = (x) => r0 + (x - d0) * k;
  f.invert = (y) => (k === 0 ? d0 : d0 + (y - r0) / k);
  f.domain = [d0, d1];
  return f;
}

/** A log10 scale from [d0, d1] (both > 0) to [r0, r1]. */
export function log10(d0, d1, r0, r1) {
  const l0 = Math.log10(d0), l1 = Math.log10(d1);
  const lin = linear(l0, l1, r0, r1);
  const f = (x) => lin(Math.log10(x));
  f.invert = (y) => 10 ** lin.invert(y);
  f.domain = [d0, d1];
  return f;
}

/** About `n` round tick values between a and b (1, 2, 5 times a power of ten apart). */
export function niceTicks(a, b, n = 6) {
  if (!(b > a)) return [a];
  const raw = (b - a) / n;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? 10 * p;
  const out = [];
  for (let v = Math.ceil(a / step) * step; v <= b + step * 1e-9; v += step) out.push(Math.round(v / step) * step);
  return out;
}

/** Powers of ten between a and b (both > 0). */
export function decadeTicks(a, b) {
  const out = [];
  for (let e = Math.ceil(Math.log10(a) - 1e-9); 10 ** e <= b * (1 + 1e-9); e++) out.push(10 ** e);
  return out;
}

/**
 * A plot frame: an <svg> of width x height with margins, an x and a y axis drawn from
 * `x` and `y` (scales over the inner area), their ticks and labels. Returns
 * { svg, plot (a <g> for the data), x, y, inner: { left, right, top, bottom } }.
 * opts: xTicks, yTicks (values), xFmt, yFmt (tick labels), xLabel, yLabel, title,
 * class.
 */
export function frame(opts) {
  const { width, height } = opts;
  const m = { left: 70, right: 20, top: 14, bottom: 44, ...opts.margin };
  const inner = { left: m.left, right: width - m.right, top: m.top, bottom: height - m.bottom };
  const x = opts.x(inner.left, inner.right);
  const y = opts.y(inner.bottom, inner.top);
  const svg = svgEl("svg", {
    class: `jl-plot ${opts.class ?? ""}`.trim(),
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    role: "img",
    "aria-label": opts.title,
  });
  if (opts.title) svg.append(svgEl("title", { text: opts.title }));
  const grid = svgEl("g", { class: "jl-grid" });
  const axes = svgEl("g", { class: "jl-axis" });
  for (const v of opts.xTicks ?? []) {
    const px = x(v);
    if (px < inner.left - 0.5 || px > inner.right + 0.5) continue;
    grid.append(svgEl("line", { x1: px, x2: px, y1: inner.top, y2: inner.bottom }));
    // A label centred on its tick, unless that would cut it at the frame's edge: then
    // it ends (or starts) at the tick.
    const text = (opts.xFmt ?? String)(v);
    const half = text.length * 3.5;
    const anchor = px + half > width ? "end" : px - half < 0 ? "start" : "middle";
    axes.append(svgEl("text", { x: px, y: inner.bottom + 16, "text-anchor": anchor, text }));
  }
  for (const v of opts.yTicks ?? []) {
    const py = y(v);
    if (py < inner.top - 0.5 || py > inner.bottom + 0.5) continue;
    grid.append(svgEl("line", { x1: inner.left, x2: inner.right, y1: py, y2: py }));
    axes.append(svgEl("text", { x: inner.left - 6, y: py + 4, "text-anchor": "end", text: (opts.yFmt ?? String)(v) }));
  }
  axes.append(svgEl("rect", { class: "jl-plot-box", x: inner.left, y: inner.top, width: inner.right - inner.left, height: inner.bottom - inner.top }));
  if (opts.xLabel) axes.append(svgEl("text", { class: "jl-axis-label", x: (inner.left + inner.right) / 2, y: height - 6, "text-anchor": "middle", text: opts.xLabel }));
  if (opts.yLabel) {
    axes.append(svgEl("text", {
      class: "jl-axis-label",
      transform: `translate(14 ${(inner.top + inner.bottom) / 2}) rotate(-90)`,
      "text-anchor": "middle",
      text: opts.yLabel,
    }));
  }
  const plot = svgEl("g", { class: "jl-plot-data" });
  svg.append(grid, plot, axes);
  return { svg, plot, x, y, inner };
}

/** A legend: one swatch and label per series. */
export function legend(items) {
  const div = document.createElement("div");
  div.className = "jl-legend";
  for (const { label, color, cls } of items) {
    const s = document.createElement("span");
    s.className = `jl-legend-item ${cls ?? ""}`.trim();
    const sw = document.createElement("i");
    sw.style.background = color;
    s.append(sw, label);
    div.append(s);
  }
  return div;
}

/** Tick labels of durations given in microseconds: `50 us`, `1.5 ms`, `2 s`. */
export function fmtUsTick(us) {
  if (us === 0) return "0";
  if (Math.abs(us) < 1000) return `${+us.toPrecision(4)} us`;
  if (Math.abs(us) < 1e6) return `${+(us / 1000).toPrecision(4)} ms`;
  return `${+(us / 1e6).toPrecision(4)} s`;
}

/** Tick labels of counts: 1, 10, 100, 1k, 10k, 1M. */
export function fmtCountTick(n) {
  if (n >= 1e6) return `${+(n / 1e6).toPrecision(3)}M`;
  if (n >= 1e3) return `${+(n / 1e3).toPrecision(3)}k`;
  return String(+n.toPrecision(3));
}
