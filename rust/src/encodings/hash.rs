//! A fast, non-cryptographic hasher for dictionary building.
//!
//! Dictionary encoding hashes every value of a page; SipHash (std's default, built to resist
//! hash flooding) costs more than the rest of the work. Keys here are column values of a file
//! being written, and a collision flood could only slow the writer down, never make it wrong,
//! so a multiply-rotate hash in the style of FxHash is the right trade.

use std::hash::{BuildHasherDefault, Hasher};

/// Multiply-rotate hasher over 8-byte words.
#[derive(Default, Clone, Copy)]
pub struct FastHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// `HashMap` with [`FastHasher`].
pub type FastHashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FastHasher>>;
/// `HashSet` with [`FastHasher`].
pub type FastHashSet<K> = std::collections::HashSet<K, BuildHasherDefault<FastHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_keys_stay_distinct() {
        let mut m: FastHashMap<&[u8], usize> = FastHashMap::default();
        let keys: Vec<Vec<u8>> = (0..10_000u32).map(|i| format!("key-{i}").into_bytes()).collect();
        for (i, k) in keys.iter().enumerate() {
            m.insert(k, i);
        }
        assert_eq!(m.len(), keys.len());
        assert_eq!(m[&b"key-1234"[..]], 1234);
    }
}
