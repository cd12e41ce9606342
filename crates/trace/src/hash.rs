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
