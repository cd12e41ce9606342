//! CPU sets in the two textual forms the Linux kernel uses.
//!
//! The kernel prints and accepts CPU sets as a **list** (`0-3,8,10-11`, as in
//! `/sys/devices/system/cpu/online` or `Cpus_allowed_list`) and as a **hex mask**
//! split into comma-separated 32-bit groups, most significant first (`ff,ffffffff`,
//! as in `/proc/irq/*/smp_affinity` or the workqueue `cpumask`). [`CpuSet`] holds any
//! number of CPUs and converts between the two forms exactly.
//!
//! ```
//! use jitterlab_cpuset::CpuSet;
//!
//! let set = CpuSet::parse_list("0-3,8,10-11")?;
//! assert_eq!(set.len(), 7);
//! assert_eq!(set.to_mask_string(), "d0f");
//! assert_eq!(CpuSet::parse_mask("d0f")?, set);
//! assert_eq!(set.to_string(), "0-3,8,10-11");
//!
//! // Masks over 32 CPUs carry comma groups.
//! let wide = CpuSet::parse_mask("1,00000000")?;
//! assert_eq!(wide.to_string(), "32");
//! # Ok::<(), jitterlab_cpuset::ParseError>(())
//! ```
//!
//! This crate only represents and converts sets; it never reads the host.

#![deny(missing_docs)]

mod parse;

use std::fmt;

pub use parse::{Form, ParseError, EXCERPT};

/// Highest CPU number accepted by the parsers plus one.
///
/// The kernel's `CONFIG_NR_CPUS` tops out at 8192; the bound keeps a typo such
/// as `0-4000000000` from allocating gigabytes.
pub const MAX_CPUS: u32 = 1 << 16;

/// A set of CPU numbers.
///
/// Stored as a bitmap of 64-bit words without trailing zero words, so two sets
/// with the same CPUs compare equal whatever the width they were parsed from.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuSet {
    words: Vec<u64>,
}

impl CpuSet {
    /// The empty set.
    pub fn new() -> CpuSet {
        CpuSet { words: Vec::new() }
    }

    /// The set `0..n`.
    pub fn first_n(n: u32) -> CpuSet {
        (0..n).collect()
    }

    /// Parses the kernel's list form: `0-3,8,10-11`, also the stride form
    /// `0-15:2/4` (in each group of 4, the first 2) that the kernel accepts.
    /// An empty or all-blank string is the empty set, as the kernel prints it.
    pub fn parse_list(s: &str) -> Result<CpuSet, ParseError> {
        parse::list(s, None)
    }

    /// Parses the list form as the kernel reads a boot option's CPU list
    /// (`nohz_full=2-N`, `bitmap_parselist`): `N` at either end of a range stands for
    /// `last`, the highest CPU the machine may have. Errors name the column of `s`.
    pub fn parse_list_with_last(s: &str, last: u32) -> Result<CpuSet, ParseError> {
        parse::list(s, Some(last))
    }

    /// Parses the kernel's hex mask form: `ff,ffffffff` (32-bit groups, most
    /// significant first). A leading `0x` is accepted.
    pub fn parse_mask(s: &str) -> Result<CpuSet, ParseError> {
        parse::mask(s)
    }

    /// Parses either form, as told by `form`.
    pub fn parse(s: &str, form: Form) -> Result<CpuSet, ParseError> {
        match form {
            Form::List => parse::list(s, None),
            Form::Mask => parse::mask(s),
        }
    }

    /// Adds a CPU.
    pub fn insert(&mut self, cpu: u32) {
        let (w, b) = (cpu as usize / 64, cpu % 64);
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << b;
    }

    /// Removes a CPU.
    pub fn remove(&mut self, cpu: u32) {
        let (w, b) = (cpu as usize / 64, cpu % 64);
        if let Some(word) = self.words.get_mut(w) {
            *word &= !(1 << b);
        }
        self.trim();
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: u32) -> bool {
        let (w, b) = (cpu as usize / 64, cpu % 64);
        self.words.get(w).is_some_and(|word| word & (1 << b) != 0)
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set has no CPU.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The lowest CPU, if any.
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// The highest CPU, if any.
    pub fn last(&self) -> Option<u32> {
        let w = self.words.len().checked_sub(1)?;
        let word = self.words[w];
        Some(w as u32 * 64 + 63 - word.leading_zeros())
    }

    /// The CPUs in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            words: &self.words,
            index: 0,
            current: self.words.first().copied().unwrap_or(0),
        }
    }

    /// CPUs in either set.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        let (long, short) = if self.words.len() >= other.words.len() {
            (self, other)
        } else {
            (other, self)
        };
        let mut words = long.words.clone();
        for (w, o) in words.iter_mut().zip(&short.words) {
            *w |= o;
        }
        CpuSet { words }
    }

    /// CPUs in both sets.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        let words = self.words.iter().zip(&other.words).map(|(a, b)| a & b);
        CpuSet::from_words(words.collect())
    }

    /// CPUs in `self` but not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        let words = self
            .words
            .iter()
            .enumerate()
            .map(|(i, a)| a & !other.words.get(i).copied().unwrap_or(0));
        CpuSet::from_words(words.collect())
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.difference(other).is_empty()
    }

    /// Whether the two sets share a CPU.
    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// The bitmap as 64-bit words, CPU 0 in bit 0 of word 0; no trailing zero words.
    pub fn as_words(&self) -> &[u64] {
        &self.words
    }

    /// Builds a set from 64-bit words, CPU 0 in bit 0 of word 0.
    pub fn from_words(words: Vec<u64>) -> CpuSet {
        let mut set = CpuSet { words };
        set.trim();
        set
    }

    /// The list form, `0-3,8,10-11`; the empty set is the empty string.
    pub fn to_list_string(&self) -> String {
        self.to_string()
    }

    /// The hex mask form with the fewest groups: `d0f`, `1,00000000`.
    /// The empty set is `0`.
    pub fn to_mask_string(&self) -> String {
        let bits = self.last().map_or(1, |l| l + 1);
        self.to_mask_string_width(bits)
    }

    /// The hex mask form as wide as the kernel prints it for `nbits` CPUs
    /// (`nr_cpu_ids`): `00000003` is never printed, but `0,00000003` is for 33 CPUs.
    /// CPUs at or above `nbits` are still printed.
    pub fn to_mask_string_width(&self, nbits: u32) -> String {
        let bits = nbits.max(self.last().map_or(1, |l| l + 1)).max(1);
        let groups = bits.div_ceil(32);
        let mut out = String::with_capacity(groups as usize * 9);
        for g in (0..groups).rev() {
            let word = self.words.get(g as usize / 2).copied().unwrap_or(0);
            let group = (word >> ((g % 2) * 32)) as u32;
            if g == groups - 1 {
                let digits = (bits - g * 32).div_ceil(4) as usize;
                out.push_str(&format!("{group:0digits$x}"));
            } else {
                out.push_str(&format!(",{group:08x}"));
            }
        }
        out
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }
}

impl fmt::Display for CpuSet {
    /// The list form as the kernel writes it: every run of two or more CPUs as
    /// `a-b` (`0-1`, not `0,1`), runs separated by commas.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut iter = self.iter().peekable();
        let mut first = true;
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end += 1;
                iter.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if end == start {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> CpuSet {
        let mut set = CpuSet::new();
        for cpu in iter {
            set.insert(cpu);
        }
        set
    }
}

impl<'a> IntoIterator for &'a CpuSet {
    type Item = u32;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Iterator over the CPUs of a [`CpuSet`], ascending.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    words: &'a [u64],
    index: usize,
    current: u64,
}

impl Iterator for Iter<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        loop {
            if self.current != 0 {
                let bit = self.current.trailing_zeros();
                self.current &= self.current - 1;
                return Some(self.index as u32 * 64 + bit);
            }
            self.index += 1;
            self.current = *self.words.get(self.index)?;
        }
    }
}

impl serde::Serialize for CpuSet {
    /// Serialized as the list form string, `"0-3,8"`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CpuSet, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        CpuSet::parse_list(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests;
