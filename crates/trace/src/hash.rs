//! A small fast hasher for integer keys (tids, IRQ numbers) and short strings (names):
//! the multiply-rotate of rustc's FxHash, a word at a time. Not DoS-resistant, which does
//! not matter for keys read from a trace file.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash state.
#[derive(Default, Clone, Copy)]
pub struct Fx(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            self.add(u64::from_le_bytes(word));
        }
        for &b in words.remainder() {
            self.add(u64::from(b));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    fn write_i32(&mut self, n: i32) {
        self.add(n as u32 as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

impl Fx {
    fn add(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(SEED);
    }
}

/// A `HashMap` with [`Fx`] hashing.
pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

/// Tids below this are found by index in a [`TidMap`] (a table of at most 64 Ki
/// values), the others by hash.
pub const DIRECT_TIDS: usize = 1 << 16;

/// A map by tid for a lookup per event or row: the usual tids (below [`DIRECT_TIDS`])
/// are an index into a table, up to the largest seen, the others a hash probe (which
/// cost ~23 instructions more, 2.9 M lookups on a 2.9 M-event trace). `none` marks the
/// table's empty slots, and is never a value.
#[derive(Clone, Debug)]
pub struct TidMap<V> {
    low: Vec<V>,
    high: FxMap<i32, V>,
    none: V,
}

impl<V: Copy + PartialEq> TidMap<V> {
    /// An empty map whose table marks an empty slot with `none`.
    pub fn new(none: V) -> TidMap<V> {
        TidMap {
            low: Vec::new(),
            high: FxMap::default(),
            none,
        }
    }

    /// The value of `tid`.
    #[inline]
    pub fn get(&self, tid: i32) -> Option<V> {
        match usize::try_from(tid) {
            Ok(i) if i < DIRECT_TIDS => self.low.get(i).copied().filter(|&v| v != self.none),
            _ => self.high.get(&tid).copied(),
        }
    }

    /// Sets the value of `tid` (`none` removes it).
    pub fn insert(&mut self, tid: i32, v: V) {
        match usize::try_from(tid) {
            Ok(i) if i < DIRECT_TIDS => {
                if self.low.len() <= i {
                    self.low.resize(i + 1, self.none);
                }
                self.low[i] = v;
            }
            _ if v == self.none => {
                self.high.remove(&tid);
            }
            _ => {
                self.high.insert(tid, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tid_map_finds_low_high_and_negative_tids_and_nothing_else() {
        let mut m = TidMap::new(u32::MAX);
        let set = [
            (0, 1),
            (7, 2),
            (65_535, 3),
            (65_536, 4),
            (4_194_304, 5),
            (-1, 6),
        ];
        for (tid, v) in set {
            m.insert(tid, v);
        }
        for (tid, v) in set {
            assert_eq!(m.get(tid), Some(v), "{tid}");
        }
        for tid in [1, 6, 8, 65_534, 65_537, 100_000, -2, i32::MIN, i32::MAX] {
            assert_eq!(m.get(tid), None, "{tid}");
        }
        // The table goes up to the largest low tid, never past.
        assert_eq!(m.low.len(), 65_536);
        m.insert(7, 9);
        assert_eq!(m.get(7), Some(9));
        m.insert(7, u32::MAX);
        m.insert(65_536, u32::MAX);
        assert_eq!((m.get(7), m.get(65_536)), (None, None));
    }
}
