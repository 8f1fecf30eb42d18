//! Variable-width values (strings, binary) stored as offsets followed by bytes.
//!
//! * **Mini-block chunk** (one value buffer per chunk): `(n+1)` offsets (u32, or u64 for
//!   64-bit offsets) measured from the *start of this buffer* — so the first offset equals
//!   `(n+1)·width` — then the value bytes, padded with 0x48 to a multiple of the offset width.
//!   Decoding is zero-copy: the offsets and bytes are slices of the chunk.
//! * **Block** (dictionary items): `u32 bits_per_offset` and `u32 bytes_start`
//!   (u64 fields for 64-bit offsets), then `(n+1)` offsets counted from `bytes_start`, then the
//!   bytes.

use arrow_buffer::Buffer;

use super::block::{read_uint, DataBlock, VariableWidthBlock};
use crate::error::{Error, Result};

/// Decodes one mini-block chunk buffer of `num_values` values with `bits_per_offset` offsets.
pub fn decode_miniblock(buf: &Buffer, bits_per_offset: u8, num_values: u64, ctx: &str) -> Result<DataBlock> {
    let width = (bits_per_offset / 8) as usize;
    if width != 4 && width != 8 {
        return Err(Error::corrupt(format!("{ctx}: {bits_per_offset}-bit offsets")));
    }
    let offsets_len = (num_values as usize + 1)
        .checked_mul(width)
        .filter(|&l| l <= buf.len())
        .ok_or_else(|| Error::corrupt(format!("{ctx}: chunk too small for {num_values} offsets")))?;
    let block =
        VariableWidthBlock { offsets: buf.slice_with_length(0, offsets_len), data: buf.clone(), bits_per_offset, num_values };
    block.validate(ctx)?;
    if num_values > 0 && block.offset(0) < offsets_len as u64 {
        return Err(Error::corrupt(format!("{ctx}: value bytes overlap the offsets")));
    }
    Ok(DataBlock::Variable(block))
}

/// Appends the mini-block chunk encoding of values `start..end` of `src` to `out`, with
/// offsets of `bits_per_offset` bits.
pub fn encode_miniblock(src: &VariableWidthBlock, start: usize, end: usize, bits_per_offset: u8, out: &mut Vec<u8>) {
    let n = end - start;
    let width = (bits_per_offset / 8) as usize;
    let base = ((n + 1) * width) as u64;
    let first = src.offset(start);
    let begin = out.len();
    for i in start..=end {
        let o = base + (src.offset(i) - first);
        if width == 4 {
            out.extend_from_slice(&(o as u32).to_le_bytes());
        } else {
            out.extend_from_slice(&o.to_le_bytes());
        }
    }
    out.extend_from_slice(&src.data.as_slice()[first as usize..src.offset(end) as usize]);
    let written = out.len() - begin;
    out.resize(begin + written.next_multiple_of(width), 0x48);
}

/// Size of the mini-block encoding of values `start..end` (before padding).
pub fn miniblock_size(src: &VariableWidthBlock, start: usize, end: usize, bits_per_offset: u8) -> usize {
    (end - start + 1) * (bits_per_offset as usize / 8) + (src.offset(end) - src.offset(start)) as usize
}

/// Decodes the block form (used for dictionary items).
pub fn decode_block(buf: &Buffer, num_values: u64, ctx: &str) -> Result<DataBlock> {
    let b = buf.as_slice();
    let header_width = match b.first() {
        Some(32) => 4usize,
        Some(64) => 8,
        Some(other) => return Err(Error::corrupt(format!("{ctx}: variable block with {other}-bit offsets"))),
        None => return Err(Error::corrupt(format!("{ctx}: empty variable block"))),
    };
    if b.len() < 2 * header_width {
        return Err(Error::corrupt(format!("{ctx}: variable block header truncated")));
    }
    let bits = read_uint(b, 0, header_width);
    let bytes_start = read_uint(b, header_width, header_width) as usize;
    let width = (bits / 8) as usize;
    let offsets_start = 2 * header_width;
    let offsets_end = (num_values as usize + 1)
        .checked_mul(width)
        .and_then(|l| l.checked_add(offsets_start))
        .filter(|&e| e <= b.len() && e <= bytes_start && bytes_start <= b.len())
        .ok_or_else(|| Error::corrupt(format!("{ctx}: variable block too small for {num_values} values")))?;
    let block = VariableWidthBlock {
        offsets: buf.slice_with_length(offsets_start, offsets_end - offsets_start),
        data: buf.slice(bytes_start),
        bits_per_offset: bits as u8,
        num_values,
    };
    block.validate(ctx)?;
    Ok(DataBlock::Variable(block))
}

/// Encodes `src` in the block form with offsets of `src.bits_per_offset` bits.
pub fn encode_block(src: &VariableWidthBlock) -> Vec<u8> {
    let width = (src.bits_per_offset / 8) as usize;
    let n = src.num_values as usize;
    let header = 2 * width;
    let bytes_start = header + (n + 1) * width;
    let mut out = Vec::with_capacity(bytes_start + src.data_len() as usize);
    let put = |out: &mut Vec<u8>, v: u64| {
        if width == 4 {
            out.extend_from_slice(&(v as u32).to_le_bytes())
        } else {
            out.extend_from_slice(&v.to_le_bytes())
        }
    };
    put(&mut out, src.bits_per_offset as u64);
    put(&mut out, bytes_start as u64);
    let first = src.offset(0);
    for i in 0..=n {
        put(&mut out, src.offset(i) - first);
    }
    out.extend_from_slice(&src.data.as_slice()[first as usize..src.offset(n) as usize]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> VariableWidthBlock {
        VariableWidthBlock::from_u32(vec![0, 3, 3, 8], b"abchello".to_vec())
    }

    #[test]
    fn miniblock_round_trip() {
        let src = sample();
        for bits in [32u8, 64] {
            let mut out = Vec::new();
            encode_miniblock(&src, 1, 3, bits, &mut out);
            assert_eq!(out.len() % (bits as usize / 8), 0);
            let dec = decode_miniblock(&Buffer::from_vec(out), bits, 2, "t").unwrap().into_variable("t").unwrap();
            assert_eq!(dec.value(0), b"");
            assert_eq!(dec.value(1), b"hello");
        }
    }

    #[test]
    fn block_round_trip() {
        let src = sample();
        let enc = encode_block(&src);
        let dec = decode_block(&Buffer::from_vec(enc), 3, "t").unwrap().into_variable("t").unwrap();
        assert_eq!(dec.value(0), b"abc");
        assert_eq!(dec.value(2), b"hello");
    }

    #[test]
    fn hostile_offsets_are_errors() {
        let mut out = Vec::new();
        encode_miniblock(&sample(), 0, 3, 32, &mut out);
        out[8] = 0xFF; // an offset far beyond the buffer
        assert!(decode_miniblock(&Buffer::from_vec(out), 32, 3, "t").is_err());
    }
}
