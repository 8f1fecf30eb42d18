//! Portable 32-bit roaring serialization *with run containers*, as pylance 14 writes an
//! index's `fragment_bitmap`.
//!
//! The `roaring` crate (0.10) reads run containers but writes only array and bitmap ones,
//! so a bitmap of contiguous fragment ids came out longer than pylance's and with other
//! bytes. pylance run-optimizes first: a container becomes a run container when that is
//! strictly smaller. The layout (the portable spec, "serial cookie" variant):
//!
//! ```text
//! u32  12347 | (containers - 1) << 16
//! [ceil(containers / 8)] bit i set = container i is a run container
//! per container: u16 key (high 16 bits), u16 cardinality - 1
//! per container: u32 byte offset of its data    (only when containers >= 4)
//! per container, its data:
//!   array:  cardinality × u16 values
//!   bitmap: 1024 × u64 words
//!   run:    u16 number of runs, then per run u16 start, u16 length - 1
//! ```
//!
//! Sizes compared: run `2 + 4 × runs` bytes, array `2 × cardinality` (at most 4096 values),
//! bitmap 8192. All integers little-endian.

use roaring::RoaringBitmap;

const SERIAL_COOKIE: u32 = 12347;
const NO_OFFSET_THRESHOLD: usize = 4;
const ARRAY_MAX: usize = 4096;
const BITMAP_BYTES: usize = 8192;

/// One container's data in the form it is written.
enum Container {
    Array(Vec<u16>),
    Bitmap(Vec<u16>),
    /// (start, length - 1) pairs
    Run(Vec<(u16, u16)>),
}

impl Container {
    /// The smallest form of the sorted, distinct `values` (run only when strictly smaller).
    fn optimal(values: Vec<u16>) -> Self {
        let mut runs: Vec<(u16, u16)> = Vec::new();
        for &v in &values {
            match runs.last_mut() {
                Some((start, len)) if u32::from(*start) + u32::from(*len) + 1 == u32::from(v) => *len += 1,
                _ => runs.push((v, 0)),
            }
        }
        let other = if values.len() <= ARRAY_MAX { 2 * values.len() } else { BITMAP_BYTES };
        if 2 + 4 * runs.len() < other {
            Container::Run(runs)
        } else if values.len() <= ARRAY_MAX {
            Container::Array(values)
        } else {
            Container::Bitmap(values)
        }
    }

    fn byte_len(&self) -> usize {
        match self {
            Container::Array(v) => 2 * v.len(),
            Container::Bitmap(_) => BITMAP_BYTES,
            Container::Run(r) => 2 + 4 * r.len(),
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Container::Array(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            Container::Bitmap(v) => {
                let mut words = [0u64; 1024];
                for &x in v {
                    words[usize::from(x) / 64] |= 1u64 << (x % 64);
                }
                words.iter().for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
            }
            Container::Run(r) => {
                out.extend_from_slice(&(r.len() as u16).to_le_bytes());
                for (start, len) in r {
                    out.extend_from_slice(&start.to_le_bytes());
                    out.extend_from_slice(&len.to_le_bytes());
                }
            }
        }
    }
}

/// `bitmap` in the portable format, run containers where they are smaller (pylance 14's
/// bytes). An empty bitmap is the classic 8-byte empty form the `roaring` crate writes.
pub fn serialize_run_optimized(bitmap: &RoaringBitmap) -> Vec<u8> {
    let mut groups: Vec<(u16, Vec<u16>)> = Vec::new();
    for v in bitmap.iter() {
        let (key, low) = ((v >> 16) as u16, v as u16);
        match groups.last_mut() {
            Some((k, values)) if *k == key => values.push(low),
            _ => groups.push((key, vec![low])),
        }
    }
    if groups.is_empty() {
        let mut out = Vec::new();
        bitmap.serialize_into(&mut out).expect("writing to a Vec cannot fail");
        return out;
    }
    let containers: Vec<(u16, u32, Container)> =
        groups.into_iter().map(|(key, values)| (key, values.len() as u32, Container::optimal(values))).collect();
    if !containers.iter().any(|(_, _, c)| matches!(c, Container::Run(_))) {
        // (no run: the classic form, which is what the roaring crate writes)
        let mut out = Vec::new();
        bitmap.serialize_into(&mut out).expect("writing to a Vec cannot fail");
        return out;
    }
    let n = containers.len();
    let mut out = Vec::new();
    out.extend_from_slice(&(SERIAL_COOKIE | ((n as u32 - 1) << 16)).to_le_bytes());
    let mut flags = vec![0u8; n.div_ceil(8)];
    for (i, (_, _, c)) in containers.iter().enumerate() {
        if matches!(c, Container::Run(_)) {
            flags[i / 8] |= 1 << (i % 8);
        }
    }
    out.extend_from_slice(&flags);
    for (key, card, _) in &containers {
        out.extend_from_slice(&key.to_le_bytes());
        out.extend_from_slice(&((card - 1) as u16).to_le_bytes());
    }
    if n >= NO_OFFSET_THRESHOLD {
        let mut offset = out.len() + 4 * n;
        for (_, _, c) in &containers {
            out.extend_from_slice(&(offset as u32).to_le_bytes());
            offset += c.byte_len();
        }
    }
    containers.iter().for_each(|(_, _, c)| c.write(&mut out));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(ids: &[u32]) -> Vec<u8> {
        serialize_run_optimized(&ids.iter().copied().collect())
    }

    #[test]
    fn matches_pylance_fragment_bitmaps() {
        // (fragment bitmaps pylance 14.0.2 wrote for BTREE indices)
        assert_eq!(bytes(&[0, 1, 2, 3]), [59, 48, 0, 0, 1, 0, 0, 3, 0, 1, 0, 0, 0, 3, 0]);
        assert_eq!(bytes(&[0, 1, 2]), [58, 48, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 16, 0, 0, 0, 0, 0, 1, 0, 2, 0]);
        assert_eq!(bytes(&[0, 1, 3, 4, 5, 6]), [59, 48, 0, 0, 1, 0, 0, 5, 0, 2, 0, 0, 0, 1, 0, 3, 0, 3, 0]);
    }

    #[test]
    fn round_trips_through_the_roaring_reader() {
        let cases: Vec<Vec<u32>> = vec![
            vec![],
            vec![7],
            (0..10).collect(),
            (0..5000).collect(),
            (0..9000).step_by(2).collect(),
            (0..70_000).filter(|x| x % 3 != 0).collect(),
            [(0..100).collect::<Vec<u32>>(), (65_536..65_700).collect(), vec![200_000], (300_000..400_000).collect()].concat(),
            (0..6).flat_map(|k| (k * 65_536..k * 65_536 + 40).collect::<Vec<u32>>()).collect(),
        ];
        for ids in cases {
            let bm: RoaringBitmap = ids.iter().copied().collect();
            let out = serialize_run_optimized(&bm);
            let back = RoaringBitmap::deserialize_from(&out[..]).unwrap();
            assert_eq!(back, bm, "{} ids", ids.len());
            assert!(out.len() <= bm.serialized_size(), "never longer than the classic form");
        }
    }
}
