//! Random access by byte ranges: planning which bytes selected rows need, and decoding them.

use std::ops::Range;

use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, Buffer, MutableBuffer};
use arrow_schema::DataType;

use crate::encodings::{DataBlock, FixedSizeListBlock, FixedWidthBlock, VariableWidthBlock};
use crate::error::{Error, Result};
use crate::format::enc20;
use crate::schema::LeafKind;
use crate::structural::miniblock::DecodedChunk;

use super::*;

/// A page shape that can be read by byte ranges.
#[derive(Debug, Clone, Copy)]
enum RangedPage {
    /// Every row null: nothing to read.
    AllNull,
    /// Fixed-width values (`bits` is 1 or a multiple of 8), with an optional validity bitmap.
    Fixed { validity: Option<usize>, values: usize, bits: u64 },
    /// Fixed-size lists of fixed-width items.
    FixedSizeList { validity: Option<usize>, dimension: u64, item_validity: Option<usize>, items: usize, item_bits: u64 },
    /// Strings / binary with u64 end indices and plain bytes.
    Binary { indices: usize, bytes: usize, null_adjustment: u64 },
}

/// `(validity buffer, value node)` of a nullable node with a plain validity bitmap.
fn nullable_parts(node: &Node) -> Option<(Option<usize>, &Node)> {
    match node {
        Node::NoNulls(v) => Some((None, v)),
        Node::SomeNulls { validity, values } => match validity.as_ref() {
            Node::Flat { bits: 1, buffer, compression: None } => Some((Some(*buffer), values)),
            _ => None,
        },
        _ => None,
    }
}

fn plain_flat(node: &Node) -> Option<(usize, u64)> {
    match node {
        Node::Flat { bits, buffer, compression: None } => Some((*buffer, *bits)),
        _ => None,
    }
}

impl RangedPage {
    fn of(node: &Node) -> Option<RangedPage> {
        match node {
            Node::AllNulls => return Some(RangedPage::AllNull),
            Node::PackedStruct { bits, buffer } => {
                return Some(RangedPage::Fixed { validity: None, values: *buffer, bits: *bits })
            }
            _ => {}
        }
        if let Node::Binary { indices, bytes, null_adjustment } = node {
            let indices = match indices.as_ref() {
                Node::NoNulls(v) => v,
                other => other,
            };
            return match (plain_flat(indices), plain_flat(bytes)) {
                (Some((indices, 64)), Some((bytes, 8))) => {
                    Some(RangedPage::Binary { indices, bytes, null_adjustment: *null_adjustment })
                }
                _ => None,
            };
        }
        let (validity, values) = nullable_parts(node)?;
        if let Some((values, bits)) = plain_flat(values) {
            return Some(RangedPage::Fixed { validity, values, bits });
        }
        if let Node::FixedSizeList { dimension, items } = values {
            let (item_validity, items) = nullable_parts(items)?;
            let (items, item_bits) = plain_flat(items)?;
            return Some(RangedPage::FixedSizeList { validity, dimension: *dimension, item_validity, items, item_bits });
        }
        None
    }
}

/// Whether [`read_rows`] reads the page by byte ranges (then the caller need not fetch or
/// cache its buffers beforehand).
pub fn supports_ranged_reads(enc: &enc20::ArrayEncoding, num_buffers: usize) -> bool {
    read_rounds(enc, num_buffers).is_some()
}

/// How many reads (calls of the source's fetch) [`read_rows`] makes for a page that it
/// reads by byte ranges (`None`: the page is decoded from its loaded buffers, no reads).
pub fn read_rounds(enc: &enc20::ArrayEncoding, num_buffers: usize) -> Option<usize> {
    Node::parse(enc, num_buffers).ok().as_ref().and_then(RangedPage::of).map(|shape| match shape {
        RangedPage::AllNull => 0,
        RangedPage::Fixed { .. } | RangedPage::FixedSizeList { .. } => 1,
        RangedPage::Binary { .. } => 2,
    })
}

/// Fetches absolute byte ranges of the file, one buffer per range.
pub type FetchRanges<'a> = &'a dyn Fn(&[Range<u64>]) -> Result<Vec<Buffer>>;

/// Where a page's bytes come from.
pub struct PageSource<'a> {
    /// `(absolute position, size)` of each page buffer.
    pub locations: &'a [(u64, u64)],
    /// The page buffers if they were fetched beforehand (all of them), else empty.
    pub loaded: &'a [Buffer],
    /// Reads byte ranges of the file.
    pub fetch: FetchRanges<'a>,
}

/// Reads rows `rows` (sorted, non-overlapping, page-local ranges) of a 2.0 page of
/// `num_rows` rows: by byte ranges when the page's shape allows it, otherwise from the
/// loaded (or freshly fetched) buffers. The result holds exactly the selected rows.
pub fn read_rows(
    enc: &enc20::ArrayEncoding,
    src: &PageSource,
    num_rows: u64,
    kind: &LeafKind,
    data_type: &DataType,
    rows: &[Range<u64>],
) -> Result<DecodedChunk> {
    check_row_ranges(rows, num_rows)?;
    let node = Node::parse(enc, src.locations.len())?;
    let indexing = DictionaryIndices::for_type(data_type);
    let Some(shape) = RangedPage::of(&node) else {
        if src.loaded.len() == src.locations.len() {
            return decode_page_rows(enc, src.loaded, num_rows, kind, indexing, rows);
        }
        let ranges: Vec<Range<u64>> = src.locations.iter().map(|&(p, s)| p..p + s).collect();
        let bufs = fetch_checked(src.fetch, &ranges)?;
        return decode_page_rows(enc, &bufs, num_rows, kind, indexing, rows);
    };
    let count: u64 = rows.iter().map(|r| r.end - r.start).sum();
    let rows: Vec<Range<u64>> = rows.iter().filter(|r| r.end > r.start).cloned().collect();
    let decoded = match shape {
        RangedPage::AllNull => {
            Decoded { values: DataBlock::Empty { num_values: count }, validity: Some(BooleanBuffer::new_unset(count as usize)) }
        }
        RangedPage::Fixed { validity, values, bits } => {
            let mut plan = RangePlan::default();
            let v = validity.map(|b| plan.bits(src.locations[b], &rows, 1)).transpose()?;
            let d = plan.values(src.locations[values], &rows, bits)?;
            let fetched = plan.fetch(src.fetch)?;
            Decoded {
                values: DataBlock::Fixed(FixedWidthBlock { data: d.assemble(&fetched), bits_per_value: bits, num_values: count }),
                validity: v.map(|v| BooleanBuffer::new(v.assemble(&fetched), 0, count as usize)),
            }
        }
        RangedPage::FixedSizeList { validity, dimension, item_validity, items, item_bits } => {
            let item_rows: Vec<Range<u64>> =
                rows.iter().map(|r| Ok(mul(r.start, dimension)?..mul(r.end, dimension)?)).collect::<Result<_>>()?;
            let num_items = mul(count, dimension)?;
            let mut plan = RangePlan::default();
            let v = validity.map(|b| plan.bits(src.locations[b], &rows, 1)).transpose()?;
            let iv = item_validity.map(|b| plan.bits(src.locations[b], &item_rows, 1)).transpose()?;
            let d = plan.values(src.locations[items], &item_rows, item_bits)?;
            let fetched = plan.fetch(src.fetch)?;
            let child = FixedWidthBlock { data: d.assemble(&fetched), bits_per_value: item_bits, num_values: num_items };
            Decoded {
                values: DataBlock::FixedSizeList(FixedSizeListBlock {
                    child: Box::new(DataBlock::Fixed(child)),
                    dimension,
                    item_validity: iv.map(|iv| iv.assemble(&fetched)),
                }),
                validity: v.map(|v| BooleanBuffer::new(v.assemble(&fetched), 0, count as usize)),
            }
        }
        RangedPage::Binary { indices, bytes, null_adjustment } => {
            read_binary_rows(src, indices, bytes, null_adjustment, &rows, count)?
        }
    };
    into_chunk(decoded, kind)
}

fn mul(a: u64, b: u64) -> Result<u64> {
    a.checked_mul(b).ok_or_else(|| Error::corrupt(format!("{CTX}: position {a} × {b} overflows")))
}

fn fetch_checked(fetch: FetchRanges, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
    let bufs = fetch(ranges)?;
    if bufs.len() != ranges.len() || bufs.iter().zip(ranges).any(|(b, r)| b.len() as u64 != r.end - r.start) {
        return Err(Error::corrupt(format!("{CTX}: a read returned fewer bytes than asked for")));
    }
    Ok(bufs)
}

/// Byte ranges to fetch for several pieces of a page, fetched in one call.
#[derive(Default)]
struct RangePlan {
    ranges: Vec<Range<u64>>,
}

/// One piece of a [`RangePlan`]: which fetched ranges hold it and how to cut them.
struct Piece {
    /// Index of the first fetched range and number of ranges.
    first: usize,
    /// Per range: bit offset of the first wanted bit and number of wanted bits (bitmaps),
    /// or `None` for whole-byte values.
    bits: Vec<Option<(usize, usize)>>,
}

impl RangePlan {
    /// Plans reading `rows × per_row` bits of the bitmap in `buffer`.
    fn bits(&mut self, (pos, size): (u64, u64), rows: &[Range<u64>], per_row: u64) -> Result<Piece> {
        let first = self.ranges.len();
        let mut bits = Vec::with_capacity(rows.len());
        for r in rows {
            let (s, e) = (mul(r.start, per_row)?, mul(r.end, per_row)?);
            let (lo, hi) = (s / 8, e.div_ceil(8));
            if hi > size {
                return Err(Error::corrupt(format!("{CTX}: bit {e} lies beyond a {size}-byte bitmap")));
            }
            self.ranges.push(pos + lo..pos + hi);
            bits.push(Some(((s % 8) as usize, (e - s) as usize)));
        }
        Ok(Piece { first, bits })
    }

    /// Plans reading the values of `rows` from a flat buffer of `bits`-bit values.
    fn values(&mut self, loc: (u64, u64), rows: &[Range<u64>], bits: u64) -> Result<Piece> {
        if bits == 1 {
            return self.bits(loc, rows, 1);
        }
        let (pos, size) = loc;
        let w = bits / 8;
        let first = self.ranges.len();
        for r in rows {
            let (s, e) = (mul(r.start, w)?, mul(r.end, w)?);
            if e > size {
                return Err(Error::corrupt(format!("{CTX}: values end at byte {e} of a {size}-byte buffer")));
            }
            self.ranges.push(pos + s..pos + e);
        }
        Ok(Piece { first, bits: vec![None; rows.len()] })
    }

    fn fetch(&self, fetch: FetchRanges) -> Result<Vec<Buffer>> {
        fetch_checked(fetch, &self.ranges)
    }
}

impl Piece {
    /// Concatenates the piece's fetched bytes (bitmaps re-packed from bit 0).
    fn assemble(&self, fetched: &[Buffer]) -> Buffer {
        let parts = &fetched[self.first..self.first + self.bits.len()];
        if self.bits.iter().all(|b| b.is_none()) {
            if parts.len() == 1 {
                return parts[0].clone();
            }
            let mut out = MutableBuffer::new(parts.iter().map(|p| p.len()).sum());
            for p in parts {
                out.extend_from_slice(p.as_slice());
            }
            return out.into();
        }
        let total: usize = self.bits.iter().map(|b| b.map_or(0, |(_, n)| n)).sum();
        let mut out = BooleanBufferBuilder::new(total);
        for (p, b) in parts.iter().zip(&self.bits) {
            if let Some((offset, n)) = b {
                out.append_packed_range(*offset..*offset + *n, p.as_slice());
            }
        }
        out.finish().into_inner()
    }
}

fn read_binary_rows(
    src: &PageSource,
    indices: usize,
    bytes: usize,
    null_adjustment: u64,
    rows: &[Range<u64>],
    count: u64,
) -> Result<Decoded> {
    let (ipos, isize) = src.locations[indices];
    let (bpos, bsize) = src.locations[bytes];
    // Round 1: the index before each run (its start offset) and the run's own indices.
    let mut index_ranges = Vec::with_capacity(rows.len());
    for r in rows {
        let first = r.start.saturating_sub(1);
        let end = mul(r.end, 8)?;
        if end > isize {
            return Err(Error::corrupt(format!("{CTX}: binary index {} lies beyond a {isize}-byte buffer", r.end - 1)));
        }
        index_ranges.push(ipos + first * 8..ipos + end);
    }
    let fetched = fetch_checked(src.fetch, &index_ranges)?;
    // Each run's bytes: from the end of the value before it to the end of its last value
    // (only those two indices are needed to plan the second read; every index is checked
    // when the offsets are built below).
    let words_of = |buf: &Buffer| -> usize { buf.len() / 8 };
    let word = |buf: &Buffer, i: usize| -> u64 { u64::from_le_bytes(buf.as_slice()[i * 8..i * 8 + 8].try_into().unwrap()) };
    let mut byte_ranges = Vec::with_capacity(rows.len());
    for (r, buf) in rows.iter().zip(&fetched) {
        let n = words_of(buf);
        let start = if r.start == 0 { 0 } else { split_binary_index(word(buf, 0), null_adjustment).1 };
        let own = if r.start == 0 { n } else { n - 1 };
        let end = if own == 0 { start } else { split_binary_index(word(buf, n - 1), null_adjustment).1 };
        if end < start || end > bsize {
            return Err(Error::corrupt(format!(
                "{CTX}: binary values {}..{} span bytes {start}..{end} of {bsize}",
                r.start, r.end
            )));
        }
        byte_ranges.push(bpos + start..bpos + end);
    }
    let wanted: Vec<Range<u64>> = byte_ranges.iter().filter(|r| r.end > r.start).cloned().collect();
    let data_parts = fetch_checked(src.fetch, &wanted)?;
    let mut offsets: Vec<u64> = Vec::with_capacity(count as usize + 1);
    offsets.push(0);
    let mut validity = BooleanBufferBuilder::new(count as usize);
    for (r, buf) in rows.iter().zip(&fetched) {
        let words: Vec<u64> = buf.as_slice().chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
        let (start, own) =
            if r.start == 0 { (0, &words[..]) } else { (split_binary_index(words[0], null_adjustment).1, &words[1..]) };
        let base = *offsets.last().unwrap_or(&0);
        let mut prev = start;
        for (k, &v) in own.iter().enumerate() {
            let (valid, end) = split_binary_index(v, null_adjustment);
            if end < prev || end > bsize {
                return Err(Error::corrupt(format!(
                    "{CTX}: binary value {} ends at byte {end} (previous end {prev}, {bsize} bytes of values)",
                    r.start + k as u64
                )));
            }
            validity.append(valid);
            offsets.push(base + end - start);
            prev = end;
        }
    }
    let data = if data_parts.len() == 1 {
        data_parts[0].clone()
    } else {
        let mut out = MutableBuffer::new(data_parts.iter().map(|b| b.len()).sum());
        for p in &data_parts {
            out.extend_from_slice(p.as_slice());
        }
        out.into()
    };
    let validity = validity.finish();
    let block = VariableWidthBlock { offsets: Buffer::from_vec(offsets), data, bits_per_offset: 64, num_values: count };
    Ok(Decoded { values: DataBlock::Variable(block), validity: (validity.count_set_bits() < count as usize).then_some(validity) })
}
