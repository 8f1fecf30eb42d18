//! Full-text search (INVERTED index) codecs in pylance 14's on-disk format:
//!
//! * the token set: an FST (the `fst` crate's map format) from token to token id;
//! * posting lists: blocks of `block_size` (a multiple of 128) documents, each a little-endian
//!   `f32` block max score, then per 128 documents the first doc id (`u32`), the bit width and
//!   the bit-packed (BitPacker4x) doc-id deltas, the bit width and the bit-packed frequencies;
//!   the last, partial block holds its doc ids as varint deltas then its frequencies as
//!   varints (codec `varint_delta_v1`), or both as little-endian `u32` (`fixed32`).

use bitpacking::{BitPacker, BitPacker4x};

use crate::error::{Error, Result};

/// Documents per BitPacker4x sub-block.
pub const PACK_LEN: usize = 128;
/// Every `(key, value)` of an FST map, in key order.
pub fn fst_entries(bytes: Vec<u8>) -> Result<Vec<(Vec<u8>, u64)>> {
    use fst::Streamer;
    let map = fst::Map::new(bytes).map_err(|e| Error::Corrupt(format!("INVERTED index token set: {e}")))?;
    let mut stream = map.stream();
    let mut out = Vec::with_capacity(map.len());
    while let Some((k, v)) = stream.next() {
        out.push((k.to_vec(), v));
    }
    Ok(out)
}

/// An FST map of `entries` (keys ascending and distinct).
pub fn fst_build(entries: &[(Vec<u8>, u64)]) -> Result<Vec<u8>> {
    let mut builder = fst::MapBuilder::memory();
    for (k, v) in entries {
        builder.insert(k, *v).map_err(|e| Error::InvalidInput(format!("token set: {e}")))?;
    }
    builder.into_inner().map_err(|e| Error::Internal(format!("token set: {e}")))
}

fn read_varint(src: &[u8], at: &mut usize) -> Result<u32> {
    let mut value = 0u32;
    let mut shift = 0u32;
    while *at < src.len() {
        let byte = src[*at];
        *at += 1;
        value |= u32::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
        if shift >= 35 {
            break;
        }
    }
    Err(Error::Corrupt("INVERTED index posting list: bad varint".into()))
}

fn write_varint(dst: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        dst.push((value as u8) | 0x80);
        value >>= 7;
    }
    dst.push(value as u8);
}

fn take<'a>(src: &'a [u8], at: &mut usize, n: usize) -> Result<&'a [u8]> {
    let end = at.checked_add(n).filter(|&e| e <= src.len());
    let Some(end) = end else {
        return Err(Error::Corrupt("INVERTED index posting block is truncated".into()));
    };
    let out = &src[*at..end];
    *at = end;
    Ok(out)
}

/// The doc ids and frequencies of one posting list of `length` documents, stored as `blocks`.
pub fn posting_decode(blocks: &[&[u8]], length: usize, block_size: usize, varint_tail: bool) -> Result<(Vec<u32>, Vec<u32>)> {
    if block_size == 0 || block_size % PACK_LEN != 0 {
        return Err(Error::Corrupt(format!("INVERTED index block size {block_size} is not a multiple of 128")));
    }
    let mut docs = Vec::with_capacity(length);
    let mut freqs = Vec::with_capacity(length);
    let packer = BitPacker4x::new();
    let mut unpacked = [0u32; PACK_LEN];
    for block in blocks {
        let left = length.saturating_sub(docs.len());
        if left == 0 {
            break;
        }
        let mut at = 4; // the block's max score
        if left >= block_size {
            for _ in 0..block_size / PACK_LEN {
                let first = u32::from_le_bytes(take(block, &mut at, 4)?.try_into().expect("4 bytes"));
                let bits = take(block, &mut at, 1)?[0];
                if bits > 32 {
                    return Err(Error::Corrupt(format!("INVERTED index posting block: {bits} bits")));
                }
                let packed = take(block, &mut at, bits as usize * PACK_LEN / 8)?;
                packer.decompress_sorted(first, packed, &mut unpacked, bits);
                docs.extend_from_slice(&unpacked);
                let bits = take(block, &mut at, 1)?[0];
                if bits > 32 {
                    return Err(Error::Corrupt(format!("INVERTED index posting block: {bits} bits")));
                }
                let packed = take(block, &mut at, bits as usize * PACK_LEN / 8)?;
                packer.decompress(packed, &mut unpacked, bits);
                freqs.extend_from_slice(&unpacked);
            }
        } else if varint_tail {
            let mut prev = 0u32;
            for i in 0..left {
                let d = read_varint(block, &mut at)?;
                prev = if i == 0 { d } else { prev.wrapping_add(d) };
                docs.push(prev);
            }
            for _ in 0..left {
                freqs.push(read_varint(block, &mut at)?);
            }
        } else {
            let d = take(block, &mut at, 4 * left)?;
            docs.extend(d.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))));
            let f = take(block, &mut at, 4 * left)?;
            freqs.extend(f.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))));
        }
    }
    if docs.len() != length {
        return Err(Error::Corrupt(format!(
            "INVERTED index posting list holds {} documents, its length says {length}",
            docs.len()
        )));
    }
    Ok((docs, freqs))
}

/// The blocks of one posting list (`docs` ascending), each led by its max score
/// (`block_scores`, one per block).
pub fn posting_encode(
    docs: &[u32],
    freqs: &[u32],
    block_scores: &[f32],
    block_size: usize,
    varint_tail: bool,
) -> Result<Vec<Vec<u8>>> {
    if block_size == 0 || block_size % PACK_LEN != 0 {
        return Err(Error::InvalidInput(format!("block size {block_size} is not a multiple of 128")));
    }
    if docs.len() != freqs.len() || block_scores.len() != docs.len().div_ceil(block_size) {
        return Err(Error::InvalidInput("posting list: docs, frequencies and block scores disagree".into()));
    }
    let packer = BitPacker4x::new();
    let mut buffer = [0u8; PACK_LEN * 4];
    let mut out = Vec::with_capacity(block_scores.len());
    for (b, score) in block_scores.iter().enumerate() {
        let start = b * block_size;
        let end = (start + block_size).min(docs.len());
        let mut block = score.to_le_bytes().to_vec();
        if end - start == block_size {
            for s in (start..end).step_by(PACK_LEN) {
                let d = &docs[s..s + PACK_LEN];
                if d.windows(2).any(|w| w[0] > w[1]) {
                    return Err(Error::InvalidInput("posting list doc ids must ascend".into()));
                }
                let bits = packer.num_bits_sorted(d[0], d);
                let n = packer.compress_sorted(d[0], d, &mut buffer, bits);
                block.extend_from_slice(&d[0].to_le_bytes());
                block.push(bits);
                block.extend_from_slice(&buffer[..n]);
                let f = &freqs[s..s + PACK_LEN];
                let bits = packer.num_bits(f);
                let n = packer.compress(f, &mut buffer, bits);
                block.push(bits);
                block.extend_from_slice(&buffer[..n]);
            }
        } else if varint_tail {
            let mut prev = 0u32;
            for (i, &d) in docs[start..end].iter().enumerate() {
                if i > 0 && d < prev {
                    return Err(Error::InvalidInput("posting list doc ids must ascend".into()));
                }
                write_varint(&mut block, if i == 0 { d } else { d - prev });
                prev = d;
            }
            freqs[start..end].iter().for_each(|&f| write_varint(&mut block, f));
        } else {
            docs[start..end].iter().for_each(|d| block.extend_from_slice(&d.to_le_bytes()));
            freqs[start..end].iter().for_each(|f| block.extend_from_slice(&f.to_le_bytes()));
        }
        out.push(block);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fst_round_trip() {
        let entries = vec![(b"a".to_vec(), 3u64), (b"bc".to_vec(), 1), (b"bd".to_vec(), 0)];
        assert_eq!(fst_entries(fst_build(&entries).unwrap()).unwrap(), entries);
    }

    #[test]
    fn posting_round_trip() {
        let docs: Vec<u32> = (0..300u32).map(|i| i * 8 + (i % 7)).collect();
        let freqs: Vec<u32> = (0..300u32).map(|i| 1 + i % 5).collect();
        for varint in [true, false] {
            let blocks = posting_encode(&docs, &freqs, &[1.0, 2.0, 3.0], 128, varint).unwrap();
            let refs: Vec<&[u8]> = blocks.iter().map(|b| b.as_slice()).collect();
            let (d, f) = posting_decode(&refs, 300, 128, varint).unwrap();
            assert_eq!((d, f), (docs.clone(), freqs.clone()));
        }
    }
}
