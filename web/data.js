// data.js: reads what the binary embedded (docs/html.md): the meta JSON, and each CPU's
// columns, inflated with the browser's own DecompressionStream into typed arrays. The
// page is UTF-16LE and a block's compressed bytes are its UTF-16 units (blockBytes).
//
// Each CPU has two blocks: its draw block (slice times and tasks, wake-up slices and
// latencies, IRQ and softirq times, the overview) is inflated and decoded before
// readTimeline returns; its detail block (wake-up causes, priorities, flags, IRQ
// numbers...) right after, in the background: `lanes.complete` resolves when those
// columns are in place (reading one before throws an error saying so).

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

function u8(bytes, c) {
  return bytes.slice(c.offset, c.offset + c.count);
}

/**
 * The values of a `u32` or `u32x` column (its `planes` lowest byte planes; in a `u32x`
 * the planes' all-ones value takes the next escaped f64), plus `add` (a running sum
 * when `add` is true). A u32 column or a u32x without escapes is a Uint32Array, else a
 * Float64Array; `into` (a Float64Array) takes them instead when given.
 */
function planar(bytes, c, into = null) {
  const n = c.count, o = c.offset, p = c.planes ?? 4;
  if (p < 1 || p > 4 || o + p * n > bytes.length) throw new Error(`a column of ${n} values at ${o} (${p} planes) does not fit its block`);
  const out = into ?? (c.big ? new Float64Array(n) : new Uint32Array(n));
  const b0 = o, b1 = o + n, b2 = o + 2 * n, b3 = o + 3 * n;
  if (p === 1) for (let i = 0; i < n; i++) out[i] = bytes[b0 + i];
  else if (p === 2) for (let i = 0; i < n; i++) out[i] = bytes[b0 + i] | (bytes[b1 + i] << 8);
  else if (p === 3) for (let i = 0; i < n; i++) out[i] = bytes[b0 + i] | (bytes[b1 + i] << 8) | (bytes[b2 + i] << 16);
  else for (let i = 0; i < n; i++) out[i] = (bytes[b0 + i] | (bytes[b1 + i] << 8) | (bytes[b2 + i] << 16) | (bytes[b3 + i] << 24)) >>> 0;
  if (c.type === "u32x" && c.big) {
    const escape = p === 4 ? 0xffffffff : (1 << (8 * p)) - 1;
    const view = new DataView(bytes.buffer, bytes.byteOffset);
    let big = o + p * n;
    for (let i = 0; i < n; i++) {
      if (out[i] === escape) {
        out[i] = view.getFloat64(big, true);
        big += 8;
      }
    }
  }
  return out;
}

/** `start` and `end` (Float64Arrays) of intervals from delta-coded starts and durations. */
function spans(blocks, cols, prefix) {
  const cs = cols[`${prefix}.start`], cd = cols[`${prefix}.dur`];
  const n = cs.count;
  if (cd.count !== n) throw new Error(`${prefix}: ${n} starts but ${cd.count} durations`);
  const start = planar(blocks[cs.block], cs, new Float64Array(n));
  const end = planar(blocks[cd.block], cd, new Float64Array(n));
  let acc = 0;
  if (cs.delta === "end") {
    for (let i = 0; i < n; i++) {
      acc += start[i];
      start[i] = acc;
      acc += end[i];
      end[i] = acc;
    }
  } else {
    for (let i = 0; i < n; i++) {
      acc += start[i];
      start[i] = acc;
      end[i] += acc;
    }
  }
  return { start, end };
}

/** The columns of one CPU that are in `blocks`, set on `lane` by name. */
function decodeColumns(lane, cols, blocks) {
  const has = (name) => cols[name] && blocks[cols[name].block];
  const get = (name) => {
    const c = cols[name];
    return c.type === "u8" ? u8(blocks[c.block], c) : planar(blocks[c.block], c);
  };
  const set = (obj, key, name) => {
    if (has(name)) Object.defineProperty(obj, key, { value: get(name), writable: true, enumerable: true, configurable: true });
  };
  const { slices, wakes, irqs, softirqs, overview } = lane;
  for (const [obj, prefix] of [[slices, "slices"], [irqs, "irqs"], [softirqs, "softirqs"]]) {
    if (has(`${prefix}.start`) && !obj.start) Object.assign(obj, spans(blocks, cols, prefix));
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
  for (const [name, col] of Object.entries(c.columns)) {
    const f = JL_FIELDS[name];
    if (!f || ready.has(col.block)) continue;
    Object.defineProperty(lane[f[0]], f[1], {
      configurable: true,
      enumerable: true,
      get() {
        throw new Error(`jitterlab: CPU ${c.cpu}'s ${name} is read before its block is inflated (await lanes.complete)`);
      },
    });
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
  const drawBlocks = new Set(t.cpus.map((c) => c.block));
  const lanes = t.cpus.map((c) => emptyLane(c, drawBlocks));
  await Promise.all(t.cpus.map(async (c, k) => {
    decodeColumns(lanes[k], c.columns, { [c.block]: await readBlock(doc, c.block) });
  }));
  performance.mark("jl:decoded");
  lanes.complete = (async () => {
    // After the first paint: the caller draws before this task's next turn.
    await new Promise((r) => setTimeout(r, 0));
    for (const [k, c] of t.cpus.entries()) {
      if (c.detail_block == null || c.detail_block === c.block) continue;
      decodeColumns(lanes[k], c.columns, { [c.detail_block]: await readBlock(doc, c.detail_block) });
    }
    performance.mark("jl:decoded-all");
    return lanes;
  })();
  return lanes;
}
