//! Inline and out-of-line FastLanes bit-packing of unsigned integers (and of the raw bit
//! patterns of signed integers and floats: there is no zig-zag or frame of reference, so any
//! value with its top bit set forces the full width and the writer chooses `flat` instead).
//!
//! * **Inline** (`InlineBitpacking`): each block of ≤ 1024 values is stored as one word of
//!   the uncompressed width `T` holding the packed width `W`, followed by `1024·W/T` packed
//!   words; the last block is zero-padded to 1024 values. Used for mini-block value chunks
//!   (exactly one block per chunk) and small level streams.
//! * **Out-of-line** (`OutOfLineBitpacking`): one `W` for the whole buffer, given in the
//!   protobuf; full blocks are packed; the trailing partial block is either padded and
//!   packed or stored raw, whichever is smaller — the reader tells them apart by size.
//!
//! Random access: a mini-block chunk is one block, so a take decodes at most 1024 values.

use arrow_buffer::{ArrowNativeType, Buffer, MutableBuffer};

use super::block::{DataBlock, FixedWidthBlock};
use crate::error::{Error, Result};
use crate::kernels::bitpack::{self, BitPackWord, BLOCK_LEN};

/// An unsigned word that can be bit-packed and stored in Arrow buffers.
pub trait Word: BitPackWord + ArrowNativeType {
    /// Reads a little-endian word from exactly `Self::BYTES` bytes.
    fn from_le(b: &[u8]) -> Self;
    /// The value as u64.
    fn as_u64(self) -> u64;
}

macro_rules! impl_word {
    ($($t:ty),*) => {$(
        impl Word for $t {
            #[inline]
            fn from_le(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().expect("word-sized slice"))
            }
            #[inline]
            fn as_u64(self) -> u64 {
                self as u64
            }
        }
    )*};
}
impl_word!(u8, u16, u32, u64);

/// Calls `$body` with `$t` bound to the unsigned type of `$bits` bits (8/16/32/64), or
/// returns a corrupt-data error for any other width.
macro_rules! with_word_type {
    ($bits:expr, $t:ident, $body:block) => {
        match $bits {
            8 => {
                type $t = u8;
                $body
            }
            16 => {
                type $t = u16;
                $body
            }
            32 => {
                type $t = u32;
                $body
            }
            64 => {
                type $t = u64;
                $body
            }
            other => Err($crate::error::Error::corrupt(format!("bit-packing of {other}-bit values"))),
        }
    };
}
#[allow(unused_imports)]
pub(crate) use with_word_type;

/// Loads up to 1024 little-endian words from `bytes` into a zero-padded block.
fn load_block<T: Word>(bytes: &[u8], block: &mut [T; BLOCK_LEN]) {
    let n = bytes.len() / T::BYTES;
    for (i, chunk) in bytes.chunks_exact(T::BYTES).enumerate() {
        block[i] = T::from_le(chunk);
    }
    for v in &mut block[n..] {
        *v = T::default();
    }
}

fn decode_inline_typed<T: Word>(data: &[u8], num_values: usize, ctx: &str) -> Result<Buffer> {
    // Every block of up to 1024 values starts with a header word: more values than the
    // headers `data` can hold is a corrupt count, refused before anything is allocated.
    if num_values.div_ceil(BLOCK_LEN) > data.len() / T::BYTES {
        return Err(Error::corrupt(format!("{ctx}: {num_values} bit-packed values in {} bytes", data.len())));
    }
    let mut out = MutableBuffer::new(num_values * T::BYTES);
    let mut pos = 0usize;
    let mut remaining = num_values;
    let mut block = [T::default(); BLOCK_LEN];
    while remaining > 0 {
        let header = data
            .get(pos..pos + T::BYTES)
            .ok_or_else(|| Error::corrupt(format!("{ctx}: bit-packed data ends before a block header")))?;
        let width = T::from_le(header).as_u64();
        pos += T::BYTES;
        if width > T::BITS as u64 {
            return Err(Error::corrupt(format!("{ctx}: bit width {width} exceeds {} bits", T::BITS)));
        }
        let nbytes = bitpack::packed_bytes::<T>(width as usize);
        let packed = data.get(pos..pos + nbytes).ok_or_else(|| Error::corrupt(format!("{ctx}: bit-packed block ends early")))?;
        bitpack::unpack_le_bytes::<T>(width as usize, packed, &mut block);
        pos += nbytes;
        let take = remaining.min(BLOCK_LEN);
        out.extend_from_slice(&block[..take]);
        remaining -= take;
    }
    Ok(out.into())
}

/// Decodes an inline-bit-packed buffer holding `num_values` values of `uncompressed_bits`.
pub fn decode_inline(data: &[u8], uncompressed_bits: u64, num_values: u64, ctx: &str) -> Result<DataBlock> {
    let n = num_values as usize;
    let buf = with_word_type!(uncompressed_bits, T, { decode_inline_typed::<T>(data, n, ctx) })?;
    Ok(DataBlock::Fixed(FixedWidthBlock { data: buf, bits_per_value: uncompressed_bits, num_values }))
}

fn decode_inline_rows_typed<T: Word>(data: &[u8], num_values: usize, rows: &[u32], ctx: &str) -> Result<Buffer> {
    // Locate every block (its width and packed bytes) without unpacking anything.
    let mut blocks: Vec<(usize, usize)> = Vec::with_capacity(num_values.div_ceil(BLOCK_LEN));
    let mut pos = 0usize;
    for _ in 0..num_values.div_ceil(BLOCK_LEN) {
        let header = data
            .get(pos..pos + T::BYTES)
            .ok_or_else(|| Error::corrupt(format!("{ctx}: bit-packed data ends before a block header")))?;
        let width = T::from_le(header).as_u64() as usize;
        if width > T::BITS {
            return Err(Error::corrupt(format!("{ctx}: bit width {width} exceeds {} bits", T::BITS)));
        }
        pos += T::BYTES;
        let nbytes = bitpack::packed_bytes::<T>(width);
        if pos + nbytes > data.len() {
            return Err(Error::corrupt(format!("{ctx}: bit-packed block ends early")));
        }
        blocks.push((width, pos));
        pos += nbytes;
    }
    let mut out = MutableBuffer::new(rows.len() * T::BYTES);
    for &r in rows {
        let r = r as usize;
        let (width, start) = blocks[r / BLOCK_LEN];
        let packed = &data[start..start + bitpack::packed_bytes::<T>(width)];
        let v: T = bitpack::unpack_one_le_bytes(width, packed, r % BLOCK_LEN);
        out.push(v);
    }
    Ok(out.into())
}

/// Decodes only the values at `rows` (each `< num_values`) of an inline-bit-packed buffer.
pub fn decode_inline_rows(data: &[u8], uncompressed_bits: u64, num_values: u64, rows: &[u32], ctx: &str) -> Result<DataBlock> {
    let buf = with_word_type!(uncompressed_bits, T, { decode_inline_rows_typed::<T>(data, num_values as usize, rows, ctx) })?;
    Ok(DataBlock::Fixed(FixedWidthBlock { data: buf, bits_per_value: uncompressed_bits, num_values: rows.len() as u64 }))
}

fn encode_inline_typed<T: Word>(values: &[u8], out: &mut Vec<u8>) {
    let mut block = [T::default(); BLOCK_LEN];
    for chunk in values.chunks(BLOCK_LEN * T::BYTES) {
        load_block(chunk, &mut block);
        let width = bitpack::max_bit_width(&block[..]);
        let mut header = [0u8; 8];
        header[..8].copy_from_slice(&(width as u64).to_le_bytes());
        out.extend_from_slice(&header[..T::BYTES]);
        bitpack::pack_to_le_bytes(width, &block, out);
    }
}

/// Inline-bit-packs little-endian values of `bits` (8/16/32/64) width, appending to `out`.
pub fn encode_inline(values: &[u8], bits: u64, out: &mut Vec<u8>) -> Result<()> {
    with_word_type!(bits, T, {
        encode_inline_typed::<T>(values, out);
        Ok(())
    })
}

/// Size in bytes of the inline encoding of `values` (without encoding them).
pub fn inline_encoded_size(values: &[u8], bits: u64) -> Result<usize> {
    with_word_type!(bits, T, {
        let mut total = 0usize;
        let mut block = [T::default(); BLOCK_LEN];
        for chunk in values.chunks(BLOCK_LEN * T::BYTES) {
            load_block(chunk, &mut block);
            total += T::BYTES + bitpack::packed_bytes::<T>(bitpack::max_bit_width(&block[..]));
        }
        Ok(total)
    })
}

/// Largest bit width needed by any value of each 1024-value block, and overall.
pub fn max_width(values: &[u8], bits: u64) -> Result<usize> {
    with_word_type!(bits, T, {
        let mut w = 0usize;
        for c in values.chunks_exact(T::BYTES) {
            let v = <T as Word>::from_le(c).as_u64();
            w = w.max(64 - v.leading_zeros() as usize);
        }
        Ok(w)
    })
}

fn decode_ool_typed<T: Word>(data: &[u8], width: usize, num_values: usize, ctx: &str) -> Result<Buffer> {
    decode_ool_vec::<T>(data, width, num_values, ctx).map(Buffer::from_vec)
}

/// Decodes an out-of-line bit-packed buffer of `num_values` values of `width` bits into
/// words of type `T`.
pub fn decode_ool_vec<T: Word>(data: &[u8], width: usize, num_values: usize, ctx: &str) -> Result<Vec<T>> {
    if width > T::BITS {
        return Err(Error::corrupt(format!("{ctx}: bit width {width} exceeds {}", T::BITS)));
    }
    let full_blocks = num_values / BLOCK_LEN;
    let rem = num_values % BLOCK_LEN;
    let block_bytes = bitpack::packed_bytes::<T>(width);
    let packed_full = full_blocks * block_bytes;
    // The partial block is raw iff the buffer is exactly full blocks + rem raw words.
    let raw_tail = data.len() == packed_full + rem * T::BYTES;
    let padded_tail = data.len() == packed_full + if rem > 0 { block_bytes } else { 0 };
    if !raw_tail && !padded_tail {
        return Err(Error::corrupt(format!(
            "{ctx}: out-of-line bit-packed buffer of {} bytes cannot hold {num_values} values of {width} bits",
            data.len()
        )));
    }
    let mut out: Vec<T> = Vec::with_capacity(num_values);
    let mut block = [T::default(); BLOCK_LEN];
    for b in 0..full_blocks {
        bitpack::unpack_le_bytes::<T>(width, &data[b * block_bytes..(b + 1) * block_bytes], &mut block);
        out.extend_from_slice(&block[..]);
    }
    if rem > 0 {
        let tail = &data[packed_full..];
        if raw_tail {
            out.extend(tail.chunks_exact(T::BYTES).map(T::from_le));
        } else {
            bitpack::unpack_le_bytes::<T>(width, tail, &mut block);
            out.extend_from_slice(&block[..rem]);
        }
    }
    Ok(out)
}

/// Decodes an out-of-line bit-packed buffer (`width` bits per value, `uncompressed_bits` wide
/// output).
pub fn decode_out_of_line(data: &[u8], uncompressed_bits: u64, width: u64, num_values: u64, ctx: &str) -> Result<DataBlock> {
    if width > uncompressed_bits {
        return Err(Error::corrupt(format!("{ctx}: bit width {width} exceeds {uncompressed_bits}")));
    }
    let buf = with_word_type!(uncompressed_bits, T, { decode_ool_typed::<T>(data, width as usize, num_values as usize, ctx) })?;
    Ok(DataBlock::Fixed(FixedWidthBlock { data: buf, bits_per_value: uncompressed_bits, num_values }))
}

fn encode_ool_typed<T: Word>(values: &[u8], width: usize, out: &mut Vec<u8>) {
    let n = values.len() / T::BYTES;
    let mut block = [T::default(); BLOCK_LEN];
    let full = n / BLOCK_LEN;
    for b in 0..full {
        load_block(&values[b * BLOCK_LEN * T::BYTES..(b + 1) * BLOCK_LEN * T::BYTES], &mut block);
        bitpack::pack_to_le_bytes(width, &block, out);
    }
    let rem = n % BLOCK_LEN;
    if rem > 0 {
        let tail = &values[full * BLOCK_LEN * T::BYTES..];
        // Pack the tail when padding costs less than storing it raw.
        if width * (BLOCK_LEN - rem) < (T::BITS - width) * rem {
            load_block(tail, &mut block);
            bitpack::pack_to_le_bytes(width, &block, out);
        } else {
            out.extend_from_slice(tail);
        }
    }
}

/// Out-of-line bit-packs little-endian values of `bits` width at `width` bits each.
pub fn encode_out_of_line(values: &[u8], bits: u64, width: u64, out: &mut Vec<u8>) -> Result<()> {
    with_word_type!(bits, T, {
        encode_ool_typed::<T>(values, width as usize, out);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le_u32(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn inline_counts_past_the_headers_are_refused_before_allocating() {
        // (a 2-byte header, width 0: 1024 zeros; a count of 839 million is corrupt)
        let one_block = 0u16.to_le_bytes();
        let dec = decode_inline(&one_block, 16, 1024, "t").unwrap().into_fixed("t").unwrap();
        assert_eq!(dec.data.len(), 2048);
        let err = decode_inline(&one_block, 16, 839_647_136, "levels").unwrap_err();
        assert!(matches!(err, Error::Corrupt(ref m) if m.contains("839647136 bit-packed values in 2 bytes")), "{err:?}");
        assert!(decode_inline(&one_block, 16, 1025, "t").is_err());
    }

    #[test]
    fn inline_round_trip_partial_block() {
        let vals: Vec<u32> = (0..2500).map(|i| (i * 7) % 300).collect();
        let mut enc = Vec::new();
        encode_inline(&le_u32(&vals), 32, &mut enc).unwrap();
        assert_eq!(enc.len(), inline_encoded_size(&le_u32(&vals), 32).unwrap());
        let dec = decode_inline(&enc, 32, vals.len() as u64, "t").unwrap().into_fixed("t").unwrap();
        assert_eq!(dec.data.as_slice(), &le_u32(&vals)[..]);
        // Truncation is an error, not a panic.
        assert!(decode_inline(&enc[..enc.len() - 3], 32, vals.len() as u64, "t").is_err());
    }

    #[test]
    fn out_of_line_raw_and_padded_tails() {
        for n in [0usize, 5, 1000, 1024, 1030, 3000] {
            let vals: Vec<u16> = (0..n).map(|i| (i % 3) as u16).collect();
            let bytes: Vec<u8> = vals.iter().flat_map(|x| x.to_le_bytes()).collect();
            let mut enc = Vec::new();
            encode_out_of_line(&bytes, 16, 2, &mut enc).unwrap();
            let dec = decode_out_of_line(&enc, 16, 2, n as u64, "t").unwrap().into_fixed("t").unwrap();
            assert_eq!(dec.data.as_slice(), &bytes[..], "n={n}");
        }
    }
}
