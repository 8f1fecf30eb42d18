//! Run-length encoding of fixed-width values.
//!
//! A run is a value and a `u8` count; longer runs are split into runs of at most 255.
//! * **Mini-block chunk**: two value buffers, the run values (native width) and the counts.
//! * **Block** (2.2 rep/def levels): `u64 LE` byte length of the values section, the values,
//!   then one count per value.
//!
//! Random access decodes one chunk (≤ 4096 values) and slices.

use arrow_buffer::{Buffer, MutableBuffer};

use super::block::{DataBlock, FixedWidthBlock};
use crate::error::{Error, Result};

/// Expands runs: `values` holds `k` values of `width` bytes, `lengths` `k` counts.
pub fn expand(values: &[u8], lengths: &[u8], width: usize, num_values: u64, ctx: &str) -> Result<DataBlock> {
    if width == 0 || values.len() % width != 0 || values.len() / width != lengths.len() {
        return Err(Error::corrupt(format!(
            "{ctx}: {} bytes of run values do not match {} run lengths",
            values.len(),
            lengths.len()
        )));
    }
    let total: u64 = lengths.iter().map(|&l| l as u64).sum();
    if total != num_values {
        return Err(Error::corrupt(format!("{ctx}: runs cover {total} values, expected {num_values}")));
    }
    let mut out = MutableBuffer::new(num_values as usize * width);
    for (v, &len) in values.chunks_exact(width).zip(lengths) {
        for _ in 0..len {
            out.extend_from_slice(v);
        }
    }
    Ok(DataBlock::Fixed(FixedWidthBlock { data: out.into(), bits_per_value: width as u64 * 8, num_values }))
}

/// Decodes the block form.
pub fn decode_block(buf: &Buffer, width: usize, num_values: u64, ctx: &str) -> Result<DataBlock> {
    let b = buf.as_slice();
    if b.len() < 8 {
        return Err(Error::corrupt(format!("{ctx}: RLE block shorter than its header")));
    }
    let values_len = u64::from_le_bytes(b[..8].try_into().unwrap());
    if values_len > (b.len() - 8) as u64 {
        return Err(Error::corrupt(format!("{ctx}: RLE values section overruns the buffer")));
    }
    let split = 8 + values_len as usize;
    expand(&b[8..split], &b[split..], width, num_values, ctx)
}

/// Computes runs of `data` (values of `width` bytes): returns (run values, run lengths).
pub fn runs(data: &[u8], width: usize) -> (Vec<u8>, Vec<u8>) {
    let mut values = Vec::new();
    let mut lengths = Vec::new();
    let mut iter = data.chunks_exact(width);
    let Some(mut cur) = iter.next() else { return (values, lengths) };
    let mut len = 1u8;
    for v in iter {
        if v == cur && len < 255 {
            len += 1;
        } else {
            values.extend_from_slice(cur);
            lengths.push(len);
            cur = v;
            len = 1;
        }
    }
    values.extend_from_slice(cur);
    lengths.push(len);
    (values, lengths)
}

/// Number of runs in `data` (values of `width` bytes), not splitting long runs.
pub fn count_runs(data: &[u8], width: usize) -> usize {
    if data.is_empty() {
        return 0;
    }
    1 + data.chunks_exact(width).zip(data.chunks_exact(width).skip(1)).filter(|(a, b)| a != b).count()
}

/// Encodes the block form.
pub fn encode_block(data: &[u8], width: usize) -> Vec<u8> {
    let (values, lengths) = runs(data, width);
    let mut out = Vec::with_capacity(8 + values.len() + lengths.len());
    out.extend_from_slice(&(values.len() as u64).to_le_bytes());
    out.extend_from_slice(&values);
    out.extend_from_slice(&lengths);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_round_trip_with_long_runs() {
        let vals: Vec<u16> = std::iter::repeat(3u16).take(600).chain([1, 1, 2]).collect();
        let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let enc = encode_block(&bytes, 2);
        let dec = decode_block(&Buffer::from_vec(enc), 2, vals.len() as u64, "t").unwrap().into_fixed("t").unwrap();
        assert_eq!(dec.data.as_slice(), &bytes[..]);
        assert_eq!(count_runs(&bytes, 2), 3);
    }

    #[test]
    fn wrong_total_is_error() {
        assert!(expand(&[1, 0], &[3], 2, 4, "t").is_err());
    }
}
