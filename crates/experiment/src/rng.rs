//! A small deterministic random number generator.
//!
//! The bootstrap and the run orders must give the same answer for the same seed on
//! every machine and every version of the dependencies, so they use this generator
//! (xorshift64* seeded through SplitMix64) rather than a crate whose streams may
//! change between releases.

/// xorshift64*: a 64-bit state, never zero.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

/// One step of SplitMix64, the usual way to spread a seed over a state.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator for `seed`; any seed, 0 included, gives a good stream.
    pub fn new(seed: u64) -> Rng {
        let state = splitmix(seed);
        Rng {
            state: if state == 0 {
                0x2545_f491_4f6c_dd1d
            } else {
                state
            },
        }
    }

    /// A generator for one use of an experiment's seed: `derive(seed, &[metric, cell])`
    /// gives every statistic its own stream, so results do not depend on the order in
    /// which they are computed.
    pub fn derive(seed: u64, stream: &[u64]) -> Rng {
        let mut s = splitmix(seed);
        for &x in stream {
            s = splitmix(s ^ x);
        }
        Rng::new(s)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A uniform integer in `0..n` (`n` > 0), without modulo bias (Lemire's method
    /// with rejection).
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "Rng::below(0)");
        let n = n as u64;
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as usize;
            }
        }
    }

    /// A uniform float in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A standard normal deviate (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Shuffles `items` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_streams_differ() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(
            Rng::derive(7, &[1]).next_u64(),
            Rng::derive(7, &[2]).next_u64()
        );
        assert_ne!(Rng::new(0).next_u64(), 0);
    }

    #[test]
    fn below_is_uniform_enough_and_unit_in_range() {
        let mut r = Rng::new(1);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[r.below(6)] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_500..10_500).contains(&c)),
            "{counts:?}"
        );
        for _ in 0..1000 {
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
        }
        let mean: f64 = (0..20_000).map(|_| r.normal()).sum::<f64>() / 20_000.0;
        assert!(mean.abs() < 0.03, "{mean}");
    }
}
