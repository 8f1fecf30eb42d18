//! Decoding a whole 2.0 page, and selecting rows of decoded data.

use std::ops::Range;

use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, Buffer, MutableBuffer};

use crate::encodings::bitpacking::{with_word_type, Word};
use crate::encodings::block::read_uint;
use crate::encodings::{fsst, DataBlock, FixedSizeListBlock, FixedWidthBlock, VariableWidthBlock};
use crate::error::{Error, Result};
use crate::format::enc20;
use crate::kernels::bitpack::{self, BLOCK_LEN};
use crate::schema::LeafKind;
use crate::structural::miniblock::DecodedChunk;

use super::*;

/// Values and validity of a decoded node (`None` = every value valid).
#[derive(Debug, Clone)]
pub(super) struct Decoded {
    pub(super) values: DataBlock,
    pub(super) validity: Option<BooleanBuffer>,
}

impl Decoded {
    fn valid(values: DataBlock) -> Self {
        Self { values, validity: None }
    }
}

fn check_unbacked(n: u64, what: &str) -> Result<()> {
    if n > MAX_UNBACKED_VALUES {
        return Err(Error::not_supported(format!("{CTX}: {what} of {n} values is too large to decode at once")));
    }
    Ok(())
}

/// Decodes `node` into `n` values.
pub(super) fn decode(node: &Node, bufs: &[Buffer], n: u64, indexing: DictionaryIndices) -> Result<Decoded> {
    match node {
        Node::Flat { bits, buffer, compression } => {
            let raw = &bufs[*buffer];
            let data = match compression {
                Some(s) => Buffer::from_vec(s.decompress(raw.as_slice())?),
                None => raw.clone(),
            };
            let block = FixedWidthBlock { data, bits_per_value: *bits, num_values: n };
            block.validate(CTX)?;
            Ok(Decoded::valid(DataBlock::Fixed(block)))
        }
        Node::NoNulls(values) => decode(values, bufs, n, indexing),
        Node::SomeNulls { validity, values } => {
            let bits = decode(validity, bufs, n, indexing)?;
            let bitmap = match bits.values {
                DataBlock::Fixed(f) if f.bits_per_value == 1 => BooleanBuffer::new(f.data, 0, n as usize),
                other => return Err(Error::corrupt(format!("{CTX}: validity decodes to {} values, not bits", other.kind()))),
            };
            let inner = decode(values, bufs, n, indexing)?;
            let validity = match inner.validity {
                Some(v) => &bitmap & &v,
                None => bitmap,
            };
            Ok(Decoded { values: inner.values, validity: Some(validity) })
        }
        Node::AllNulls => {
            check_unbacked(n, "an all-null node")?;
            Ok(Decoded { values: DataBlock::Empty { num_values: n }, validity: Some(BooleanBuffer::new_unset(n as usize)) })
        }
        Node::FixedSizeList { dimension, items } => {
            let num_items =
                n.checked_mul(*dimension).ok_or_else(|| Error::corrupt(format!("{CTX}: fixed-size list too large")))?;
            let items = decode(items, bufs, num_items, indexing)?;
            Ok(Decoded::valid(DataBlock::FixedSizeList(FixedSizeListBlock {
                child: Box::new(items.values),
                dimension: *dimension,
                item_validity: items.validity.map(|v| v.sliced()),
            })))
        }
        Node::Binary { indices, bytes, null_adjustment } => {
            let idx = decode(indices, bufs, n, indexing)?;
            let index_validity = idx.validity.clone();
            let raw = index_values(idx.values, n, "binary indices")?;
            let mut offsets = Vec::with_capacity(n as usize + 1);
            offsets.push(0u64);
            let mut validity = BooleanBufferBuilder::new(n as usize);
            let mut prev = 0u64;
            for (i, &v) in raw.iter().enumerate() {
                let (valid, end) = split_binary_index(v, *null_adjustment);
                let index_valid = index_validity.as_ref().is_none_or(|b| b.value(i));
                let end = if index_valid { end } else { prev };
                if end < prev {
                    return Err(Error::corrupt(format!("{CTX}: binary offsets decrease at value {i} ({end} < {prev})")));
                }
                validity.append(valid && index_valid);
                offsets.push(end);
                prev = end;
            }
            let data = byte_buffer(decode(bytes, bufs, prev, indexing)?.values, prev)?;
            let validity = validity.finish();
            let block = VariableWidthBlock { offsets: Buffer::from_vec(offsets), data, bits_per_offset: 64, num_values: n };
            Ok(Decoded {
                values: DataBlock::Variable(block),
                validity: (validity.count_set_bits() < n as usize).then_some(validity),
            })
        }
        Node::Dictionary { indices, items, num_items } => {
            decode_dictionary(indices, items, *num_items, bufs, n, indexing, &[0..n])
        }
        Node::Fsst { strings, table } => {
            let inner = decode(strings, bufs, n, indexing)?;
            let values = fsst::decompress_block(table, inner.values, CTX)?;
            Ok(Decoded { values, validity: inner.validity })
        }
        Node::FixedSizeBinary { bytes, width } => {
            // Value bytes are either `n` values of `width` bytes or `n * width` single bytes.
            let per_byte = *width != 1 && leaf_flat_bits(bytes) == Some(8);
            let total = n.checked_mul(*width).ok_or_else(|| Error::corrupt(format!("{CTX}: fixed_size_binary too large")))?;
            let inner = decode(bytes, bufs, if per_byte { total } else { n }, indexing)?;
            let data = match inner.values {
                DataBlock::Fixed(f) if f.bits_per_value as u128 * f.num_values as u128 == total as u128 * 8 => f.data,
                DataBlock::Empty { .. } if total == 0 => Buffer::from_vec(Vec::<u8>::new()),
                other => {
                    return Err(Error::corrupt(format!(
                        "{CTX}: fixed_size_binary bytes decode to {} values that are not {n} × {width} bytes",
                        other.kind()
                    )))
                }
            };
            let offsets: Vec<u64> = (0..=n).map(|i| i * *width).collect();
            let block = VariableWidthBlock { offsets: Buffer::from_vec(offsets), data, bits_per_offset: 64, num_values: n };
            Ok(Decoded { values: DataBlock::Variable(block), validity: if per_byte { None } else { inner.validity } })
        }
        Node::Bitpacked { packed_bits, value_bits, buffer, signed } => {
            let data = unpack_bit_stream(bufs[*buffer].as_slice(), *packed_bits, *value_bits, *signed, n)?;
            Ok(Decoded::valid(DataBlock::Fixed(FixedWidthBlock { data, bits_per_value: *value_bits, num_values: n })))
        }
        Node::BitpackedForNonNeg { packed_bits, value_bits, buffer } => {
            let data = with_word_type!(*value_bits, T, {
                unpack_fastlanes_padded::<T>(bufs[*buffer].as_slice(), *packed_bits as usize, n as usize)
            })?;
            Ok(Decoded::valid(DataBlock::Fixed(FixedWidthBlock { data, bits_per_value: *value_bits, num_values: n })))
        }
        Node::PackedStruct { bits, buffer } => {
            let block = FixedWidthBlock { data: bufs[*buffer].clone(), bits_per_value: *bits, num_values: n };
            block.validate(CTX)?;
            Ok(Decoded::valid(DataBlock::Fixed(block)))
        }
        Node::Constant { value } => {
            check_unbacked(n, "a constant node")?;
            if value.is_empty() {
                return Ok(Decoded::valid(DataBlock::Empty { num_values: n }));
            }
            let total = (value.len() as u64)
                .checked_mul(n)
                .filter(|&t| t <= MAX_UNBACKED_VALUES)
                .ok_or_else(|| Error::not_supported(format!("{CTX}: constant of {n} × {} bytes", value.len())))?;
            let mut out = MutableBuffer::new(total as usize);
            for _ in 0..n {
                out.extend_from_slice(value);
            }
            let bits = value.len() as u64 * 8;
            Ok(Decoded::valid(DataBlock::Fixed(FixedWidthBlock { data: out.into(), bits_per_value: bits, num_values: n })))
        }
    }
}

/// `(valid, end offset)` of a stored binary index.
#[inline]
pub(super) fn split_binary_index(v: u64, null_adjustment: u64) -> (bool, u64) {
    if null_adjustment > 0 && v >= null_adjustment {
        (false, v - null_adjustment)
    } else {
        (true, v)
    }
}

/// The bits of the flat leaf under nullable wrappers, if the node is one.
fn leaf_flat_bits(node: &Node) -> Option<u64> {
    match node {
        Node::Flat { bits, .. } => Some(*bits),
        Node::NoNulls(v) | Node::SomeNulls { values: v, .. } => leaf_flat_bits(v),
        _ => None,
    }
}

/// Unsigned integers of a decoded index stream.
fn index_values(block: DataBlock, n: u64, what: &str) -> Result<Vec<u64>> {
    match block {
        DataBlock::Fixed(f) if matches!(f.bits_per_value, 8 | 16 | 32 | 64) && f.num_values >= n => {
            let w = f.bytes_per_value();
            let d = f.data.as_slice();
            Ok((0..n as usize).map(|i| read_uint(d, i * w, w)).collect())
        }
        DataBlock::Empty { .. } => Ok(vec![0; n as usize]),
        other => Err(Error::corrupt(format!("{CTX}: {what} decode to {} values, not integers", other.kind()))),
    }
}

/// The first `len` bytes of a decoded byte stream.
fn byte_buffer(block: DataBlock, len: u64) -> Result<Buffer> {
    match block {
        DataBlock::Fixed(f) if f.bits_per_value == 8 => Ok(f.data),
        DataBlock::Empty { .. } if len == 0 => Ok(Buffer::from_vec(Vec::<u8>::new())),
        other => Err(Error::corrupt(format!("{CTX}: binary bytes decode to {} values, not bytes", other.kind()))),
    }
}

/// Decodes a dictionary node, gathering only the rows in `rows` (sorted page-local ranges).
fn decode_dictionary(
    indices: &Node,
    items: &Node,
    num_items: u64,
    bufs: &[Buffer],
    n: u64,
    indexing: DictionaryIndices,
    rows: &[Range<u64>],
) -> Result<Decoded> {
    let items = decode(items, bufs, num_items, indexing)?;
    if items.values.num_values() != num_items {
        return Err(Error::corrupt(format!(
            "{CTX}: dictionary declares {num_items} items but they decode to {}",
            items.values.num_values()
        )));
    }
    let idx = decode(indices, bufs, n, indexing)?;
    let index_validity = idx.validity.clone();
    let raw = index_values(idx.values, n, "dictionary indices")?;
    let selected: u64 = rows.iter().map(|r| r.end - r.start).sum();
    let mut picks: Vec<u64> = Vec::with_capacity(selected as usize);
    let mut validity = BooleanBufferBuilder::new(selected as usize);
    for r in rows {
        for (i, &k) in raw.iter().enumerate().take(r.end as usize).skip(r.start as usize) {
            let index_valid = index_validity.as_ref().is_none_or(|b| b.value(i));
            let item = match (indexing, index_valid) {
                (_, false) => None,
                (DictionaryIndices::OneBasedNullZero, true) if k == 0 => None,
                (DictionaryIndices::OneBasedNullZero, true) => Some(k - 1),
                (DictionaryIndices::ZeroBased, true) => Some(k),
            };
            match item {
                Some(item) if item >= num_items => {
                    return Err(Error::corrupt(format!(
                        "{CTX}: dictionary index {k} at row {i} is out of range for {num_items} items"
                    )))
                }
                Some(item) => {
                    validity.append(items.validity.as_ref().is_none_or(|v| v.value(item as usize)));
                    picks.push(item);
                }
                None => {
                    validity.append(false);
                    picks.push(0);
                }
            }
        }
    }
    let validity = validity.finish();
    let values = if num_items == 0 || matches!(items.values, DataBlock::Empty { .. }) {
        if validity.count_set_bits() > 0 {
            return Err(Error::corrupt(format!("{CTX}: valid rows refer to an empty or all-null dictionary")));
        }
        DataBlock::Empty { num_values: selected }
    } else {
        let picks = FixedWidthBlock { data: Buffer::from_vec(picks), bits_per_value: 64, num_values: selected };
        crate::encodings::dictionary::gather(&picks, &items.values, CTX)?
    };
    Ok(Decoded { values, validity: (validity.count_set_bits() < selected as usize).then_some(validity) })
}

/// Unpacks a plain little-endian bit stream of `packed` bits per value into `unpacked`-bit
/// values, sign-extending from the top packed bit when `signed`.
fn unpack_bit_stream(src: &[u8], packed: u64, unpacked: u64, signed: bool, n: u64) -> Result<Buffer> {
    let need = n.checked_mul(packed).map(|b| b.div_ceil(8));
    if need.is_none_or(|b| b > src.len() as u64) {
        return Err(Error::corrupt(format!("{CTX}: {n} values of {packed} bits need more than the {} bytes present", src.len())));
    }
    let out_bytes = (unpacked / 8) as usize;
    let mut out = MutableBuffer::new(n as usize * out_bytes);
    let mask = if packed == 64 { u64::MAX } else { (1u64 << packed) - 1 };
    for i in 0..n {
        let bit = i * packed;
        let byte = (bit / 8) as usize;
        let shift = (bit % 8) as u32;
        // Up to 64 + 7 bits starting at `byte`: read at most 9 bytes, zero-filled.
        let mut window = [0u8; 16];
        let avail = src.len().saturating_sub(byte).min(9);
        window[..avail].copy_from_slice(&src[byte..byte + avail]);
        let mut v = ((u128::from_le_bytes(window) >> shift) as u64) & mask;
        if signed && packed > 0 && packed < 64 && (v >> (packed - 1)) & 1 == 1 {
            v |= !mask;
        }
        out.extend_from_slice(&v.to_le_bytes()[..out_bytes]);
    }
    Ok(out.into())
}

/// Unpacks FastLanes blocks of 1024 values at `width` bits; the last block is padded.
fn unpack_fastlanes_padded<T: Word>(src: &[u8], width: usize, n: usize) -> Result<Buffer> {
    let block_bytes = bitpack::packed_bytes::<T>(width);
    let blocks = n.div_ceil(BLOCK_LEN);
    if blocks.checked_mul(block_bytes).is_none_or(|b| b > src.len()) {
        return Err(Error::corrupt(format!(
            "{CTX}: {blocks} bit-packed blocks of {block_bytes} bytes exceed the {} bytes present",
            src.len()
        )));
    }
    let mut out = MutableBuffer::new(n * T::BYTES);
    let mut block = [T::default(); BLOCK_LEN];
    for b in 0..blocks {
        bitpack::unpack_le_bytes::<T>(width, &src[b * block_bytes..(b + 1) * block_bytes], &mut block);
        let take = (n - b * BLOCK_LEN).min(BLOCK_LEN);
        out.extend_from_slice(&block[..take]);
    }
    Ok(out.into())
}

fn def_levels(validity: Option<&BooleanBuffer>) -> Option<Vec<u16>> {
    let v = validity?;
    if v.count_set_bits() == v.len() {
        return None;
    }
    Some(v.iter().map(|valid| if valid { 0 } else { 1 }).collect())
}

/// Checks decoded values against the column's shape, for a clear message.
fn check_shape(values: &DataBlock, kind: &LeafKind) -> Result<()> {
    let ok = match (values, kind) {
        (_, LeafKind::Null) | (DataBlock::Empty { .. }, _) => true,
        (DataBlock::Fixed(f), LeafKind::Bool) => f.bits_per_value == 1,
        (DataBlock::Fixed(f), LeafKind::Fixed { bytes }) => f.bits_per_value == *bytes as u64 * 8,
        (DataBlock::Fixed(f), LeafKind::Fsl { .. } | LeafKind::Packed { .. }) => Some(f.bits_per_value) == kind.bits(),
        (DataBlock::Variable(_), LeafKind::Variable { .. }) => true,
        (DataBlock::FixedSizeList(l), LeafKind::Fsl { dim, .. }) => l.dimension == *dim as u64,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        let got = match values {
            DataBlock::Fixed(f) => format!("{}-bit values", f.bits_per_value),
            other => format!("{} values", other.kind()),
        };
        Err(Error::corrupt(format!("{CTX}: decodes to {got}, which do not fit a column of shape {kind:?}")))
    }
}

pub(super) fn into_chunk(d: Decoded, kind: &LeafKind) -> Result<DecodedChunk> {
    check_shape(&d.values, kind)?;
    // A null-type column has no validity of its own: every value is null by type.
    let def = if *kind == LeafKind::Null { None } else { def_levels(d.validity.as_ref()) };
    Ok(DecodedChunk { rep: None, def, values: d.values, selected: true })
}

/// Decodes a whole 2.0 page of `num_rows` rows of a column that is not of an Arrow
/// dictionary type (dictionary pages are read as the writer's own 1-based dictionaries).
/// See [`decode_page_with`] for dictionary-typed columns.
pub fn decode_page(enc: &enc20::ArrayEncoding, buffers: &[Buffer], num_rows: u64, kind: &LeafKind) -> Result<DecodedChunk> {
    decode_page_with(enc, buffers, num_rows, kind, DictionaryIndices::OneBasedNullZero)
}

/// Decodes a whole 2.0 page; `indexing` says how dictionary indices count (from the
/// column's type, [`DictionaryIndices::for_type`]).
pub fn decode_page_with(
    enc: &enc20::ArrayEncoding,
    buffers: &[Buffer],
    num_rows: u64,
    kind: &LeafKind,
    indexing: DictionaryIndices,
) -> Result<DecodedChunk> {
    decode_page_rows(enc, buffers, num_rows, kind, indexing, &[0..num_rows])
}

/// Decodes rows `rows` (sorted, non-overlapping, page-local ranges) of a page whose
/// buffers are all in memory; the result holds exactly those rows, in order.
pub fn decode_page_rows(
    enc: &enc20::ArrayEncoding,
    buffers: &[Buffer],
    num_rows: u64,
    kind: &LeafKind,
    indexing: DictionaryIndices,
    rows: &[Range<u64>],
) -> Result<DecodedChunk> {
    check_row_ranges(rows, num_rows)?;
    let node = Node::parse(enc, buffers.len())?;
    let decoded = match &node {
        // Only the selected rows are looked up in the dictionary.
        Node::Dictionary { indices, items, num_items } => {
            decode_dictionary(indices, items, *num_items, buffers, num_rows, indexing, rows)?
        }
        other => {
            let all = decode(other, buffers, num_rows, indexing)?;
            if all.values.num_values() != num_rows {
                return Err(Error::corrupt(format!("{CTX}: decoded {} values for {num_rows} rows", all.values.num_values())));
            }
            select_rows(all, rows, num_rows)?
        }
    };
    into_chunk(decoded, kind)
}

pub(super) fn check_row_ranges(rows: &[Range<u64>], num_rows: u64) -> Result<()> {
    let mut prev = 0;
    for r in rows {
        if r.start < prev || r.end < r.start || r.end > num_rows {
            // Rows a caller asks for are sorted; unsorted ones come from list offsets read from
            // the file (found by the `file_reader` fuzz target).
            return Err(Error::corrupt(format!(
                "row ranges {rows:?} are not sorted ranges within a page of {num_rows} rows (corrupt list offsets)"
            )));
        }
        prev = r.end;
    }
    Ok(())
}

fn select_bits(bits: &[u8], bit_offset: usize, rows: &[Range<u64>], scale: u64) -> BooleanBuffer {
    let total: u64 = rows.iter().map(|r| (r.end - r.start) * scale).sum();
    let mut out = BooleanBufferBuilder::new(total as usize);
    for r in rows {
        let s = bit_offset + (r.start * scale) as usize;
        out.append_packed_range(s..s + ((r.end - r.start) * scale) as usize, bits);
    }
    out.finish()
}

/// The selected rows of byte-wide fixed-width values.
fn select_bytes(f: &FixedWidthBlock, rows: &[Range<u64>], count: u64) -> FixedWidthBlock {
    let w = f.bytes_per_value() as u64;
    let mut out = MutableBuffer::new((count * w) as usize);
    for r in rows {
        out.extend_from_slice(&f.data.as_slice()[(r.start * w) as usize..(r.end * w) as usize]);
    }
    FixedWidthBlock { data: out.into(), bits_per_value: f.bits_per_value, num_values: count }
}

fn select_block(block: &DataBlock, rows: &[Range<u64>]) -> Result<DataBlock> {
    let count: u64 = rows.iter().map(|r| r.end - r.start).sum();
    Ok(match block {
        DataBlock::Empty { .. } => DataBlock::Empty { num_values: count },
        DataBlock::Fixed(f) if f.bits_per_value == 1 => DataBlock::Fixed(FixedWidthBlock {
            data: select_bits(f.data.as_slice(), 0, rows, 1).sliced(),
            bits_per_value: 1,
            num_values: count,
        }),
        DataBlock::Fixed(f) => DataBlock::Fixed(select_bytes(f, rows, count)),
        DataBlock::Variable(v) => {
            v.validate(CTX)?;
            let mut offsets = Vec::with_capacity(count as usize + 1);
            offsets.push(0u64);
            let mut data = Vec::new();
            for r in rows {
                let (s, e) = (v.offset(r.start as usize), v.offset(r.end as usize));
                let base = data.len() as u64;
                data.extend_from_slice(&v.data.as_slice()[s as usize..e as usize]);
                offsets.extend((r.start + 1..=r.end).map(|i| v.offset(i as usize) - s + base));
            }
            DataBlock::Variable(VariableWidthBlock::from_u64(offsets, data))
        }
        DataBlock::Dictionary { indices, items } => {
            DataBlock::Dictionary { indices: select_bytes(indices, rows, count), items: items.clone() }
        }
        DataBlock::FixedSizeList(l) => {
            let d = l.dimension;
            let scaled: Vec<Range<u64>> = rows.iter().map(|r| r.start * d..r.end * d).collect();
            DataBlock::FixedSizeList(FixedSizeListBlock {
                child: Box::new(select_block(&l.child, &scaled)?),
                dimension: d,
                item_validity: l.item_validity.as_ref().map(|v| select_bits(v.as_slice(), 0, rows, d).sliced()),
            })
        }
    })
}

fn select_rows(d: Decoded, rows: &[Range<u64>], total: u64) -> Result<Decoded> {
    if rows.len() == 1 && rows[0] == (0..total) {
        return Ok(d);
    }
    let validity = d.validity.as_ref().map(|v| {
        let mut b = BooleanBufferBuilder::new(0);
        for r in rows {
            b.append_buffer(&v.slice(r.start as usize, (r.end - r.start) as usize));
        }
        b.finish()
    });
    Ok(Decoded { values: select_block(&d.values, rows)?, validity })
}
