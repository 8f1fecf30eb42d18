//! Byte-stream split: `n` values of `B` bytes are stored as `B` streams of `n` bytes, stream
//! `k` holding byte `k` of every value. It groups similar bytes (float exponents) so that a
//! following general compressor does better.

use arrow_buffer::MutableBuffer;

use super::block::{DataBlock, FixedWidthBlock};
use crate::error::{Error, Result};

/// Reassembles `n` values of `bits` width from their byte streams.
pub fn decode(data: &[u8], bits: u64, n: u64, ctx: &str) -> Result<DataBlock> {
    let width = (bits / 8) as usize;
    let n_us = n as usize;
    if bits % 8 != 0 || width == 0 || data.len() < width * n_us {
        return Err(Error::corrupt(format!("{ctx}: byte-stream-split buffer too small for {n} values of {bits} bits")));
    }
    let mut out = MutableBuffer::from_len_zeroed(width * n_us);
    let dst = out.as_slice_mut();
    for k in 0..width {
        let stream = &data[k * n_us..(k + 1) * n_us];
        for (i, &b) in stream.iter().enumerate() {
            dst[i * width + k] = b;
        }
    }
    Ok(DataBlock::Fixed(FixedWidthBlock { data: out.into(), bits_per_value: bits, num_values: n }))
}

/// Splits values of `width` bytes into byte streams.
pub fn encode(data: &[u8], width: usize) -> Vec<u8> {
    let n = data.len() / width;
    let mut out = vec![0u8; data.len()];
    for (i, v) in data.chunks_exact(width).enumerate() {
        for (k, &b) in v.iter().enumerate() {
            out[k * n + i] = b;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let vals: Vec<u8> = (0..40u8).collect();
        let enc = encode(&vals, 4);
        assert_eq!(&enc[..3], &[0, 4, 8]);
        let dec = decode(&enc, 32, 10, "t").unwrap().into_fixed("t").unwrap();
        assert_eq!(dec.data.as_slice(), &vals[..]);
    }
}
