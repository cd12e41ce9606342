// pyramid.js: what a pixel column of the timeline covers, found fast: binary searches over
// time-ordered columns, and range-max pyramids built once per lane at load, in O(n) time
// and memory, answering "which interval of [l, r) is the longest (or has the worst
// wake-up)" in O(log n) (docs/html.md; STYLE.md 15: summary levels built once).

/** The first index in [lo, hi) of sorted `a` whose value is >= `x` (hi if none). */
export function tlLowerBound(a, x, lo = 0, hi = a.length) {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first index in [lo, hi) of sorted `a` whose value is > `x` (hi if none). */
export function tlUpperBound(a, x, lo = 0, hi = a.length) {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Range argmax over `values` (any typed array): level k holds, for each block of 2^k
 * consecutive entries, the index of its largest value (the first of equals). Level 0 is
 * `values` itself, so the levels take n - 1 indices in all.
 */
export class ArgMaxPyramid {
  constructor(values) {
    this.values = values;
    this.levels = [null];
    const n = values.length;
    if (n < 2) return;
    // Level 1 from the values, then each level from the one below.
    let m = (n + 1) >>> 1;
    let prev = new Uint32Array(m);
    for (let j = 0, a = 0; j < m; j++, a += 2) {
      prev[j] = a + 1 < n && values[a + 1] > values[a] ? a + 1 : a;
    }
    this.levels.push(prev);
    let size = m;
    while (size > 1) {
      m = (size + 1) >>> 1;
      const lv = new Uint32Array(m);
      const full = size >>> 1;
      for (let j = 0; j < full; j++) {
        const a = prev[2 * j], b = prev[2 * j + 1];
        lv[j] = values[b] > values[a] ? b : a;
      }
      if (m > full) lv[full] = prev[2 * full];
      this.levels.push(lv);
      prev = lv;
      size = m;
    }
  }

  /** The index of the largest value in [l, r), or -1 when the range is empty. */
  argmax(l, r) {
    const v = this.values;
    let best = -1;
    let bv = -Infinity;
    let k = 0;
    while (l < r) {
      const lv = this.levels[k];
      if (l & 1) {
        const c = k === 0 ? l : lv[l];
        if (v[c] > bv || (v[c] === bv && c < best)) {
          best = c;
          bv = v[c];
        }
        l++;
      }
      if (r & 1) {
        r--;
        const c = k === 0 ? r : lv[r];
        if (v[c] > bv || (v[c] === bv && c < best)) {
          best = c;
          bv = v[c];
        }
      }
      l >>>= 1;
      r >>>= 1;
      k++;
    }
    return best;
  }

  /** Bytes held by the levels (not the values). */
  bytes() {
    return this.levels.reduce((s, lv) => s + (lv ? lv.byteLength : 0), 0);
  }
}
