//! Dictionary encoding: a page stores each distinct value once (the dictionary, decoded at
//! page-open time and cached) and per-row indices in the chunks.
//!
//! In 2.1/2.2 mini-block pages the indices are u32 (usually inline-bit-packed), the
//! dictionary is a block-encoded buffer (`variable` for strings, `flat` for fixed width,
//! LZ4-wrapped in 2.2), and nulls live in definition levels, so every index is valid.

use crate::encodings::hash::{FastHashMap, FastHashSet};

use arrow_buffer::MutableBuffer;

use super::block::{DataBlock, FixedWidthBlock, VariableWidthBlock};
use crate::error::{Error, Result};

/// Largest number of distinct values the writer puts in a dictionary.
pub const MAX_CARDINALITY: usize = 100_000;
/// Fewest values in a page before a dictionary is considered.
pub const MIN_VALUES: u64 = 100;
/// A dictionary is used when its estimated size is below this fraction of the plain size.
pub const MAX_SIZE_RATIO: f64 = 0.8;

fn index_at(indices: &FixedWidthBlock, i: usize) -> u64 {
    super::block::read_uint(indices.data.as_slice(), i * indices.bytes_per_value(), indices.bytes_per_value())
}

/// Replaces each index by its dictionary value.
pub fn gather(indices: &FixedWidthBlock, items: &DataBlock, ctx: &str) -> Result<DataBlock> {
    let n = indices.num_values as usize;
    let num_items = items.num_values();
    if !matches!(indices.bits_per_value, 8 | 16 | 32 | 64) {
        return Err(Error::corrupt(format!("{ctx}: dictionary indices of {} bits", indices.bits_per_value)));
    }
    for i in 0..n {
        let idx = index_at(indices, i);
        if idx >= num_items {
            return Err(Error::corrupt(format!("{ctx}: dictionary index {idx} out of {num_items} items")));
        }
    }
    match items {
        DataBlock::Fixed(f) => {
            if f.bits_per_value % 8 != 0 {
                return Err(Error::not_supported(format!("{ctx}: dictionary of {}-bit values", f.bits_per_value)));
            }
            let w = f.bytes_per_value();
            let src = f.data.as_slice();
            let mut out = MutableBuffer::new(n * w);
            for i in 0..n {
                let idx = index_at(indices, i) as usize;
                out.extend_from_slice(&src[idx * w..(idx + 1) * w]);
            }
            Ok(DataBlock::Fixed(FixedWidthBlock { data: out.into(), bits_per_value: f.bits_per_value, num_values: n as u64 }))
        }
        DataBlock::Variable(v) => {
            let mut offsets = Vec::with_capacity(n + 1);
            let mut data = Vec::new();
            offsets.push(0u64);
            for i in 0..n {
                data.extend_from_slice(v.value(index_at(indices, i) as usize));
                offsets.push(data.len() as u64);
            }
            Ok(DataBlock::Variable(VariableWidthBlock::from_u64(offsets, data)))
        }
        other => Err(Error::not_supported(format!("{ctx}: dictionary of {} values", other.kind()))),
    }
}

/// A dictionary built by the writer: distinct values in first-seen order and u32 indices.
pub struct Dictionary {
    /// The distinct values.
    pub items: DataBlock,
    /// One index per input value.
    pub indices: Vec<u32>,
}

/// Builds a dictionary of variable-width values if there are at most `max_items` distinct
/// values; `None` otherwise.
pub fn build_variable(src: &VariableWidthBlock, max_items: usize) -> Option<Dictionary> {
    let n = src.num_values as usize;
    // Values of up to 15 bytes are keyed by their bytes and length packed in a u128 (no
    // slice hashing or comparison); longer ones by the slice.
    let mut short: FastHashMap<u128, u32> = FastHashMap::default();
    let mut long: FastHashMap<&[u8], u32> = FastHashMap::default();
    let mut offsets = vec![0u64];
    let mut data = Vec::new();
    let mut indices = Vec::with_capacity(n);
    let mut count = 0u32;
    for i in 0..n {
        let v = src.value(i);
        let mut add = || {
            data.extend_from_slice(v);
            offsets.push(data.len() as u64);
            count += 1;
            count - 1
        };
        let idx = if v.len() < 16 {
            let mut b = [0u8; 16];
            b[..v.len()].copy_from_slice(v);
            b[15] = v.len() as u8;
            *short.entry(u128::from_le_bytes(b)).or_insert_with(&mut add)
        } else {
            *long.entry(v).or_insert_with(&mut add)
        };
        if count as usize > max_items {
            return None;
        }
        indices.push(idx);
    }
    // Sorted items compress better (the dictionary is LZ4-wrapped in 2.2).
    let k = offsets.len() - 1;
    let value = |i: usize| &data[offsets[i] as usize..offsets[i + 1] as usize];
    let mut order: Vec<u32> = (0..k as u32).collect();
    order.sort_unstable_by(|&a, &b| value(a as usize).cmp(value(b as usize)));
    let mut new_index = vec![0u32; k];
    let mut sorted_offsets = Vec::with_capacity(k + 1);
    let mut sorted_data = Vec::with_capacity(data.len());
    sorted_offsets.push(0u64);
    for (pos, &old) in order.iter().enumerate() {
        new_index[old as usize] = pos as u32;
        sorted_data.extend_from_slice(value(old as usize));
        sorted_offsets.push(sorted_data.len() as u64);
    }
    for i in indices.iter_mut() {
        *i = new_index[*i as usize];
    }
    let items = if src.bits_per_offset == 32 {
        VariableWidthBlock::from_u32(sorted_offsets.iter().map(|&o| o as u32).collect(), sorted_data)
    } else {
        VariableWidthBlock::from_u64(sorted_offsets, sorted_data)
    };
    Some(Dictionary { items: DataBlock::Variable(items), indices })
}

/// Builds a dictionary of fixed-width values (whole bytes) if there are at most `max_items`
/// distinct values.
pub fn build_fixed(src: &FixedWidthBlock, max_items: usize) -> Option<Dictionary> {
    let w = src.bytes_per_value();
    let n = src.num_values as usize;
    let mut map: FastHashMap<&[u8], u32> = FastHashMap::default();
    let mut data = Vec::new();
    let mut indices = Vec::with_capacity(n);
    for v in src.data.as_slice()[..n * w].chunks_exact(w) {
        let next = map.len() as u32;
        let idx = *map.entry(v).or_insert_with(|| {
            data.extend_from_slice(v);
            next
        });
        if map.len() > max_items {
            return None;
        }
        indices.push(idx);
    }
    // Items in ascending order of their little-endian value (signed values sort by their
    // unsigned bit pattern); sorted dictionaries compress better.
    let num = map.len();
    let key = |i: usize| -> (u128, &[u8]) {
        let item = &data[i * w..(i + 1) * w];
        let mut b = [0u8; 16];
        let k = w.min(16);
        b[..k].copy_from_slice(&item[..k]);
        (u128::from_le_bytes(b), item)
    };
    let mut order: Vec<u32> = (0..num as u32).collect();
    order.sort_unstable_by(|&a, &b| key(a as usize).cmp(&key(b as usize)));
    let mut new_index = vec![0u32; num];
    let mut sorted = Vec::with_capacity(data.len());
    for (pos, &old) in order.iter().enumerate() {
        new_index[old as usize] = pos as u32;
        sorted.extend_from_slice(&data[old as usize * w..(old as usize + 1) * w]);
    }
    for i in indices.iter_mut() {
        *i = new_index[*i as usize];
    }
    Some(Dictionary {
        items: DataBlock::Fixed(FixedWidthBlock {
            data: arrow_buffer::Buffer::from_vec(sorted),
            bits_per_value: src.bits_per_value,
            num_values: num as u64,
        }),
        indices,
    })
}

/// Estimates the number of distinct values from a sample of up to 4096 values (exact for
/// small inputs). Used to skip dictionary building for high-cardinality pages cheaply.
pub fn estimate_cardinality<'a>(n: usize, value: impl Fn(usize) -> &'a [u8]) -> usize {
    let sample = n.min(4096);
    if sample == 0 {
        return 0;
    }
    let step = n / sample;
    let mut seen = FastHashSet::with_capacity_and_hasher(sample, Default::default());
    for i in 0..sample {
        seen.insert(value(i * step));
    }
    if sample == n {
        seen.len()
    } else if seen.len() * 10 > sample * 9 {
        // Almost every sampled value is distinct: assume the page is high-cardinality.
        n
    } else {
        seen.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_and_gather_strings() {
        let src = VariableWidthBlock::from_u32(vec![0, 1, 2, 3, 4], b"abab".to_vec());
        let d = build_variable(&src, 10).unwrap();
        assert_eq!(d.indices, vec![0, 1, 0, 1]);
        let idx = FixedWidthBlock { data: arrow_buffer::Buffer::from_vec(d.indices.clone()), bits_per_value: 32, num_values: 4 };
        let out = gather(&idx, &d.items, "t").unwrap().into_variable("t").unwrap();
        assert_eq!(out.value(3), b"b");
        let bad = FixedWidthBlock { data: arrow_buffer::Buffer::from_vec(vec![7u32]), bits_per_value: 32, num_values: 1 };
        assert!(gather(&bad, &d.items, "t").is_err());
    }
}
