// tables.js: DOM helpers, the units every figure is printed in (as the text output
// prints them: crates/render/src/units.rs), and sortable tables.

/** An element: `el("td", { class: "num", title: "..." }, child, "text", ...)`. */
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  setAttrs(e, attrs);
  appendAll(e, children);
  return e;
}

function setAttrs(e, attrs) {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
    else if (k === "dataset") Object.assign(e.dataset, v);
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
}

/** Appends `children` to `parent` as `el` does: nodes as they are, other values as
 * text, and null, undefined and false left out (the DOM's own `append` would write
 * "null"). */
export function put(parent, ...children) {
  appendAll(parent, children);
}

function appendAll(e, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
}

/** The largest count the model writes: u64::MAX ("saturated, at least that many"). */
const U64_MAX = 18446744073709551615;

/**
 * `x.toFixed(d)` for x = ns / scale (scale a power of ten), rounding as Rust's `{:.d}`
 * does: exact ties to even (JavaScript rounds them up), everything else as the exact
 * binary value says (both languages agree there).
 */
function fixedNs(ns, scale, d) {
  const x = ns / scale;
  const p = 10 ** d;
  const twice = 2 * ns * p;
  const k = Math.round(Math.log10(scale));
  // An exact tie: ns * p / scale is n + 1/2 exactly, and x is exact in binary.
  if (Number.isSafeInteger(twice) && twice % scale === 0 && (twice / scale) % 2 === 1 && ns % 5 ** k === 0) {
    const n = Math.floor((ns * p) / scale);
    return ((n % 2 === 0 ? n : n + 1) / p).toFixed(d);
  }
  return x.toFixed(d);
}

/**
 * `x.toFixed(d)`, rounding as Rust's `{:.d}` does: a value exactly halfway between two
 * results (0.125 to two decimals, 110.5 to none) goes to the even one, where JavaScript
 * goes up; everything else as the exact binary value says (both languages agree there).
 * So a figure reads the same on the page as in the text output.
 */
export function fixed(x, d) {
  if (!Number.isFinite(x)) return x.toFixed(d);
  const p = 10 ** d;
  const t = Math.abs(x) * p;
  const n = Math.floor(t);
  if (t - n === 0.5 && (n + 0.5) / p === Math.abs(x) && n % 2 === 0) {
    // An exact tie that toFixed would round away from the even n.
    return (Math.sign(x) * (n / p)).toFixed(d);
  }
  return x.toFixed(d);
}

/** A duration in ns as `850 ns`, `12.3 us`, `4.56 ms`, `1.23 s`, `2h03m`; null as `-`. */
export function fmtDur(ns) {
  if (ns === null || ns === undefined) return "-";
  if (ns < 1e3) return `${Math.round(ns)} ns`; // an average may be fractional
  if (ns < 1e6) return `${fixedNs(ns, 1e3, 1)} us`;
  if (ns < 1e9) return `${fixedNs(ns, 1e6, 2)} ms`;
  if (ns < 3600e9) return `${fixedNs(ns, 1e9, 2)} s`;
  const s = Math.floor(ns / 1e9);
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

/** A trace timestamp in ns as the kernel prints it: seconds with microseconds. */
export function fmtTs(ns) {
  if (ns === null || ns === undefined) return "-";
  const s = Math.floor(ns / 1e9);
  const us = Math.floor((ns - s * 1e9) / 1e3);
  return `${s}.${String(us).padStart(6, "0")}`;
}

/** A count with thousands separators; u64::MAX as "at least 18446744073709551615". */
export function fmtCount(n) {
  if (n === null || n === undefined) return "-";
  if (n >= U64_MAX) return "at least 18446744073709551615";
  return n.toLocaleString("en-US");
}

/** Lost events: a count, null for "some (count unknown)". */
export function fmtLost(n) {
  return n === null || n === undefined ? "some (count unknown)" : fmtCount(n);
}

/** `part` as a percentage of `whole`, one decimal. */
export function fmtPct(part, whole) {
  if (!whole || part === null || part === undefined) return "-";
  return `${((part * 100) / whole).toFixed(1)}%`;
}

/** A kernel priority for people: `rt 90`, `nice 0`, `dl`. */
export function fmtPrio(p) {
  if (p === null || p === undefined) return "-";
  if (p < 0) return "dl";
  if (p < 100) return `rt ${99 - p}`;
  return `nice ${p - 120}`;
}

/** A value or `-`. */
export function fmtOpt(v) {
  return v === null || v === undefined || v === "" ? "-" : String(v);
}

/** A yes/no flag. */
export function fmtBool(v) {
  return v === null || v === undefined ? "-" : v ? "yes" : "no";
}

/** A titled section of a page, with an optional note under the title. */
/**
 * A link to a trace's report beside this page (`TRACE.html`, `trace` relative to it) at
 * its timeline; with `span`, [from, to] in ns from the trace's first event, the view
 * shows that stretch and a little around it, with the two cursors on its ends.
 */
export function traceLink(trace, span) {
  let fragment = "view=timeline";
  if (span) {
    const [a, b] = span;
    const pad = Math.max((b - a) * 2, 20000);
    const secs = (ns) => (Math.max(0, ns) / 1e9).toFixed(9);
    fragment += `&t=${secs(a - pad)},${secs(b + pad)}&a=${secs(a)}&b=${secs(b)}`;
  }
  return `${trace.split("/").map(encodeURIComponent).join("/")}.html#${fragment}`;
}

/** A table cell's link into a trace's timeline, or "-" when the trace was not kept. */
export function timelineLink(trace, span, text = "timeline") {
  return trace
    ? el("a", { class: "jl-trace-link", href: traceLink(trace, span), title: `${trace}: its report, kept beside this page` }, text)
    : "-";
}

export function section(title, note, ...children) {
  return el("section", { class: "jl-section" }, el("h2", null, title), note ? el("p", { class: "jl-note" }, note) : null, ...children);
}

/** A definition list of [term, value, field] (value: text or a node; field: the
 * dd's data-field, naming the model's field for tests). */
export function facts(pairs, cls) {
  const dl = el("dl", { class: cls ? `jl-facts ${cls}` : "jl-facts" });
  for (const [k, v, field] of pairs) {
    if (v === undefined) continue;
    dl.append(el("dt", null, k), el("dd", { dataset: field ? { field } : null }, v));
  }
  return dl;
}

/** A small button-like link; `fn` runs on click (and Enter). */
export function action(label, fn, title) {
  return el("button", { type: "button", class: "jl-link", title, on: { click: fn } }, label);
}

function compareValues(a, b) {
  const na = a === null || a === undefined || Number.isNaN(a);
  const nb = b === null || b === undefined || Number.isNaN(b);
  if (na || nb) return na && nb ? 0 : na ? 1 : -1; // absent last, either way
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), "en", { numeric: true });
}

/**
 * A sortable table.
 * - columns: [{ label, value: row => raw value (sorted on), fmt: (value, row) => text or
 *   node (default: the value), num: true for right-aligned numbers (sorted numerically),
 *   title, wrap: true to let long cells wrap, lines: true to break them at their
 *   newlines only }]
 * - rows: the rows; or groups: [{ head: a row or null, title: text or null, rows: [...] }]
 *   (each group a tbody: its head row first, or its title across the whole row, sorted
 *   by its head, its rows sorted among themselves)
 * - sort: { col, desc } initially; id, caption, rowAttrs: row => attributes of its tr
 */
export function table(spec) {
  const { columns } = spec;
  const groups = spec.groups ?? [{ head: null, rows: spec.rows }];
  const t = el("table", { class: `jl-table ${spec.class ?? ""}`.trim(), id: spec.id });
  const csv = el("button", {
    type: "button", class: "jl-csv", title: "this table as CSV, in the order shown (durations and times in ns)",
    on: { click: () => download(`${spec.id ?? "table"}.csv`, new Blob([tableCsv(columns, shownRows())], { type: "text/csv" })) },
  }, "CSV");
  t.append(el("caption", null, spec.caption ?? null, csv));
  const headRow = el("tr");
  let state = { col: spec.sort?.col ?? -1, desc: spec.sort?.desc ?? false };
  const buttons = columns.map((c, i) => {
    const b = el("button", { type: "button", class: "jl-sort", title: c.title ? `${c.title} (click to sort)` : "click to sort" }, c.label);
    b.addEventListener("click", () => {
      state = { col: i, desc: state.col === i ? !state.desc : !!c.num };
      render();
    });
    headRow.append(el("th", { class: c.num ? "num" : null, scope: "col" }, b));
    return b;
  });
  t.append(el("thead", null, headRow));
  const cell = (c, row, head) => {
    const v = c.value(row);
    const shown = c.fmt ? c.fmt(v, row) : v;
    const cls = [c.num ? "num" : null, c.wrap ? "wrap" : null, c.lines ? "lines" : null].filter(Boolean).join(" ") || null;
    return el(head ? "th" : "td", { class: cls, scope: head ? "row" : null }, shown === null || shown === undefined ? "-" : shown);
  };
  const bodies = groups.map((g) => {
    const body = el("tbody", { class: g.head || g.title ? "jl-group" : null });
    const headTr = g.head
      ? el("tr", { class: "jl-group-head", ...(spec.rowAttrs?.(g.head, true) ?? {}) }, columns.map((c) => cell(c, g.head, false)))
      : g.title
        ? el("tr", { class: "jl-group-head" }, el("th", { colspan: columns.length, scope: "rowgroup" }, el("span", { class: "jl-group-title" }, g.title)))
        : null;
    const trs = g.rows.map((r) => ({ row: r, tr: el("tr", spec.rowAttrs?.(r, false) ?? null, columns.map((c) => cell(c, r, false))) }));
    return { g, body, headTr, trs };
  });
  const render = () => {
    columns.forEach((c, i) => {
      const th = buttons[i].parentElement;
      if (i === state.col) th.setAttribute("aria-sort", state.desc ? "descending" : "ascending");
      else th.removeAttribute("aria-sort");
    });
    const order = (a, b) => {
      if (state.col < 0) return 0;
      const c = columns[state.col];
      const r = compareValues(c.value(a), c.value(b));
      const absent = (x) => { const v = c.value(x); return v === null || v === undefined; };
      if (absent(a) || absent(b)) return r; // absent values stay last
      return state.desc ? -r : r;
    };
    const key = (x) => x.g.head ?? x.g.rows[0];
    const sorted = state.col < 0 ? bodies : [...bodies].sort((a, b) => order(key(a), key(b)));
    for (const b of sorted) {
      const trs = state.col < 0 ? b.trs : [...b.trs].sort((x, y) => order(x.row, y.row));
      b.body.replaceChildren(...(b.headTr ? [b.headTr] : []), ...trs.map((x) => x.tr));
      t.append(b.body);
    }
  };
  // The rows in the order shown (a group's head row first).
  const shownRows = () => [...t.tBodies].flatMap((b) => [...b.rows]).map((tr) => rowOf.get(tr)).filter((r) => r !== undefined);
  const rowOf = new Map();
  for (const b of bodies) {
    if (b.headTr && b.g.head) rowOf.set(b.headTr, b.g.head);
    for (const x of b.trs) rowOf.set(x.tr, x.row);
  }
  render();
  return t;
}

/** The text of a cell's content (a string, a number or a node). */
function cellText(v) {
  return v === null || v === undefined ? "-" : v instanceof Node ? v.textContent : String(v);
}

/** B/A of two values, when both are numbers and A is not 0. */
export function ratioOf(a, b) {
  return typeof a === "number" && typeof b === "number" && a !== 0 ? b / a : null;
}

/** A ratio as `×1.25`. */
export function fmtRatio(r) {
  if (r === null || r === undefined || !Number.isFinite(r)) return "-";
  return `×${r >= 100 ? r.toFixed(0) : r >= 10 ? r.toFixed(1) : r.toFixed(2)}`;
}

/**
 * Two results' rows in one table (a compare page): A's and B's rows paired by
 * `spec.key(row)` (rows of one key in the order each side lists them: the first of A
 * with the first of B), A's rows first, then what only B has. The first `spec.keyCols`
 * columns name the row (both sides' text when they differ: `iperf3-7811 | iperf3-7892`);
 * every other number column becomes three, A, B and B/A (a time of the trace, `at`,
 * two: the traces have their own clocks); other columns two, A and B.
 * `spec.columns` and `spec.rows` are [A's, B's]; the rest is as `table` takes it.
 */
export function compareTable(spec) {
  const [colsA, colsB] = spec.columns;
  const keyCols = spec.keyCols ?? 1;
  const pairs = [];
  const byKey = new Map();
  const place = (side, rows) => {
    const seen = new Map();
    for (const r of rows) {
      const k0 = String(spec.key(r));
      const n = seen.get(k0) ?? 0;
      seen.set(k0, n + 1);
      const k = `${k0}\u0000${n}`;
      let p = byKey.get(k);
      if (!p) {
        p = { a: null, b: null, key: k0 };
        byKey.set(k, p);
        pairs.push(p);
      }
      p[side] = r;
    }
  };
  place("a", spec.rows[0]);
  place("b", spec.rows[1]);
  const of = (col, side) => (p) => (p[side] ? col.value(p[side]) : null);
  const shown = (col, side) => (v, p) => (p[side] && col.fmt ? col.fmt(v, p[side]) : v);
  const columns = [];
  colsA.forEach((ca, i) => {
    const cb = colsB[i];
    if (i < keyCols) {
      columns.push({
        ...ca,
        value: (p) => (p.a ? ca.value(p.a) : cb.value(p.b)),
        fmt: (v, p) => {
          const fa = p.a ? shown(ca, "a")(ca.value(p.a), p) : null;
          const fb = p.b ? shown(cb, "b")(cb.value(p.b), p) : null;
          // Which side lacks the row, said once, in the first column.
          if (!p.a) return i ? fb : el("span", null, el("span", { class: "jl-side" }, "B only: "), fb);
          if (!p.b) return i ? fa : el("span", null, fa, el("span", { class: "jl-side" }, " (A only)"));
          return cellText(fa) === cellText(fb) ? fa : el("span", null, fa, el("span", { class: "jl-side" }, " | "), fb);
        },
      });
      return;
    }
    const title = ca.title ? `${ca.title}: ` : "";
    columns.push({ ...ca, label: `${ca.label} A`, title: `${title}A`, value: of(ca, "a"), fmt: shown(ca, "a") });
    columns.push({ ...cb, label: `${cb.label} B`, title: `${title}B`, value: of(cb, "b"), fmt: shown(cb, "b") });
    // A time of the trace (`at`) has no ratio: each trace has its own clock.
    if (ca.num && !ca.at) {
      columns.push({
        label: "B/A", title: `${title}B / A`, num: true, ratio: true,
        value: (p) => ratioOf(p.a ? ca.value(p.a) : null, p.b ? cb.value(p.b) : null),
        fmt: fmtRatio,
      });
    }
  });
  return table({
    ...spec,
    class: `${spec.class ?? ""} jl-compare`.replace("jl-grouped", "").trim(),
    columns,
    rows: pairs,
    groups: undefined,
    sort: spec.sort ? { col: columns.findIndex((c) => c.label === `${colsA[spec.sort.col]?.label} A`), desc: spec.sort.desc } : undefined,
    rowAttrs: (p) => {
      const attrs = spec.rowAttrs?.(p.a ?? p.b, false) ?? {};
      return { ...attrs, dataset: { ...attrs.dataset, key: p.key }, class: [attrs.class, p.a ? null : "jl-b-only", p.b ? null : "jl-a-only"].filter(Boolean).join(" ") || null };
    },
  });
}

/** A CSV field: quoted when it holds a comma, a quote or a line break. */
function csvField(v) {
  if (v === null || v === undefined) return "";
  const text = typeof v === "number" || typeof v === "boolean" ? String(v) : typeof v === "string" ? v : v instanceof Node ? v.textContent : String(v);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** `rows` of a table as CSV: the columns' labels, then each row's cells. A duration or
 * a count is the model's number (a duration in ns, and " (ns)" added to its label), so
 * that a spreadsheet sorts and sums it; any other cell is the text the page shows. */
export function tableCsv(columns, rows) {
  const raw = (c) => c.fmt === fmtDur || c.fmt === fmtCount;
  const lines = [columns.map((c) => csvField(c.fmt === fmtDur ? `${c.label} (ns)` : c.label)).join(",")];
  for (const r of rows) {
    lines.push(columns.map((c) => {
      const v = c.value(r);
      if (v === null || v === undefined) return "";
      if (raw(c) && typeof v === "number") return csvField(v);
      return csvField(c.fmt ? c.fmt(v, r) : v);
    }).join(","));
  }
  return `${lines.join("\r\n")}\r\n`;
}

/** Saves `blob` as the file `name` (a download of a blob: URL made here: nothing
 * leaves the page). */
export function download(name, blob) {
  const url = URL.createObjectURL(blob);
  const a = el("a", { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}
