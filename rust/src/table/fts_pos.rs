//! Token positions of an INVERTED index built `with_position` (pylance 14's
//! `positions_layout` `shared_stream_v2`, `positions_codec` `packed_delta_v1`), and the
//! phrase check that uses them.
//!
//! Each token's positions are one byte stream (`_compressed_position`). It holds, for each
//! posting block of `block_size` documents in turn, the positions of that block's documents:
//! per document its positions as deltas (the first one absolute, each later one minus the one
//! before), all of the block's deltas in one sequence, cut into runs of 128 values, each a bit
//! width (one byte) then the run bit-packed (BitPacker4x, not delta-coded), the last, partial
//! run as varints. `_position_block_offset` gives the byte where each posting block's
//! positions start.

use bitpacking::{BitPacker, BitPacker4x};

use crate::error::{Error, Result};

const RUN: usize = 128;

fn write_varint(dst: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        dst.push((value as u8) | 0x80);
        value >>= 7;
    }
    dst.push(value as u8);
}

fn read_varint(src: &[u8], at: &mut usize) -> Result<u32> {
    let mut value = 0u32;
    let mut shift = 0u32;
    while *at < src.len() && shift < 35 {
        let byte = src[*at];
        *at += 1;
        value |= u32::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
    }
    Err(Error::Corrupt("INVERTED index positions: bad varint".into()))
}

/// The positions stream of one token and the offsets of its posting blocks: `freqs` holds
/// each document's number of positions (documents in posting order), `positions` all of them
/// one document after another (ascending within a document).
pub fn encode(freqs: &[u32], positions: &[u32], block_size: usize) -> Result<(Vec<u8>, Vec<u32>)> {
    if block_size == 0 {
        return Err(Error::InvalidInput("positions: block size 0".into()));
    }
    if freqs.iter().map(|&f| f as u64).sum::<u64>() != positions.len() as u64 {
        return Err(Error::InvalidInput("positions: frequencies and positions disagree".into()));
    }
    let packer = BitPacker4x::new();
    let mut buffer = [0u8; RUN * 4];
    let mut out = Vec::new();
    let mut offsets = Vec::with_capacity(freqs.len().div_ceil(block_size));
    let mut at = 0usize;
    let mut deltas: Vec<u32> = Vec::new();
    for block in freqs.chunks(block_size) {
        offsets.push(u32::try_from(out.len()).map_err(|_| Error::InvalidInput("positions stream over 4 GiB".into()))?);
        deltas.clear();
        for &f in block {
            let p = &positions[at..at + f as usize];
            at += f as usize;
            for (i, &v) in p.iter().enumerate() {
                if i > 0 && v < p[i - 1] {
                    return Err(Error::InvalidInput("positions must ascend within a document".into()));
                }
                deltas.push(if i == 0 { v } else { v - p[i - 1] });
            }
        }
        let mut runs = deltas.chunks_exact(RUN);
        for run in runs.by_ref() {
            let bits = packer.num_bits(run);
            let n = packer.compress(run, &mut buffer, bits);
            out.push(bits);
            out.extend_from_slice(&buffer[..n]);
        }
        runs.remainder().iter().for_each(|&v| write_varint(&mut out, v));
    }
    Ok((out, offsets))
}

/// The absolute positions of one token's documents (`freqs` positions each, in posting
/// order), from its `stream` and block `offsets`.
pub fn decode(stream: &[u8], offsets: &[u32], freqs: &[u32], block_size: usize) -> Result<Vec<u32>> {
    if block_size == 0 || offsets.len() != freqs.len().div_ceil(block_size) {
        return Err(Error::Corrupt(format!(
            "INVERTED index positions: {} block offsets for {} documents",
            offsets.len(),
            freqs.len()
        )));
    }
    let packer = BitPacker4x::new();
    let mut unpacked = [0u32; RUN];
    let mut out: Vec<u32> = Vec::with_capacity(freqs.iter().map(|&f| f as usize).sum());
    for (b, block) in freqs.chunks(block_size).enumerate() {
        let mut at = offsets[b] as usize;
        let n: usize = block.iter().map(|&f| f as usize).sum();
        let mut deltas: Vec<u32> = Vec::with_capacity(n);
        while n - deltas.len() >= RUN {
            let bits = *stream.get(at).ok_or_else(|| Error::Corrupt("INVERTED index positions truncated".into()))?;
            if bits > 32 {
                return Err(Error::Corrupt(format!("INVERTED index positions: {bits} bits")));
            }
            let len = bits as usize * RUN / 8;
            let packed =
                stream.get(at + 1..at + 1 + len).ok_or_else(|| Error::Corrupt("INVERTED index positions truncated".into()))?;
            packer.decompress(packed, &mut unpacked, bits);
            deltas.extend_from_slice(&unpacked);
            at += 1 + len;
        }
        while deltas.len() < n {
            deltas.push(read_varint(stream, &mut at)?);
        }
        let mut d = 0usize;
        for &f in block {
            let mut prev = 0u32;
            for i in 0..f as usize {
                prev = if i == 0 { deltas[d] } else { prev.wrapping_add(deltas[d]) };
                out.push(prev);
                d += 1;
            }
        }
    }
    Ok(out)
}

/// One query token of a phrase in one partition: its documents (ascending), where each
/// one's positions start (one more than the documents: the last is where they end) and the
/// positions, one document after another; all little-endian `u32` bytes, read in place.
pub struct PhraseList<'a> {
    /// doc ids, ascending
    pub docs: &'a [u8],
    /// index of each doc's first position, then the number of positions
    pub starts: &'a [u8],
    /// the positions, in doc order
    pub positions: &'a [u8],
    /// the token's place in the query (its position as the analyzer numbers the query)
    pub query_pos: i32,
}

/// The `i`-th little-endian u32 of `b` (one bounds check, one load).
#[inline]
pub(crate) fn le_u32(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().expect("4 bytes"))
}

/// Whether the tokens form the phrase in one document, as pylance 14 decides it: `lists`
/// holds each token's positions in the document with its place in the query. With `slop` 0,
/// the tokens at the query's relative places; with more, pylance's walk over the tokens in
/// query order (each at most `slop` positions after where the one before puts it, never
/// before it), every position cursor starting at the token's first position.
pub(crate) fn phrase_in_doc(lists: &mut [(&[u32], i32)], slop: i32) -> bool {
    lists.sort_unstable_by_key(|l| l.1);
    if slop == 0 {
        let (first, q0) = lists[0];
        return first.iter().any(|&p| {
            lists[1..].iter().all(|&(pos, q)| {
                let want = i64::from(p) + i64::from(q) - i64::from(q0);
                want >= 0 && pos.binary_search(&(want as u32)).is_ok()
            })
        });
    }
    let mut idx: Vec<usize> = vec![0; lists.len()];
    let seek = |pos: &[u32], q: i32, least: i32| pos.partition_point(|&p| (p as i64) < i64::from(least) + i64::from(q));
    loop {
        let rel = |i: usize, idx: &[usize]| lists[i].0.get(idx[i]).map(|&p| p as i32 - lists[i].1);
        let mut target: Option<i32> = None;
        let mut all = true;
        for i in 0..lists.len().saturating_sub(1) {
            let (Some(last), Some(next)) = (rel(i, &idx), rel(i + 1, &idx)) else {
                return false;
            };
            let move_to = if last > next { last } else { (last + 1).max(next - slop) };
            target = target.max(Some(move_to));
            if !(last <= next && next <= last + slop) {
                all = false;
                break;
            }
        }
        if all {
            return true;
        }
        let least = target.expect("a window was checked");
        for (i, l) in lists.iter().enumerate() {
            // (after the first round every cursor is at a relative position of at least the
            // last target, and the next target is past it: the walk ends)
            idx[i] = seek(l.0, l.1, least);
        }
    }
}

/// The first index in `lo..hi` of the u32 bytes `b` whose value is at least `target`.
#[inline]
pub(crate) fn lower_bound(b: &[u8], mut lo: usize, mut hi: usize, target: u32) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if le_u32(b, mid) < target {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// [`lower_bound`] found by galloping from `lo` (steps of 1, 2, 4, ...): cheap when the
/// value is near `lo`, as when walking a dense list in step with another.
#[inline]
pub(crate) fn gallop(b: &[u8], lo: usize, hi: usize, target: u32) -> usize {
    if lo >= hi || le_u32(b, lo) >= target {
        return lo;
    }
    let mut step = 1;
    while lo + step < hi && le_u32(b, lo + step) < target {
        step *= 2;
    }
    // (the value at lo + step / 2 is below target; the one at lo + step, if any, is not)
    lower_bound(b, lo + step / 2 + 1, (lo + step + 1).min(hi), target)
}

/// The documents holding every token of `lists` as a phrase within `slop` (see
/// [`phrase_in_doc`]), ascending. The token with the fewest documents leads; the others are
/// searched for each of its documents.
pub fn phrase_docs(lists: &[PhraseList<'_>], slop: u32) -> Result<Vec<u32>> {
    if lists.is_empty() {
        return Ok(Vec::new());
    }
    for l in lists {
        if l.docs.len() % 4 != 0 || l.starts.len() != l.docs.len() + 4 || l.positions.len() % 4 != 0 {
            return Err(Error::InvalidInput("phrase: docs, position starts and positions disagree".into()));
        }
    }
    let slop = i32::try_from(slop).map_err(|_| Error::InvalidInput("slop too large".into()))?;
    let n = lists.len();
    let lead = (0..n).min_by_key(|&i| lists[i].docs.len()).expect("a list");
    let mut cursor = vec![0usize; n];
    let mut buffers: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut out = Vec::new();
    'docs: for j in 0..lists[lead].docs.len() / 4 {
        let doc = le_u32(lists[lead].docs, j);
        for (i, l) in lists.iter().enumerate() {
            let len = l.docs.len() / 4;
            let c = if i == lead { j } else { gallop(l.docs, cursor[i], len, doc) };
            cursor[i] = c;
            if c >= len {
                break 'docs;
            }
            if le_u32(l.docs, c) != doc {
                continue 'docs;
            }
        }
        for (i, l) in lists.iter().enumerate() {
            let (from, to) = (le_u32(l.starts, cursor[i]) as usize, le_u32(l.starts, cursor[i] + 1) as usize);
            if from > to || to * 4 > l.positions.len() {
                return Err(Error::Corrupt("INVERTED index positions: fewer than the frequencies say".into()));
            }
            buffers[i].clear();
            buffers[i].extend((from..to).map(|k| le_u32(l.positions, k)));
        }
        let mut per: Vec<(&[u32], i32)> = buffers.iter().zip(lists).map(|(b, l)| (b.as_slice(), l.query_pos)).collect();
        if phrase_in_doc(&mut per, slop) {
            out.push(doc);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let freqs: Vec<u32> = (0..300u32).map(|i| 1 + (i * 7) % 40).collect();
        let mut positions = Vec::new();
        for (i, &f) in freqs.iter().enumerate() {
            let mut p = (i as u32) % 5;
            for k in 0..f {
                p += k * 3 + 1 + (i as u32 % 200);
                positions.push(p);
            }
        }
        let (stream, offsets) = encode(&freqs, &positions, 128).unwrap();
        assert_eq!(offsets.len(), 3);
        assert_eq!(decode(&stream, &offsets, &freqs, 128).unwrap(), positions);
        assert!(decode(&stream[..10], &offsets, &freqs, 128).is_err());
    }

    fn b(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn list<'a>(bufs: &'a [Vec<u8>; 3], q: i32) -> PhraseList<'a> {
        PhraseList { docs: &bufs[0], starts: &bufs[1], positions: &bufs[2], query_pos: q }
    }

    #[test]
    fn gallop_is_lower_bound() {
        let v: Vec<u32> = (0..300u32).map(|i| i * 3 + (i % 4)).collect();
        let bytes = b(&v);
        for lo in [0usize, 1, 5, 100, 299, 300] {
            for target in 0..1000u32 {
                assert_eq!(gallop(&bytes, lo, 300, target), lower_bound(&bytes, lo, 300, target), "{lo} {target}");
            }
        }
    }

    #[test]
    fn phrases() {
        // doc 0: a@1 b@2; doc 1: a@1 b@3; doc 2: b@0 a@1
        let a = [b(&[0, 1, 2]), b(&[0, 1, 2, 3]), b(&[1, 1, 1])];
        let bb = [b(&[0, 1, 2]), b(&[0, 1, 2, 3]), b(&[2, 3, 0])];
        assert_eq!(phrase_docs(&[list(&a, 0), list(&bb, 1)], 0).unwrap(), vec![0]);
        assert_eq!(phrase_docs(&[list(&a, 0), list(&bb, 1)], 1).unwrap(), vec![0, 1]);
        // (a repeated token: "x y y x" in "z x y y x"; a document only one token holds)
        let x = [b(&[0, 5]), b(&[0, 2, 3]), b(&[1, 4, 0])];
        let y = [b(&[0]), b(&[0, 2]), b(&[2, 3])];
        assert_eq!(phrase_docs(&[list(&x, 0), list(&y, 1), list(&y, 2), list(&x, 3)], 0).unwrap(), vec![0]);
        let short = [b(&[0]), b(&[0, 5]), b(&[1])];
        assert!(phrase_docs(&[list(&short, 0), list(&y, 1)], 0).is_err());
    }
}
