// data.js: reads what the binary embedded (docs/html.md): the meta JSON, and each CPU's
// columns, inflated with the browser's own DecompressionStream into typed arrays. The
// page is UTF-16LE and a block's compressed bytes are its UTF-16 units (blockBytes).
//
// Each CPU's rows come in chunks, each of two blocks: the draw blocks (slice times and
// tasks, wake-up slices and latencies, IRQ and softirq times, the overview) are inflated
// and decoded before readTimeline returns; the detail blocks (wake-up causes,
// priorities, flags, IRQ numbers...) right after, in the background: `lanes.complete`
// resolves when those columns are in place (reading one before throws an error saying
// so). A column is its chunks' parts one after the other.

/** The `jl-meta` element's JSON. */
export function readMeta(doc = document) {
  return JSON.parse(doc.getElementById("jl-meta").textContent);
}

/**
 * The bytes a data block's text carries (crates/render/src/export/htmltext.rs): the page
 * is UTF-16LE and each UTF-16 unit two bytes, the low one first; `=` and the unit XOR
 * 0x8000 for U+0000, U+000D, `<`, `=` and the surrogates; `=` and 0x0100 plus the byte
 * for a block's odd last byte.
 */
export function blockBytes(text) {
  const n = text.length;
  const out = new Uint8Array(2 * n);
  let j = 0;
  for (let i = 0; i < n; i++) {
    let u = text.charCodeAt(i);
    if (u === 0x3d) {
      u = text.charCodeAt(++i);
      if ((u & 0xff00) === 0x0100 && i === n - 1) {
        out[j++] = u & 0xff;
        break;
      }
      u ^= 0x8000;
    }
    out[j++] = u & 0xff;
    out[j++] = u >> 8;
  }
  return out.subarray(0, j);
}

/** Block `k` (the element `jl-data-K`), inflated. */
export async function readBlock(doc, k) {
  const el = doc.getElementById(`jl-data-${k}`);
  if (!el) throw new Error(`the report has no data block ${k}`);
  const size = Number(el.dataset.bytes);
  const ds = new DecompressionStream("deflate-raw");
  const w = ds.writable.getWriter();
  w.write(blockBytes(el.textContent)).catch(() => {});
  w.close().catch(() => {});
  const bytes = new Uint8Array(await new Response(ds.readable).arrayBuffer());
  if (bytes.length !== size) throw new Error(`data block ${k}: inflated to ${bytes.length} bytes, expected ${size}`);
  return bytes;
}

/**
 * The values of a `u32` or `u32x` column part (its `planes` lowest byte planes; in a
 * `u32x` the planes' all-ones value takes the next escaped f64), written into `out` from
 * index `at`.
 */
function planar(bytes, c, out, at) {
  const n = c.count, o = c.offset, p = c.planes ?? 4;
  if (p < 1 || p > 4 || o + p * n > bytes.length) throw new Error(`a column of ${n} values at ${o} (${p} planes) does not fit its block`);
  const b0 = o, b1 = o + n, b2 = o + 2 * n, b3 = o + 3 * n;
  if (p === 1) for (let i = 0; i < n; i++) out[at + i] = bytes[b0 + i];
  else if (p === 2) for (let i = 0; i < n; i++) out[at + i] = bytes[b0 + i] | (bytes[b1 + i] << 8);
  else if (p === 3) for (let i = 0; i < n; i++) out[at + i] = bytes[b0 + i] | (bytes[b1 + i] << 8) | (bytes[b2 + i] << 16);
  else for (let i = 0; i < n; i++) out[at + i] = (bytes[b0 + i] | (bytes[b1 + i] << 8) | (bytes[b2 + i] << 16) | (bytes[b3 + i] << 24)) >>> 0;
  if (c.type === "u32x" && c.big) {
    const escape = p === 4 ? 0xffffffff : (1 << (8 * p)) - 1;
    const view = new DataView(bytes.buffer, bytes.byteOffset);
    let big = o + p * n;
    for (let i = at; i < at + n; i++) {
      if (out[i] === escape) {
        out[i] = view.getFloat64(big, true);
        big += 8;
      }
    }
  }
}

/** The parts of a CPU's column `name`, one per chunk holding it, in order. */
function partsOf(cpu, name) {
  const out = [];
  for (const k of cpu.chunks) if (k.columns[name]) out.push(k.columns[name]);
  return out;
}

const count = (parts) => parts.reduce((n, c) => n + c.count, 0);

/**
 * A column's values, its parts one after the other: bytes (`u8`), or a Uint32Array, or
 * a Float64Array when a part escapes values past u32.
 */
function column(blocks, parts) {
  const n = count(parts);
  if (parts.every((c) => c.type === "u8")) {
    const out = new Uint8Array(n);
    let at = 0;
    for (const c of parts) {
      const bytes = blocks[c.block];
      if (c.offset + c.count > bytes.length) throw new Error(`a column of ${c.count} bytes at ${c.offset} does not fit its block`);
      out.set(bytes.subarray(c.offset, c.offset + c.count), at);
      at += c.count;
    }
    return out;
  }
  const out = parts.some((c) => c.big) ? new Float64Array(n) : new Uint32Array(n);
  let at = 0;
  for (const c of parts) {
    planar(blocks[c.block], c, out, at);
    at += c.count;
  }
  return out;
}

/**
 * `start` and `end` (Float64Arrays) of intervals from delta-coded starts and durations,
 * part by part: a part's first start counts from the previous part's last start, or
 * from its end with `"delta": "end"` (the first part's: from 0).
 */
function spans(blocks, cpu, prefix) {
  const ps = partsOf(cpu, `${prefix}.start`), pd = partsOf(cpu, `${prefix}.dur`);
  const n = count(ps);
  if (count(pd) !== n || ps.length !== pd.length) throw new Error(`${prefix}: ${n} starts but ${count(pd)} durations`);
  const start = new Float64Array(n), end = new Float64Array(n);
  let lastStart = 0, lastEnd = 0, at = 0;
  for (let k = 0; k < ps.length; k++) {
    const cs = ps[k], cd = pd[k];
    if (cs.count !== cd.count) throw new Error(`${prefix}: a chunk of ${cs.count} starts but ${cd.count} durations`);
    planar(blocks[cs.block], cs, start, at);
    planar(blocks[cd.block], cd, end, at);
    const to = at + cs.count;
    if (cs.delta === "end") {
      for (let i = at; i < to; i++) {
        const s = lastEnd + start[i];
        start[i] = s;
        lastEnd = s + end[i];
        end[i] = lastEnd;
      }
    } else {
      for (let i = at; i < to; i++) {
        const s = lastStart + start[i];
        start[i] = s;
        end[i] += s;
        lastStart = s;
      }
    }
    if (to > at) {
      lastStart = start[to - 1];
      lastEnd = end[to - 1];
    }
    at = to;
  }
  return { start, end };
}

/** The columns of one CPU whose blocks are all in `blocks`, set on `lane` by name. */
function decodeColumns(lane, cpu, blocks) {
  const has = (name) => {
    const parts = partsOf(cpu, name);
    return parts.length > 0 && parts.every((c) => blocks[c.block]);
  };
  const get = (name) => column(blocks, partsOf(cpu, name));
  const set = (obj, key, name) => {
    if (has(name)) Object.defineProperty(obj, key, { value: get(name), writable: true, enumerable: true, configurable: true });
  };
  const { slices, wakes, irqs, softirqs, overview } = lane;
  for (const [obj, prefix] of [[slices, "slices"], [irqs, "irqs"], [softirqs, "softirqs"]]) {
    if (has(`${prefix}.start`) && has(`${prefix}.dur`) && !obj.start) Object.assign(obj, spans(blocks, cpu, prefix));
  }
  set(slices, "task", "slices.task");
  set(slices, "prio", "slices.prio");
  set(slices, "flags", "slices.flags");
  if (has("wakes.slice")) {
    const ws = get("wakes.slice");
    let acc = 0;
    for (let i = 0; i < ws.length; i++) {
      acc += ws[i];
      ws[i] = acc;
    }
    wakes.slice = ws;
  }
  set(wakes, "lat", "wakes.lat");
  set(wakes, "waker", "wakes.waker");
  set(wakes, "wakerCpu", "wakes.waker_cpu");
  set(wakes, "wakerId", "wakes.waker_id");
  set(wakes, "vec", "wakes.vec");
  set(wakes, "irqExit", "wakes.irq_exit");
  set(wakes, "wakeup", "wakes.wakeup");
  set(wakes, "flags", "wakes.flags");
  set(irqs, "irq", "irqs.irq");
  set(irqs, "depth", "irqs.depth");
  set(softirqs, "vec", "softirqs.vec");
  set(softirqs, "raisedBy", "softirqs.raised_by");
  set(softirqs, "raise", "softirqs.raise");
  set(overview, "busy", "overview.busy");
  set(overview, "maxDur", "overview.max_dur");
  set(overview, "maxLat", "overview.max_lat");
  set(overview, "count", "overview.count");
}

/** Column names as the lanes call them. */
const JL_FIELDS = {
  "slices.prio": ["slices", "prio"], "slices.flags": ["slices", "flags"], "slices.task": ["slices", "task"],
  "wakes.slice": ["wakes", "slice"], "wakes.lat": ["wakes", "lat"], "wakes.waker": ["wakes", "waker"],
  "wakes.waker_cpu": ["wakes", "wakerCpu"], "wakes.waker_id": ["wakes", "wakerId"], "wakes.vec": ["wakes", "vec"],
  "wakes.irq_exit": ["wakes", "irqExit"], "wakes.wakeup": ["wakes", "wakeup"], "wakes.flags": ["wakes", "flags"],
  "irqs.irq": ["irqs", "irq"], "irqs.depth": ["irqs", "depth"], "softirqs.vec": ["softirqs", "vec"],
  "softirqs.raised_by": ["softirqs", "raisedBy"], "softirqs.raise": ["softirqs", "raise"],
};

/** A lane whose columns outside `ready` blocks throw until they are decoded. */
function emptyLane(c, ready) {
  const lane = { cpu: c.cpu, first: c.first, last: c.last, slices: {}, wakes: {}, irqs: {}, softirqs: {}, overview: {} };
  for (const chunk of c.chunks) {
    for (const [name, col] of Object.entries(chunk.columns)) {
      const f = JL_FIELDS[name];
      if (!f || ready.has(col.block) || Object.getOwnPropertyDescriptor(lane[f[0]], f[1])) continue;
      Object.defineProperty(lane[f[0]], f[1], {
        configurable: true,
        enumerable: true,
        get() {
          throw new Error(`jitterlab: CPU ${c.cpu}'s ${name} is read before its block is inflated (await lanes.complete)`);
        },
      });
    }
  }
  return lane;
}

/**
 * Every CPU's lanes, once their draw blocks are decoded. `lanes.complete` is a promise
 * of the same lanes with every column (the detail blocks, inflated in the background).
 */
export async function readTimeline(meta, doc = document) {
  const t = meta.timeline;
  if (!t) return null;
  performance.mark("jl:read");
  const drawBlocks = new Set(t.cpus.flatMap((c) => c.chunks.map((k) => k.block)));
  const lanes = t.cpus.map((c) => emptyLane(c, drawBlocks));
  await Promise.all(t.cpus.map(async (c, k) => {
    const blocks = {};
    await Promise.all(c.chunks.map(async (chunk) => { blocks[chunk.block] = await readBlock(doc, chunk.block); }));
    decodeColumns(lanes[k], c, blocks);
  }));
  performance.mark("jl:decoded");
  lanes.complete = (async () => {
    // After the first paint: the caller draws before this task's next turn.
    await new Promise((r) => setTimeout(r, 0));
    for (const [k, c] of t.cpus.entries()) {
      const blocks = {};
      for (const chunk of c.chunks) blocks[chunk.detail_block] = await readBlock(doc, chunk.detail_block);
      decodeColumns(lanes[k], c, blocks);
    }
    performance.mark("jl:decoded-all");
    return lanes;
  })();
  return lanes;
}
