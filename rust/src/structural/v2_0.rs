//! File version 2.0: pages described by `ArrayEncoding` trees (FORMAT.md §2.1).
//!
//! A 2.0 page is a tree of encodings whose leaves name page buffers. The shapes pylance 14
//! writes, and that [`encode_page`] reproduces, are:
//!
//! ```text
//! fixed width, bool     nullable{no_nulls{flat(bits, buf 0)}}
//!   with nulls          nullable{some_nulls{validity: flat(1, buf 0), values: flat(bits, buf 1)}}
//!   all null, null type nullable{all_nulls}                              (no buffers)
//! fixed-size list       nullable{…, values: fixed_size_list{dim, items: nullable{…flat}}}
//! string / binary       binary{indices: nullable{no_nulls{flat(64)}}, bytes: flat(8), null_adjustment}
//! low-cardinality utf8  dictionary{indices: …flat(8), items: binary{…}, n}   indices 1-based, 0 = null
//! Arrow dictionary      dictionary{indices: …flat(key bits), items: …, n}    indices 0-based
//! packed struct         packed_struct{inner: [nullable{no_nulls{flat(bits, buf 0)}} per child], buf 0}
//! ```
//!
//! A page of no values is `nullable{all_nulls}` (or an empty binary / dictionary), as
//! pylance writes for the items of lists that have none. Struct and list columns, whose
//! pages describe structure rather than values, are in [`super::v2_0_nested`].
//!
//! Binary indices are the **end** offsets of the values (no leading 0); a null value stores
//! `end + null_adjustment` (the writer uses total bytes + 1), so `v >= null_adjustment` means
//! null and `v - null_adjustment` is the real end. An Arrow dictionary column with null keys
//! gets one extra null dictionary item that the null rows point at. Whether a dictionary's
//! indices are 0- or 1-based depends on the column's Arrow type, not on the page; see
//! [`DictionaryIndices`].
//!
//! Older writers also produced `bitpacked` (a plain LSB-first bit stream, optionally
//! sign-extended), `bitpacked_for_non_neg` (FastLanes blocks of 1024 values, last block
//! zero-padded), `fixed_size_binary` (equal-length strings stored without offsets), `fsst`
//! (a `binary` of compressed strings plus a symbol table) and `constant`; they are decoded
//! here but never written.
//!
//! Decoding parses the protobuf tree once into a [`Node`] tree (the one dispatch point on
//! the `ArrayEncoding` oneof), checking every buffer reference, then decodes values and
//! validity bottom-up. Offsets, indices and lengths read from the file are bounds-checked:
//! damaged input is [`Error::Corrupt`], never a panic.
//!
//! Random access: flat, nullable flat, fixed-size lists of flat items and binary pages are
//! read by byte ranges ([`read_rows`]): a value is `bits/8` bytes at a computed position and
//! a validity bit is at a computed bit, and a binary value needs the index before it and its
//! own index, then its bytes — two small reads. Pages of other shapes (dictionaries, whose
//! items every row needs; compressed buffers, which decompress as a whole; bit-packing) are
//! fetched whole and decoded whole, but a dictionary only gathers the rows asked for.

// Row selections are slices of ranges; one range is the common case, not a typo.
#![allow(clippy::single_range_in_vec_init)]

use std::ops::Range;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, ArrayRef};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, Buffer, MutableBuffer, NullBuffer};
use arrow_schema::DataType;
use prost::Message;

use super::miniblock::DecodedChunk;
use super::page::EncodedPage;
use super::LeafKind;
use crate::encodings::bitpacking::{with_word_type, Word};
use crate::encodings::block::read_uint;
use crate::encodings::{fsst, DataBlock, FixedSizeListBlock, FixedWidthBlock, GeneralScheme, VariableWidthBlock};
use crate::error::{Error, Result};
use crate::format::enc20;
use crate::format::enc20::array_encoding::ArrayEncoding as Pb;
use crate::format::enc20::nullable::Nullability;
use crate::format::TYPE_URL_ARRAY_ENCODING;
use crate::kernels::bitpack::{self, BLOCK_LEN};
use crate::kernels::fsst::SymbolTable;
use crate::schema::FieldHints;
use crate::schema::LanceField;

/// Most values (or constant bytes) one decode may produce without a buffer that bounds
/// them (all-null and constant nodes); guards against hostile row counts. Pages read by
/// byte ranges (all-null ones included) only ever allocate the rows asked for.
const MAX_UNBACKED_VALUES: u64 = 1 << 28;
/// Widest flat value accepted, in bits (a fixed-size binary of 512 MiB).
const MAX_FLAT_BITS: u64 = 1 << 32;
/// The writer dictionary-encodes a utf8 page of at least this many rows with fewer than
/// this many distinct values (pylance's default `LANCE_DICT_ENCODING_THRESHOLD`).
pub const AUTO_DICTIONARY_THRESHOLD: usize = 100;

const CTX: &str = "2.0 page";

/// How a `dictionary` encoding's indices refer to its items. It follows from the column's
/// Arrow type, not from anything stored in the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DictionaryIndices {
    /// Arrow dictionary columns: index `i` is item `i`; null rows point at a null item.
    ZeroBased,
    /// Plain utf8 columns the writer dictionary-encoded on its own: index 0 is null and
    /// index `i > 0` is item `i - 1`.
    OneBasedNullZero,
}

impl DictionaryIndices {
    /// The indexing of a column of Arrow type `dt`.
    pub fn for_type(dt: &DataType) -> Self {
        if matches!(dt, DataType::Dictionary(_, _)) {
            DictionaryIndices::ZeroBased
        } else {
            DictionaryIndices::OneBasedNullZero
        }
    }
}

// ---------------------------------------------------------------------------------------
// The parsed tree
// ---------------------------------------------------------------------------------------

/// A validated `ArrayEncoding` node; buffer references are indices into the page buffers.
#[derive(Debug, Clone)]
enum Node {
    Flat {
        bits: u64,
        buffer: usize,
        compression: Option<GeneralScheme>,
    },
    NoNulls(Box<Node>),
    SomeNulls {
        validity: Box<Node>,
        values: Box<Node>,
    },
    AllNulls,
    FixedSizeList {
        dimension: u64,
        items: Box<Node>,
    },
    Binary {
        indices: Box<Node>,
        bytes: Box<Node>,
        null_adjustment: u64,
    },
    Dictionary {
        indices: Box<Node>,
        items: Box<Node>,
        num_items: u64,
    },
    Fsst {
        strings: Box<Node>,
        table: Arc<SymbolTable>,
    },
    FixedSizeBinary {
        bytes: Box<Node>,
        width: u64,
    },
    Bitpacked {
        packed_bits: u64,
        value_bits: u64,
        buffer: usize,
        signed: bool,
    },
    BitpackedForNonNeg {
        packed_bits: u64,
        value_bits: u64,
        buffer: usize,
    },
    Constant {
        value: bytes::Bytes,
    },
    /// Rows of fixed-width children stored row-major in one buffer (`bits` per row).
    PackedStruct {
        bits: u64,
        buffer: usize,
    },
}

fn page_buffer(b: &Option<enc20::Buffer>, num_buffers: usize, what: &str) -> Result<usize> {
    let b = b.as_ref().ok_or_else(|| Error::corrupt(format!("{CTX}: {what} names no buffer")))?;
    if b.buffer_type != enc20::buffer::BufferType::Page as i32 {
        return Err(Error::not_supported(format!(
            "{CTX}: {what} refers to a column or file buffer (buffer type {}); only page buffers are supported",
            b.buffer_type
        )));
    }
    let i = b.buffer_index as usize;
    if i >= num_buffers {
        return Err(Error::corrupt(format!("{CTX}: {what} refers to buffer {i} but the page has {num_buffers}")));
    }
    Ok(i)
}

fn scheme_of(c: &Option<enc20::Compression>) -> Result<Option<GeneralScheme>> {
    let Some(c) = c else { return Ok(None) };
    match c.scheme.to_ascii_lowercase().as_str() {
        "" | "none" => Ok(None),
        "zstd" => Ok(Some(GeneralScheme::Zstd(c.level.unwrap_or(0)))),
        "lz4" => Ok(Some(GeneralScheme::Lz4)),
        other => Err(Error::not_supported(format!("{CTX}: buffer compression {other:?}"))),
    }
}

impl Node {
    /// Parses and validates a protobuf tree against a page of `num_buffers` buffers.
    fn parse(enc: &enc20::ArrayEncoding, num_buffers: usize) -> Result<Node> {
        let child = |c: &Option<Box<enc20::ArrayEncoding>>, what: &str| -> Result<Box<Node>> {
            match c.as_deref() {
                Some(c) => Ok(Box::new(Node::parse(c, num_buffers)?)),
                None => Err(Error::corrupt(format!("{CTX}: {what} is missing"))),
            }
        };
        let Some(e) = enc.array_encoding.as_ref() else {
            return Err(Error::corrupt(format!("{CTX}: empty ArrayEncoding")));
        };
        Ok(match e {
            Pb::Flat(f) => {
                if f.bits_per_value == 0 || f.bits_per_value > MAX_FLAT_BITS {
                    return Err(Error::corrupt(format!("{CTX}: flat values of {} bits", f.bits_per_value)));
                }
                if f.bits_per_value != 1 && f.bits_per_value % 8 != 0 {
                    return Err(Error::not_supported(format!("{CTX}: flat values of {} bits", f.bits_per_value)));
                }
                Node::Flat {
                    bits: f.bits_per_value,
                    buffer: page_buffer(&f.buffer, num_buffers, "flat")?,
                    compression: scheme_of(&f.compression)?,
                }
            }
            Pb::Nullable(n) => match n.nullability.as_ref() {
                Some(Nullability::NoNulls(v)) => Node::NoNulls(child(&v.values, "nullable(no_nulls) values")?),
                Some(Nullability::SomeNulls(s)) => Node::SomeNulls {
                    validity: child(&s.validity, "nullable(some_nulls) validity")?,
                    values: child(&s.values, "nullable(some_nulls) values")?,
                },
                Some(Nullability::AllNulls(_)) => Node::AllNulls,
                None => return Err(Error::corrupt(format!("{CTX}: nullable encoding without nullability"))),
            },
            Pb::FixedSizeList(f) => {
                if f.dimension == 0 {
                    return Err(Error::not_supported(format!("{CTX}: fixed-size lists of dimension 0")));
                }
                Node::FixedSizeList { dimension: f.dimension as u64, items: child(&f.items, "fixed_size_list items")? }
            }
            Pb::Binary(b) => Node::Binary {
                indices: child(&b.indices, "binary indices")?,
                bytes: child(&b.bytes, "binary bytes")?,
                null_adjustment: b.null_adjustment,
            },
            Pb::Dictionary(d) => Node::Dictionary {
                indices: child(&d.indices, "dictionary indices")?,
                items: child(&d.items, "dictionary items")?,
                num_items: d.num_dictionary_items as u64,
            },
            Pb::Fsst(f) => Node::Fsst {
                strings: child(&f.binary, "fsst strings")?,
                table: Arc::new(
                    SymbolTable::from_bytes(&f.symbol_table)
                        .map_err(|e| Error::corrupt(format!("{CTX}: invalid FSST symbol table: {e}")))?,
                ),
            },
            Pb::FixedSizeBinary(f) => {
                if f.byte_width == 0 {
                    return Err(Error::corrupt(format!("{CTX}: fixed_size_binary of width 0")));
                }
                Node::FixedSizeBinary { bytes: child(&f.bytes, "fixed_size_binary bytes")?, width: f.byte_width as u64 }
            }
            Pb::Bitpacked(b) => {
                check_packed_widths(b.compressed_bits_per_value, b.uncompressed_bits_per_value)?;
                Node::Bitpacked {
                    packed_bits: b.compressed_bits_per_value,
                    value_bits: b.uncompressed_bits_per_value,
                    buffer: page_buffer(&b.buffer, num_buffers, "bitpacked")?,
                    signed: b.signed,
                }
            }
            Pb::BitpackedForNonNeg(b) => {
                check_packed_widths(b.compressed_bits_per_value, b.uncompressed_bits_per_value)?;
                Node::BitpackedForNonNeg {
                    packed_bits: b.compressed_bits_per_value,
                    value_bits: b.uncompressed_bits_per_value,
                    buffer: page_buffer(&b.buffer, num_buffers, "bitpacked_for_non_neg")?,
                }
            }
            Pb::Constant(c) => Node::Constant { value: c.value.clone() },
            Pb::PackedStruct(p) => {
                let mut bits = 0u64;
                for (i, inner) in p.inner.iter().enumerate() {
                    let child_bits = packed_child_bits(inner).ok_or_else(|| {
                        Error::not_supported(format!("{CTX}: packed struct child {i} is not a flat value of whole bytes"))
                    })?;
                    bits = bits
                        .checked_add(child_bits)
                        .filter(|&b| b <= MAX_FLAT_BITS)
                        .ok_or_else(|| Error::corrupt(format!("{CTX}: packed struct rows are too wide")))?;
                }
                if bits == 0 {
                    return Err(Error::corrupt(format!("{CTX}: packed struct without children")));
                }
                Node::PackedStruct { bits, buffer: page_buffer(&p.buffer, num_buffers, "packed_struct")? }
            }
            Pb::List(_) | Pb::Struct(_) => {
                return Err(Error::corrupt(format!(
                    "{CTX}: a {} page where a column of values was expected (the schema and the columns disagree)",
                    pb_name(e)
                )))
            }
            other => {
                return Err(Error::not_supported(format!(
                    "{CTX}: {} encoding (only used inside pre-release 2.1 pages)",
                    pb_name(other)
                )))
            }
        })
    }
}

/// Bit-packed widths must be 1..=value width (writers never pack to 0 bits, and a packed
/// buffer is what bounds the number of values).
fn check_packed_widths(packed: u64, unpacked: u64) -> Result<()> {
    if !matches!(unpacked, 8 | 16 | 32 | 64) {
        return Err(Error::corrupt(format!("{CTX}: bit-packing of {unpacked}-bit values")));
    }
    if packed == 0 || packed > unpacked {
        return Err(Error::corrupt(format!("{CTX}: bit-packed width {packed} exceeds the value width {unpacked}")));
    }
    Ok(())
}

/// Bits of one child of a 2.0 packed struct: `flat(bits)`, optionally under
/// `nullable(no_nulls)`, of whole bytes (the row layout cannot hold partial bytes).
fn packed_child_bits(enc: &enc20::ArrayEncoding) -> Option<u64> {
    match enc.array_encoding.as_ref()? {
        Pb::Flat(f) if f.bits_per_value > 0 && f.bits_per_value % 8 == 0 && f.compression.is_none() => Some(f.bits_per_value),
        Pb::Nullable(n) => match n.nullability.as_ref()? {
            Nullability::NoNulls(v) => packed_child_bits(v.values.as_deref()?),
            _ => None,
        },
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Decoding a whole page
// ---------------------------------------------------------------------------------------

/// Values and validity of a decoded node (`None` = every value valid).
#[derive(Debug, Clone)]
struct Decoded {
    values: DataBlock,
    validity: Option<BooleanBuffer>,
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
fn decode(node: &Node, bufs: &[Buffer], n: u64, indexing: DictionaryIndices) -> Result<Decoded> {
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
fn split_binary_index(v: u64, null_adjustment: u64) -> (bool, u64) {
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

fn into_chunk(d: Decoded, kind: &LeafKind) -> Result<DecodedChunk> {
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

fn check_row_ranges(rows: &[Range<u64>], num_rows: u64) -> Result<()> {
    let mut prev = 0;
    for r in rows {
        if r.start < prev || r.end < r.start || r.end > num_rows {
            return Err(Error::internal(format!("row ranges {rows:?} are not sorted ranges within a page of {num_rows} rows")));
        }
        prev = r.end;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Selecting rows of decoded data
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// Random access by byte ranges
// ---------------------------------------------------------------------------------------

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
    Node::parse(enc, num_buffers).ok().as_ref().and_then(RangedPage::of).is_some()
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
    let mut offsets: Vec<u64> = Vec::with_capacity(count as usize + 1);
    offsets.push(0);
    let mut validity = BooleanBufferBuilder::new(count as usize);
    let mut byte_ranges = Vec::with_capacity(rows.len());
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
        byte_ranges.push(bpos + start..bpos + prev);
    }
    let wanted: Vec<Range<u64>> = byte_ranges.iter().filter(|r| r.end > r.start).cloned().collect();
    let data_parts = fetch_checked(src.fetch, &wanted)?;
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

// ---------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------

fn wrap(e: Pb) -> enc20::ArrayEncoding {
    enc20::ArrayEncoding { array_encoding: Some(e) }
}

fn nullable(n: Nullability) -> enc20::ArrayEncoding {
    wrap(Pb::Nullable(Box::new(enc20::Nullable { nullability: Some(n) })))
}

/// `nullable{no_nulls{values}}`.
pub(crate) fn no_nulls(values: enc20::ArrayEncoding) -> enc20::ArrayEncoding {
    nullable(Nullability::NoNulls(Box::new(enc20::nullable::NoNull { values: Some(Box::new(values)) })))
}

fn all_nulls() -> enc20::ArrayEncoding {
    nullable(Nullability::AllNulls(enc20::nullable::AllNull {}))
}

/// The page buffers being collected, in buffer-index order.
#[derive(Default)]
struct PageWriter {
    buffers: Vec<Buffer>,
}

impl PageWriter {
    fn flat(&mut self, bits: u64, data: Buffer, compression: Option<enc20::Compression>) -> enc20::ArrayEncoding {
        let buffer_index = self.buffers.len() as u32;
        self.buffers.push(data);
        wrap(Pb::Flat(enc20::Flat {
            bits_per_value: bits,
            buffer: Some(enc20::Buffer { buffer_index, buffer_type: enc20::buffer::BufferType::Page as i32 }),
            compression,
        }))
    }

    /// `nullable{…}` around the values written by `values` (validity bitmap first).
    fn nullable(
        &mut self,
        nulls: Option<&NullBuffer>,
        len: usize,
        values: impl FnOnce(&mut Self) -> Result<enc20::ArrayEncoding>,
    ) -> Result<enc20::ArrayEncoding> {
        if len == 0 {
            // pylance's writer: a page of no values has "all" of them null.
            return Ok(all_nulls());
        }
        match nulls.filter(|n| n.null_count() > 0) {
            Some(n) if n.null_count() == len => Ok(all_nulls()),
            Some(n) => {
                let validity = self.flat(1, n.inner().sliced(), None);
                let values = values(self)?;
                Ok(nullable(Nullability::SomeNulls(Box::new(enc20::nullable::SomeNull {
                    validity: Some(Box::new(validity)),
                    values: Some(Box::new(values)),
                }))))
            }
            None => Ok(no_nulls(values(self)?)),
        }
    }
}

/// Raw little-endian bytes of a fixed-width array's values (offset applied), and their
/// width in bits.
fn fixed_values(array: &ArrayRef) -> Result<(Buffer, u64)> {
    let dt = array.data_type();
    if let DataType::Boolean = dt {
        return Ok((array.as_boolean().values().sliced(), 1));
    }
    let width = match dt {
        DataType::FixedSizeBinary(w) => *w as usize,
        dt => dt.primitive_width().ok_or_else(|| Error::not_supported(format!("writing {dt} to a 2.0 file")))?,
    };
    let data = array.to_data();
    let buf = data.buffers()[0].slice_with_length(data.offset() * width, array.len() * width);
    Ok((buf, width as u64 * 8))
}

/// Per-value byte ranges of a string/binary array (offset applied).
fn value_ranges(array: &ArrayRef) -> Result<(Buffer, Vec<(usize, usize)>)> {
    let n = array.len();
    let data = array.to_data();
    let off = data.offset();
    let ranges = match array.data_type() {
        DataType::Utf8 | DataType::Binary => {
            let o = &data.buffers()[0].typed_data::<i32>()[off..off + n + 1];
            o.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect()
        }
        DataType::LargeUtf8 | DataType::LargeBinary => {
            let o = &data.buffers()[0].typed_data::<i64>()[off..off + n + 1];
            o.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect()
        }
        dt => return Err(Error::internal(format!("{dt} is not a string or binary type"))),
    };
    Ok((data.buffers()[1].clone(), ranges))
}

fn compression_pb(scheme: GeneralScheme) -> enc20::Compression {
    match scheme {
        GeneralScheme::Zstd(level) => enc20::Compression { scheme: "zstd".into(), level: Some(level) },
        GeneralScheme::Lz4 => enc20::Compression { scheme: "lz4".into(), level: None },
    }
}

impl PageWriter {
    /// `binary{indices: nullable{no_nulls{flat(64)}}, bytes: flat(8), null_adjustment}`; the
    /// bytes of null values are left out.
    fn binary(&mut self, array: &ArrayRef, compression: Option<GeneralScheme>) -> Result<enc20::ArrayEncoding> {
        let (data, ranges) = value_ranges(array)?;
        let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
        let n = array.len();
        let mut ends: Vec<u64> = Vec::with_capacity(n);
        let bytes: Buffer = match &nulls {
            None if n > 0 => {
                let base = ranges[0].0;
                ends.extend(ranges.iter().map(|r| (r.1 - base) as u64));
                data.slice_with_length(base, ranges[n - 1].1 - base)
            }
            _ => {
                let mut out = Vec::new();
                for (i, r) in ranges.iter().enumerate() {
                    if nulls.as_ref().is_none_or(|nb| nb.is_valid(i)) {
                        out.extend_from_slice(&data.as_slice()[r.0..r.1]);
                    }
                    ends.push(out.len() as u64);
                }
                Buffer::from_vec(out)
            }
        };
        let total = ends.last().copied().unwrap_or(0);
        // pylance writes 0 for a page without values.
        let null_adjustment = if n == 0 { 0 } else { total + 1 };
        if let Some(nb) = &nulls {
            for (i, e) in ends.iter_mut().enumerate() {
                if nb.is_null(i) {
                    *e += null_adjustment;
                }
            }
        }
        let indices = self.flat(64, Buffer::from_vec(ends), None);
        let (bytes, compression) = match compression {
            Some(scheme) => {
                let mut out = Vec::new();
                scheme.compress_into(bytes.as_slice(), &mut out)?;
                (Buffer::from_vec(out), Some(compression_pb(scheme)))
            }
            None => (bytes, None),
        };
        let bytes = self.flat(8, bytes, compression);
        Ok(wrap(Pb::Binary(Box::new(enc20::Binary {
            indices: Some(Box::new(no_nulls(indices))),
            bytes: Some(Box::new(bytes)),
            null_adjustment,
        }))))
    }

    /// The writer's own dictionary for a low-cardinality utf8 page: 1-based u8 indices
    /// (0 = null) and the distinct values in first-seen order.
    fn auto_dictionary(&mut self, array: &ArrayRef) -> Result<Option<enc20::ArrayEncoding>> {
        if array.data_type() != &DataType::Utf8 || array.len() < AUTO_DICTIONARY_THRESHOLD {
            return Ok(None);
        }
        let strings = array.as_string::<i32>();
        let mut seen: std::collections::HashMap<&str, u8> = std::collections::HashMap::new();
        let mut items: Vec<&str> = Vec::new();
        let mut indices = Vec::with_capacity(array.len());
        for v in strings.iter() {
            match v {
                None => indices.push(0u8),
                Some(s) => {
                    let next = items.len() + 1;
                    if next >= AUTO_DICTIONARY_THRESHOLD && !seen.contains_key(s) {
                        return Ok(None);
                    }
                    let k = *seen.entry(s).or_insert_with(|| {
                        items.push(s);
                        next as u8
                    });
                    indices.push(k);
                }
            }
        }
        let items: ArrayRef = if items.is_empty() {
            // pylance stores one null item when there are no values.
            new_null_array(&DataType::Utf8, 1)
        } else {
            Arc::new(arrow_array::StringArray::from(items))
        };
        let num_items = items.len() as u32;
        let indices = self.flat(8, Buffer::from_vec(indices), None);
        let items = self.binary(&items, None)?;
        Ok(Some(wrap(Pb::Dictionary(Box::new(enc20::Dictionary {
            indices: Some(Box::new(no_nulls(indices))),
            items: Some(Box::new(items)),
            num_dictionary_items: num_items,
        })))))
    }

    /// An Arrow dictionary array: its keys (0-based, null keys pointing at an extra null
    /// item) and its values.
    fn dictionary(&mut self, array: &ArrayRef, key: &DataType) -> Result<enc20::ArrayEncoding> {
        let dict = array.as_any_dictionary();
        let keys = dict.keys();
        let values = dict.values().clone();
        let width = key.primitive_width().ok_or_else(|| Error::not_supported(format!("dictionary keys of type {key}")))?;
        let signed = matches!(key, DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64);
        let max_key: u64 = if signed { (1u64 << (width * 8 - 1)) - 1 } else { u64::MAX >> (64 - width * 8) };
        let has_null_keys = keys.null_count() > 0;
        let null_item = values.len() as u64;
        if has_null_keys && null_item > max_key {
            return Err(Error::invalid_input(format!(
                "a dictionary column with {null_item} values and null keys needs one more entry than {key} keys can address \
                 in file version 2.0; use wider keys"
            )));
        }
        let data = keys.to_data();
        let raw = &data.buffers()[0].as_slice()[data.offset() * width..(data.offset() + data.len()) * width];
        let mut out = Vec::with_capacity(raw.len());
        for (i, c) in raw.chunks_exact(width).enumerate() {
            if keys.is_null(i) {
                out.extend_from_slice(&null_item.to_le_bytes()[..width]);
                continue;
            }
            let k = read_uint(c, 0, width);
            if (signed && c[width - 1] & 0x80 != 0) || k >= null_item {
                return Err(Error::invalid_input(format!("dictionary key at row {i} is out of range for {null_item} values")));
            }
            out.extend_from_slice(c);
        }
        // Null keys point at an extra null item; pylance also stores one when there are no
        // items at all (an empty page).
        let items = if has_null_keys || values.is_empty() {
            let null = new_null_array(values.data_type(), 1);
            arrow_select::concat::concat(&[values.as_ref(), null.as_ref()])?
        } else {
            values
        };
        let num_items = u32::try_from(items.len())
            .map_err(|_| Error::invalid_input(format!("a dictionary of {} values is too large", items.len())))?;
        let indices = self.flat(width as u64 * 8, Buffer::from_vec(out), None);
        let items = self.array(&items, None, false)?;
        Ok(wrap(Pb::Dictionary(Box::new(enc20::Dictionary {
            indices: Some(Box::new(no_nulls(indices))),
            items: Some(Box::new(items)),
            num_dictionary_items: num_items,
        }))))
    }

    /// Encodes `array`; `compression` applies to string bytes, `auto_dictionary` allows the
    /// writer's own dictionary for low-cardinality utf8.
    fn array(
        &mut self,
        array: &ArrayRef,
        compression: Option<GeneralScheme>,
        auto_dictionary: bool,
    ) -> Result<enc20::ArrayEncoding> {
        let len = array.len();
        match array.data_type() {
            DataType::Null => Ok(all_nulls()),
            DataType::Dictionary(key, _) => self.dictionary(array, key),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
                if auto_dictionary && compression.is_none() {
                    if let Some(enc) = self.auto_dictionary(array)? {
                        return Ok(enc);
                    }
                }
                self.binary(array, compression)
            }
            DataType::FixedSizeList(item, dim) => {
                let fsl = array.as_fixed_size_list();
                let dim = *dim as usize;
                if dim == 0 {
                    return Err(Error::not_supported("fixed-size lists of dimension 0"));
                }
                let child = fsl.values().slice(fsl.value_offset_at(0), len * dim);
                if !(item.data_type().is_primitive()
                    || matches!(item.data_type(), DataType::Boolean | DataType::FixedSizeBinary(_)))
                {
                    return Err(Error::not_supported(format!("writing fixed-size lists of {} to a 2.0 file", item.data_type())));
                }
                let nulls = array.logical_nulls();
                self.nullable(nulls.as_ref(), len, |w| {
                    let child_nulls = child.logical_nulls();
                    let items = w.nullable(child_nulls.as_ref(), child.len(), |w| {
                        let (data, bits) = fixed_values(&child)?;
                        Ok(w.flat(bits, data, None))
                    })?;
                    Ok(wrap(Pb::FixedSizeList(Box::new(enc20::FixedSizeList {
                        dimension: dim as u32,
                        items: Some(Box::new(items)),
                        has_validity: false,
                    }))))
                })
            }
            dt if dt.is_primitive() || matches!(dt, DataType::Boolean | DataType::FixedSizeBinary(_)) => {
                let nulls = array.logical_nulls();
                self.nullable(nulls.as_ref(), len, |w| {
                    let (data, bits) = fixed_values(array)?;
                    Ok(w.flat(bits, data, None))
                })
            }
            dt => Err(Error::not_supported(format!("writing {dt} columns to a 2.0 file"))),
        }
    }
}

impl PageWriter {
    /// `packed_struct{inner: [nullable(no_nulls(flat(bits, buf 0))) per child], buf 0}`: the
    /// rows of a struct of fixed-width children, row-major in one buffer.
    fn packed_struct(&mut self, array: &ArrayRef, field: &LanceField) -> Result<enc20::ArrayEncoding> {
        if array.null_count() > 0 {
            return Err(struct_validity_error(&field.name, array.null_count()));
        }
        let kind = LeafKind::of_field(field)?;
        let LeafKind::Packed { widths } = &kind else {
            return Err(Error::invalid_input(format!(
                "packed struct {:?} has variable-width children, which need file version 2.2 or later",
                field.name
            )));
        };
        let rows = match super::page::block_from_array(array, &kind, None)? {
            DataBlock::Fixed(f) => f.data,
            other => return Err(Error::internal(format!("packed struct rows became {} values", other.kind()))),
        };
        let buffer_index = self.buffers.len() as u32;
        self.buffers.push(rows);
        let buffer = || Some(enc20::Buffer { buffer_index, buffer_type: enc20::buffer::BufferType::Page as i32 });
        let inner = widths
            .iter()
            .map(|w| no_nulls(wrap(Pb::Flat(enc20::Flat { bits_per_value: *w as u64 * 8, buffer: buffer(), compression: None }))))
            .collect();
        Ok(wrap(Pb::PackedStruct(enc20::PackedStruct { inner, buffer: buffer() })))
    }
}

/// The error for a struct with null rows in a 2.0 file (pylance 14 refuses them too, as
/// invalid input: 2.0 has no way to store struct validity).
pub fn struct_validity_error(name: &str, null_count: usize) -> Error {
    Error::invalid_input(format!(
        "struct field {name:?} contains {null_count} null value(s), but Lance file version 2.0 cannot store struct \
         validity; use file version 2.1 or later, or make the struct non-null"
    ))
}

/// Encodes one 2.0 page holding all of `array`, in the tree shapes pylance 14 writes.
/// `lance-encoding:compression = zstd | lz4` compresses the bytes of string/binary pages
/// (pylance applies it to nothing else in 2.0).
pub fn encode_page(array: &ArrayRef, field: &LanceField) -> Result<EncodedPage> {
    let hints = FieldHints::of(field)?;
    let mut w = PageWriter::default();
    let enc = if field.is_packed_struct() {
        w.packed_struct(array, field)?
    } else {
        w.array(array, hints.compression.flatten(), true)?
    };
    Ok(EncodedPage {
        buffers: w.buffers,
        type_url: TYPE_URL_ARRAY_ENCODING.to_string(),
        encoding: enc.encode_to_vec(),
        num_rows: array.len() as u64,
    })
}

// ---------------------------------------------------------------------------------------
// Describing
// ---------------------------------------------------------------------------------------

fn pb_name(e: &Pb) -> &'static str {
    match e {
        Pb::Flat(_) => "flat",
        Pb::Nullable(_) => "nullable",
        Pb::FixedSizeList(_) => "fixed_size_list",
        Pb::List(_) => "list",
        Pb::Struct(_) => "struct",
        Pb::Binary(_) => "binary",
        Pb::Dictionary(_) => "dictionary",
        Pb::Fsst(_) => "fsst",
        Pb::PackedStruct(_) => "packed_struct",
        Pb::Bitpacked(_) => "bitpacked",
        Pb::FixedSizeBinary(_) => "fixed_size_binary",
        Pb::BitpackedForNonNeg(_) => "bitpacked_for_non_neg",
        Pb::Constant(_) => "constant",
        Pb::InlineBitpacking(_) => "inline_bitpacking",
        Pb::OutOfLineBitpacking(_) => "out_of_line_bitpacking",
        Pb::Variable(_) => "variable",
        Pb::PackedStructFixedWidthMiniBlock(_) => "packed_struct_fixed_width_mini_block",
        Pb::Block(_) => "block",
        Pb::Rle(_) => "rle",
        Pb::GeneralMiniBlock(_) => "general_mini_block",
        Pb::ByteStreamSplit(_) => "byte_stream_split",
    }
}

fn describe_child(c: &Option<Box<enc20::ArrayEncoding>>) -> String {
    c.as_deref().map(describe).unwrap_or_else(|| "?".into())
}

/// A one-line description of a 2.0 encoding tree, e.g. `nullable(some_nulls, flat(32))`.
pub fn describe(enc: &enc20::ArrayEncoding) -> String {
    let Some(e) = enc.array_encoding.as_ref() else { return "empty".into() };
    match e {
        Pb::Flat(f) => match f.compression.as_ref().filter(|c| !c.scheme.is_empty() && c.scheme != "none") {
            Some(c) => format!("flat({}, {})", f.bits_per_value, c.scheme),
            None => format!("flat({})", f.bits_per_value),
        },
        Pb::Nullable(n) => match n.nullability.as_ref() {
            Some(Nullability::NoNulls(v)) => format!("nullable(no_nulls, {})", describe_child(&v.values)),
            Some(Nullability::SomeNulls(s)) => format!("nullable(some_nulls, {})", describe_child(&s.values)),
            Some(Nullability::AllNulls(_)) => "nullable(all_nulls)".into(),
            None => "nullable(?)".into(),
        },
        Pb::FixedSizeList(f) => format!("fixed_size_list({}, {})", f.dimension, describe_child(&f.items)),
        Pb::Binary(b) => format!("binary(indices={}, bytes={})", describe_child(&b.indices), describe_child(&b.bytes)),
        Pb::Dictionary(d) => format!(
            "dictionary({} items={}, indices={})",
            d.num_dictionary_items,
            describe_child(&d.items),
            describe_child(&d.indices)
        ),
        Pb::Fsst(f) => format!("fsst({})", describe_child(&f.binary)),
        Pb::FixedSizeBinary(f) => format!("fixed_size_binary({}, {})", f.byte_width, describe_child(&f.bytes)),
        Pb::Bitpacked(b) => format!(
            "bitpacked({}->{}{})",
            b.uncompressed_bits_per_value,
            b.compressed_bits_per_value,
            if b.signed { ", signed" } else { "" }
        ),
        Pb::BitpackedForNonNeg(b) => {
            format!("bitpacked_for_non_neg({}->{})", b.uncompressed_bits_per_value, b.compressed_bits_per_value)
        }
        Pb::Constant(c) => format!("constant({} bytes)", c.value.len()),
        Pb::List(l) => format!("list(offsets={})", describe_child(&l.offsets)),
        Pb::PackedStruct(p) => format!("packed_struct({})", p.inner.iter().map(describe).collect::<Vec<_>>().join(", ")),
        other => pb_name(other).into(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{FixedSizeListBuilder, Float32Builder};
    use arrow_array::types::{Int16Type, Int32Type, Int8Type, UInt8Type};
    use arrow_array::{
        make_array, BinaryArray, BooleanArray, DictionaryArray, Int32Array, Int64Array, LargeBinaryArray, LargeStringArray,
        NullArray, StringArray, UInt32Array,
    };
    use arrow_data::ArrayDataBuilder;
    use arrow_schema::{Field, Schema, TimeUnit};

    use super::*;
    use crate::schema::LanceSchema;
    use crate::structural::assemble::assemble;
    use crate::structural::builder::{LeafBuilder, Selection};

    /// Runs of consecutive values in sorted, distinct `rows`.
    fn row_runs(rows: &[u64]) -> Vec<Range<u64>> {
        let mut runs: Vec<Range<u64>> = Vec::new();
        for &r in rows {
            match runs.last_mut() {
                Some(run) if run.end == r => run.end += 1,
                _ => runs.push(r..r + 1),
            }
        }
        runs
    }

    /// A deterministic pseudo-random byte stream.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 11
        }
        fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.next() as u8).collect()
        }
    }

    fn field_of(dt: &DataType, metadata: &[(&str, &str)]) -> LanceField {
        let md: std::collections::HashMap<String, String> =
            metadata.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let schema = Schema::new(vec![Field::new("c", dt.clone(), true).with_metadata(md)]);
        LanceSchema::from_arrow(&schema).unwrap().fields.remove(0)
    }

    /// Nulls at every `every`-th position (none when 0, all when 1).
    fn nulls(n: usize, every: usize) -> Option<NullBuffer> {
        (every > 0).then(|| NullBuffer::from((0..n).map(|i| i % every != 0).collect::<Vec<bool>>()))
    }

    /// A fixed-width array of pseudo-random bytes.
    fn fixed_array(dt: DataType, n: usize, null_every: usize, seed: u64) -> ArrayRef {
        let width = match &dt {
            DataType::FixedSizeBinary(w) => *w as usize,
            dt => dt.primitive_width().unwrap(),
        };
        let data = Lcg(seed).bytes(n * width);
        let d = ArrayDataBuilder::new(dt)
            .len(n)
            .add_buffer(Buffer::from(data.as_slice()))
            .nulls(nulls(n, null_every))
            .build()
            .unwrap();
        make_array(d)
    }

    fn encoded(array: &ArrayRef, metadata: &[(&str, &str)]) -> (enc20::ArrayEncoding, Vec<Buffer>) {
        let page = encode_page(array, &field_of(array.data_type(), metadata)).unwrap();
        assert_eq!(page.type_url, TYPE_URL_ARRAY_ENCODING);
        assert_eq!(page.num_rows, array.len() as u64);
        (enc20::ArrayEncoding::decode(page.encoding.as_slice()).unwrap(), page.buffers)
    }

    fn build(chunk: &DecodedChunk, dt: &DataType) -> ArrayRef {
        let kind = LeafKind::of(dt).unwrap();
        let mut b = LeafBuilder::new(kind, 0);
        b.append(&chunk.values, chunk.def.as_deref(), Selection::All).unwrap();
        assemble(&field_of(dt, &[]), vec![b.finish(dt).unwrap()]).unwrap()
    }

    /// A file image holding the page buffers (64-byte aligned) and a fetch function over it.
    fn file_image(buffers: &[Buffer]) -> (Vec<u8>, Vec<(u64, u64)>) {
        let mut file = vec![0x48u8; 64]; // buffers never start at 0 here
        let mut locations = Vec::new();
        for b in buffers {
            locations.push((file.len() as u64, b.len() as u64));
            file.extend_from_slice(b.as_slice());
            file.resize(file.len().next_multiple_of(64), 0x48);
        }
        (file, locations)
    }

    fn read_via_ranges(enc: &enc20::ArrayEncoding, buffers: &[Buffer], n: u64, dt: &DataType, rows: &[Range<u64>]) -> ArrayRef {
        let (file, locations) = file_image(buffers);
        let calls = std::cell::Cell::new(0usize);
        let fetch = |ranges: &[Range<u64>]| -> Result<Vec<Buffer>> {
            calls.set(calls.get() + 1);
            Ok(ranges.iter().map(|r| Buffer::from(&file[r.start as usize..r.end as usize])).collect())
        };
        let src = PageSource { locations: &locations, loaded: &[], fetch: &fetch };
        let chunk = read_rows(enc, &src, n, &LeafKind::of(dt).unwrap(), dt, rows).unwrap();
        build(&chunk, dt)
    }

    fn expected_rows(array: &ArrayRef, rows: &[Range<u64>]) -> ArrayRef {
        let idx: Vec<u32> = rows.iter().flat_map(|r| r.start as u32..r.end as u32).collect();
        arrow_select::take::take(array.as_ref(), &UInt32Array::from(idx), None).unwrap()
    }

    /// Dictionary arrays compare by value: the reader re-encodes them.
    fn plain(a: &ArrayRef) -> ArrayRef {
        match a.data_type() {
            DataType::Dictionary(_, _) => {
                let d = a.as_any_dictionary();
                let keys: Vec<Option<u32>> =
                    (0..a.len()).map(|i| d.keys().is_valid(i).then(|| d.normalized_keys()[i] as u32)).collect();
                arrow_select::take::take(d.values().as_ref(), &UInt32Array::from(keys), None).unwrap()
            }
            _ => a.clone(),
        }
    }

    /// Encodes, decodes whole, reads ranges and takes by byte ranges and from memory, and
    /// checks every result against the input. Returns the encoding's description.
    fn round_trip_with(array: ArrayRef, metadata: &[(&str, &str)]) -> String {
        let dt = array.data_type().clone();
        let n = array.len() as u64;
        let (enc, buffers) = encoded(&array, metadata);
        let indexing = DictionaryIndices::for_type(&dt);
        let kind = LeafKind::of(&dt).unwrap();
        let whole = decode_page_with(&enc, &buffers, n, &kind, indexing).unwrap();
        let out = build(&whole, &dt);
        assert_eq!(out.data_type(), &dt);
        assert_eq!(&plain(&out), &plain(&array), "whole page of {dt} ({})", describe(&enc));
        let mut selections: Vec<Vec<Range<u64>>> = vec![vec![0..n]];
        if n > 0 {
            selections.push(vec![0..1]);
            selections.push(vec![n - 1..n]);
            selections.push(vec![n / 3..n / 2 + 1]);
            let picks: Vec<u64> =
                [0, 1, 2, n / 2, n / 2 + 1, n.saturating_sub(2), n - 1].into_iter().filter(|&r| r < n).collect();
            let mut picks = picks;
            picks.sort();
            picks.dedup();
            selections.push(row_runs(&picks));
        }
        for rows in &selections {
            let want = plain(&expected_rows(&array, rows));
            let got = read_via_ranges(&enc, &buffers, n, &dt, rows);
            assert_eq!(&plain(&got), &want, "ranged read {rows:?} of {dt} ({})", describe(&enc));
            let chunk = decode_page_rows(&enc, &buffers, n, &kind, indexing, rows).unwrap();
            assert_eq!(&plain(&build(&chunk, &dt)), &want, "in-memory read {rows:?} of {dt}");
        }
        describe(&enc)
    }

    fn round_trip(array: ArrayRef) -> String {
        round_trip_with(array, &[])
    }

    fn fixed_types() -> Vec<DataType> {
        use DataType::*;
        vec![
            Int8,
            Int16,
            Int32,
            Int64,
            UInt8,
            UInt16,
            UInt32,
            UInt64,
            Float16,
            Float32,
            Float64,
            Decimal128(38, 4),
            Decimal256(60, 3),
            Date32,
            Date64,
            Time32(TimeUnit::Second),
            Time32(TimeUnit::Millisecond),
            Time64(TimeUnit::Microsecond),
            Time64(TimeUnit::Nanosecond),
            Timestamp(TimeUnit::Second, None),
            Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            Timestamp(TimeUnit::Microsecond, Some("+05:30".into())),
            Timestamp(TimeUnit::Nanosecond, None),
            Duration(TimeUnit::Second),
            Duration(TimeUnit::Millisecond),
            Duration(TimeUnit::Microsecond),
            Duration(TimeUnit::Nanosecond),
            FixedSizeBinary(1),
            FixedSizeBinary(16),
            FixedSizeBinary(300),
        ]
    }

    #[test]
    fn fixed_width_types_round_trip() {
        for (i, dt) in fixed_types().into_iter().enumerate() {
            for (n, every) in [(0usize, 0usize), (1, 0), (1, 1), (1000, 0), (1000, 7), (1000, 1), (3000, 2)] {
                let a = fixed_array(dt.clone(), n, every, i as u64 * 31 + n as u64);
                let d = round_trip(a.clone());
                let bits = a.data_type().primitive_width().map(|w| w * 8).unwrap_or_else(|| match &dt {
                    DataType::FixedSizeBinary(w) => *w as usize * 8,
                    _ => unreachable!(),
                });
                let want = match (n, every) {
                    (0, _) | (_, 1) => "nullable(all_nulls)".to_string(),
                    (n, e) if n > 0 && e > 0 => format!("nullable(some_nulls, flat({bits}))"),
                    _ => format!("nullable(no_nulls, flat({bits}))"),
                };
                assert_eq!(d, want, "{dt} n={n} every={every}");
            }
        }
    }

    #[test]
    fn sliced_and_negative_values_round_trip() {
        let a: ArrayRef = Arc::new(Int32Array::from_iter((0..2000).map(|i| if i % 5 == 0 { None } else { Some(-i * 7919) })));
        round_trip(a.slice(13, 1500));
        let b: ArrayRef = Arc::new(Int64Array::from(vec![i64::MIN, -1, 0, 1, i64::MAX]));
        assert_eq!(round_trip(b.slice(1, 3)), "nullable(no_nulls, flat(64))");
    }

    #[test]
    fn booleans_and_nulls_round_trip() {
        let bools: ArrayRef = Arc::new(BooleanArray::from_iter((0..1031).map(|i| (i % 3 != 0).then_some(i % 7 < 3))));
        assert_eq!(round_trip(bools.clone()), "nullable(some_nulls, flat(1))");
        round_trip(bools.slice(5, 1000));
        let dense: ArrayRef = Arc::new(BooleanArray::from((0..77).map(|i| i % 2 == 0).collect::<Vec<_>>()));
        assert_eq!(round_trip(dense.slice(3, 70)), "nullable(no_nulls, flat(1))");
        let all_null: ArrayRef = Arc::new(BooleanArray::from(vec![None, None, None]));
        assert_eq!(round_trip(all_null), "nullable(all_nulls)");
        for n in [0, 1, 5000] {
            assert_eq!(round_trip(Arc::new(NullArray::new(n))), "nullable(all_nulls)");
        }
    }

    fn strings(n: usize, null_every: usize) -> Vec<Option<String>> {
        let mut r = Lcg(n as u64);
        (0..n)
            .map(|i| {
                if null_every > 0 && i % null_every == 0 {
                    return None;
                }
                Some(match i % 6 {
                    0 => String::new(),
                    1 => "ünïcødé ✓ 日本語".to_string(),
                    2 => "x".repeat(256 + i % 10),
                    3 => format!("{}", r.next()),
                    4 => "y".repeat(33 * 1024),
                    _ => "-".repeat(i % 17),
                })
            })
            .collect()
    }

    #[test]
    fn strings_and_binary_round_trip() {
        for (n, every) in [(0usize, 0usize), (1, 0), (1, 1), (40, 0), (40, 3), (40, 1), (7, 2)] {
            let v = strings(n, every);
            let arrays: Vec<ArrayRef> = vec![
                Arc::new(StringArray::from(v.clone())),
                Arc::new(LargeStringArray::from(v.clone())),
                Arc::new(BinaryArray::from_iter(v.iter().map(|s| s.as_ref().map(|s| s.as_bytes())))),
                Arc::new(LargeBinaryArray::from_iter(v.iter().map(|s| s.as_ref().map(|s| s.as_bytes())))),
            ];
            for a in arrays {
                let d = round_trip(a.clone());
                assert_eq!(d, "binary(indices=nullable(no_nulls, flat(64)), bytes=flat(8))");
                if n > 4 {
                    round_trip(a.slice(2, n - 3));
                }
            }
        }
    }

    #[test]
    fn null_slots_with_bytes_are_dropped() {
        // An Arrow array whose null slot still spans bytes.
        let offsets = Buffer::from_vec(vec![0i32, 3, 6, 9]);
        let data = Buffer::from(b"abcdefghi".as_slice());
        let d = ArrayDataBuilder::new(DataType::Utf8)
            .len(3)
            .add_buffer(offsets)
            .add_buffer(data)
            .nulls(Some(NullBuffer::from(vec![true, false, true])))
            .build()
            .unwrap();
        let a = make_array(d);
        let (_, buffers) = encoded(&a, &[]);
        assert_eq!(buffers[1].as_slice(), b"abcghi");
        round_trip(a);
    }

    #[test]
    fn compressed_string_bytes_round_trip() {
        let v: Vec<String> = (0..5000).map(|i| format!("value number {}", i % 300)).collect();
        let a: ArrayRef = Arc::new(LargeStringArray::from(v));
        for scheme in ["zstd", "lz4"] {
            let d = round_trip_with(a.clone(), &[("lance-encoding:compression", scheme)]);
            assert_eq!(d, format!("binary(indices=nullable(no_nulls, flat(64)), bytes=flat(8, {scheme}))"));
        }
    }

    #[test]
    fn low_cardinality_utf8_gets_a_dictionary() {
        let v: Vec<Option<&str>> = (0..500).map(|i| (i % 11 != 0).then(|| ["a", "", "ß", "long value"][i % 4])).collect();
        let a: ArrayRef = Arc::new(StringArray::from(v));
        let d = round_trip(a.clone());
        assert!(d.starts_with("dictionary(4 items=binary("), "{d}");
        let (_, buffers) = encoded(&a, &[]);
        assert_eq!(buffers[0].as_slice()[..4], [0, 1, 2, 3]); // 1-based, 0 = null
        round_trip(a.slice(1, 300));
        let all_null: ArrayRef = Arc::new(StringArray::from(vec![None::<&str>; 200]));
        assert!(round_trip(all_null).starts_with("dictionary(1 items="));
        // Large strings and binary never get the writer's own dictionary.
        let large: ArrayRef = Arc::new(LargeStringArray::from(vec!["a"; 500]));
        assert!(round_trip(large).starts_with("binary("));
        // 100 distinct values are too many.
        let many: ArrayRef = Arc::new(StringArray::from_iter_values((0..1000).map(|i| format!("{}", i % 100))));
        assert!(round_trip(many).starts_with("binary("));
    }

    #[test]
    fn arrow_dictionaries_round_trip() {
        let keys = arrow_array::PrimitiveArray::<Int8Type>::from(vec![Some(0), Some(1), None, Some(0), Some(2)]);
        let values: ArrayRef = Arc::new(StringArray::from(vec!["x", "yy", "ü"]));
        let a: ArrayRef = Arc::new(DictionaryArray::new(keys, values.clone()));
        let d = round_trip(a.clone());
        assert_eq!(
            d,
            "dictionary(4 items=binary(indices=nullable(no_nulls, flat(64)), bytes=flat(8)), indices=nullable(no_nulls, flat(8)))"
        );
        let (_, buffers) = encoded(&a, &[]);
        assert_eq!(buffers[0].as_slice(), &[0, 1, 3, 0, 2]); // the null row points at the extra null item
        round_trip(a.slice(1, 3));
        let no_nulls = arrow_array::PrimitiveArray::<Int32Type>::from(vec![2, 2, 0]);
        round_trip(Arc::new(DictionaryArray::new(no_nulls, values.clone())));
        let all_null = arrow_array::PrimitiveArray::<Int16Type>::from(vec![None, None]);
        round_trip(Arc::new(DictionaryArray::new(all_null, values.clone())));
        let u8_keys = arrow_array::PrimitiveArray::<UInt8Type>::from(vec![Some(1), None]);
        let large_values: ArrayRef = Arc::new(LargeStringArray::from(vec!["p", "q"]));
        round_trip(Arc::new(DictionaryArray::new(u8_keys, large_values)));
        let int_values: ArrayRef = Arc::new(Int64Array::from(vec![Some(-5), None, Some(7)]));
        let keys = arrow_array::PrimitiveArray::<Int32Type>::from(vec![Some(0), Some(1), None, Some(2)]);
        round_trip(Arc::new(DictionaryArray::new(keys, int_values)));
    }

    #[test]
    fn dictionary_key_overflow_is_an_error() {
        let keys = arrow_array::PrimitiveArray::<Int8Type>::from(vec![Some(0), None]);
        let values: ArrayRef = Arc::new(StringArray::from_iter_values((0..128).map(|i| i.to_string())));
        let a: ArrayRef = Arc::new(DictionaryArray::new(keys, values));
        let e = encode_page(&a, &field_of(a.data_type(), &[])).err().unwrap();
        assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    }

    fn fsl(item: DataType, dim: i32, n: usize, item_null_every: usize, list_null_every: usize) -> ArrayRef {
        let items = fixed_array(item.clone(), n * dim as usize, item_null_every, 7 + n as u64);
        let f = Arc::new(Field::new("item", item, true));
        Arc::new(arrow_array::FixedSizeListArray::new(f, dim, items, nulls(n, list_null_every)))
    }

    #[test]
    fn fixed_size_lists_round_trip() {
        use DataType::*;
        for item in [Float16, Float32, Float64, Int8, UInt8] {
            let bits = item.primitive_width().unwrap() * 8;
            for (n, item_every, list_every) in
                [(0, 0, 0), (1, 0, 0), (100, 0, 0), (100, 3, 0), (100, 0, 4), (100, 5, 3), (50, 1, 0), (50, 0, 1)]
            {
                let a = fsl(item.clone(), 3, n, item_every, list_every);
                let d = round_trip(a.clone());
                let items = match (n, item_every) {
                    (n, 1) if n > 0 => "nullable(all_nulls)".to_string(),
                    (n, e) if n > 0 && e > 0 => format!("nullable(some_nulls, flat({bits}))"),
                    _ => format!("nullable(no_nulls, flat({bits}))"),
                };
                let want = match (n, list_every) {
                    (0, _) | (_, 1) => "nullable(all_nulls)".to_string(),
                    (n, e) if n > 0 && e > 0 => format!("nullable(some_nulls, fixed_size_list(3, {items}))"),
                    _ => format!("nullable(no_nulls, fixed_size_list(3, {items}))"),
                };
                assert_eq!(d, want, "{item} n={n} {item_every} {list_every}");
                if n > 10 {
                    round_trip(a.slice(3, n - 5));
                }
            }
        }
        // A vector column built the usual way.
        let mut b = FixedSizeListBuilder::new(Float32Builder::new(), 128);
        for i in 0..300 {
            for j in 0..128 {
                b.values().append_value((i * j) as f32 * 0.5);
            }
            b.append(i % 17 != 0);
        }
        round_trip(Arc::new(b.finish()));
    }

    // --- Decoding shapes older writers produced -------------------------------------------

    fn page_buffer_ref(i: u32) -> Option<enc20::Buffer> {
        Some(enc20::Buffer { buffer_index: i, buffer_type: 0 })
    }

    fn decode_as(enc: enc20::ArrayEncoding, buffers: Vec<Buffer>, n: u64, dt: &DataType) -> Result<ArrayRef> {
        let chunk = decode_page_with(&enc, &buffers, n, &LeafKind::of(dt)?, DictionaryIndices::for_type(dt))?;
        let kind = LeafKind::of(dt)?;
        let mut b = LeafBuilder::new(kind, 0);
        b.append(&chunk.values, chunk.def.as_deref(), Selection::All)?;
        assemble(&field_of(dt, &[]), vec![b.finish(dt)?])
    }

    /// Packs values as a plain LSB-first bit stream of `bits` bits each.
    fn pack_stream(values: &[u64], bits: u64) -> Vec<u8> {
        let mut out = vec![0u8; (values.len() as u64 * bits).div_ceil(8) as usize];
        for (i, v) in values.iter().enumerate() {
            for b in 0..bits {
                if (v >> b) & 1 == 1 {
                    let bit = i as u64 * bits + b;
                    out[(bit / 8) as usize] |= 1 << (bit % 8);
                }
            }
        }
        out
    }

    #[test]
    fn decodes_legacy_bitpacked() {
        let values: Vec<i32> = (0..1000).map(|i| (i % 37) - 18).collect();
        let raw: Vec<u64> = values.iter().map(|&v| v as i64 as u64).collect();
        for bits in [6u64, 7, 13] {
            let enc = no_nulls(wrap(Pb::Bitpacked(enc20::Bitpacked {
                compressed_bits_per_value: bits,
                uncompressed_bits_per_value: 32,
                buffer: page_buffer_ref(0),
                signed: true,
            })));
            let out = decode_as(enc, vec![Buffer::from_vec(pack_stream(&raw, bits))], 1000, &DataType::Int32).unwrap();
            assert_eq!(out.as_primitive::<Int32Type>().values().to_vec(), values, "{bits} bits");
        }
        let unsigned: Vec<u64> = (0..100).map(|i| i * 3).collect();
        let enc = wrap(Pb::Bitpacked(enc20::Bitpacked {
            compressed_bits_per_value: 9,
            uncompressed_bits_per_value: 64,
            buffer: page_buffer_ref(0),
            signed: false,
        }));
        let out = decode_as(enc.clone(), vec![Buffer::from_vec(pack_stream(&unsigned, 9))], 100, &DataType::UInt64).unwrap();
        assert_eq!(out.as_primitive::<arrow_array::types::UInt64Type>().values().to_vec(), unsigned);
        // Truncated.
        let e = decode_as(enc, vec![Buffer::from_vec(vec![0u8; 10])], 100, &DataType::UInt64).unwrap_err();
        assert!(matches!(e, Error::Corrupt(_)), "{e}");
    }

    #[test]
    fn decodes_legacy_bitpacked_for_non_neg() {
        let values: Vec<u16> = (0..2500).map(|i| (i * 13 % 500) as u16).collect();
        let width = 9usize;
        let mut packed = Vec::new();
        for chunk in values.chunks(1024) {
            let mut block = [0u16; 1024];
            block[..chunk.len()].copy_from_slice(chunk);
            bitpack::pack_to_le_bytes(width, &block, &mut packed);
        }
        let enc = no_nulls(wrap(Pb::BitpackedForNonNeg(enc20::BitpackedForNonNeg {
            compressed_bits_per_value: width as u64,
            uncompressed_bits_per_value: 16,
            buffer: page_buffer_ref(0),
        })));
        let out = decode_as(enc.clone(), vec![Buffer::from_vec(packed.clone())], 2500, &DataType::UInt16).unwrap();
        assert_eq!(out.as_primitive::<arrow_array::types::UInt16Type>().values().to_vec(), values);
        let e = decode_as(enc, vec![Buffer::from_vec(packed[..packed.len() - 1].to_vec())], 2500, &DataType::UInt16);
        assert!(matches!(e, Err(Error::Corrupt(_))));
    }

    #[test]
    fn decodes_legacy_fixed_size_binary_constant_and_fsst() {
        // Equal-length strings without offsets, values as one flat of the width.
        for (bits, n_values) in [(24u64, 3u64), (8, 9)] {
            let enc = wrap(Pb::FixedSizeBinary(Box::new(enc20::FixedSizeBinary {
                bytes: Some(Box::new(no_nulls(wrap(Pb::Flat(enc20::Flat {
                    bits_per_value: bits,
                    buffer: page_buffer_ref(0),
                    compression: None,
                }))))),
                byte_width: 3,
            })));
            let _ = n_values;
            let out = decode_as(enc, vec![Buffer::from(b"abcdefghi".as_slice())], 3, &DataType::Utf8).unwrap();
            assert_eq!(out.as_string::<i32>().iter().collect::<Vec<_>>(), vec![Some("abc"), Some("def"), Some("ghi")]);
        }
        let enc = no_nulls(wrap(Pb::Constant(enc20::Constant { value: bytes::Bytes::from_static(&[7, 0, 0, 0]) })));
        let out = decode_as(enc, vec![], 4, &DataType::Int32).unwrap();
        assert_eq!(out.as_primitive::<Int32Type>().values().to_vec(), vec![7; 4]);
        // FSST: a binary of compressed strings plus the symbol table.
        let v: Vec<&[u8]> = vec![b"hello world", b"hello there", b"", b"world hello"];
        let table = SymbolTable::train(&v);
        let strings: ArrayRef = Arc::new(BinaryArray::from_iter(
            v.iter().map(|s| Some(table.compress(s))).collect::<Vec<_>>().iter().map(|c| c.as_deref()),
        ));
        let mut w = PageWriter::default();
        let inner = w.binary(&strings, None).unwrap();
        let enc = wrap(Pb::Fsst(Box::new(enc20::Fsst { binary: Some(Box::new(inner)), symbol_table: table.to_bytes().into() })));
        let out = decode_as(enc.clone(), w.buffers.clone(), 4, &DataType::Binary).unwrap();
        assert_eq!(out.as_binary::<i32>().iter().map(|b| b.unwrap()).collect::<Vec<_>>(), v);
        assert!(describe(&enc).starts_with("fsst(binary("));
    }

    // --- Hostile input ----------------------------------------------------------------------

    fn expect_corrupt(r: Result<ArrayRef>) {
        match r {
            Err(Error::Corrupt(_)) | Err(Error::NotSupported(_)) => {}
            other => panic!("expected a corrupt-data error, got {other:?}"),
        }
    }

    #[test]
    fn hostile_inputs_are_errors() {
        let flat = |bits, i| wrap(Pb::Flat(enc20::Flat { bits_per_value: bits, buffer: page_buffer_ref(i), compression: None }));
        // Buffer index out of range, buffer too short, missing children, odd widths.
        expect_corrupt(decode_as(no_nulls(flat(32, 3)), vec![Buffer::from_vec(vec![0u8; 8])], 2, &DataType::Int32));
        expect_corrupt(decode_as(no_nulls(flat(32, 0)), vec![Buffer::from_vec(vec![0u8; 7])], 2, &DataType::Int32));
        expect_corrupt(decode_as(no_nulls(flat(0, 0)), vec![Buffer::from_vec(vec![0u8; 8])], 2, &DataType::Int32));
        expect_corrupt(decode_as(no_nulls(flat(12, 0)), vec![Buffer::from_vec(vec![0u8; 8])], 2, &DataType::Int32));
        expect_corrupt(decode_as(no_nulls(flat(64, 0)), vec![Buffer::from_vec(vec![0u8; 16])], 2, &DataType::Int32));
        expect_corrupt(decode_as(enc20::ArrayEncoding::default(), vec![], 2, &DataType::Int32));
        expect_corrupt(decode_as(wrap(Pb::Nullable(Box::default())), vec![], 2, &DataType::Int32));
        let column_buffer = wrap(Pb::Flat(enc20::Flat {
            bits_per_value: 32,
            buffer: Some(enc20::Buffer { buffer_index: 0, buffer_type: 1 }),
            compression: None,
        }));
        expect_corrupt(decode_as(column_buffer, vec![Buffer::from_vec(vec![0u8; 8])], 2, &DataType::Int32));
        // Unknown compression, bad compressed bytes.
        let zstd = wrap(Pb::Flat(enc20::Flat {
            bits_per_value: 32,
            buffer: page_buffer_ref(0),
            compression: Some(enc20::Compression { scheme: "zstd".into(), level: None }),
        }));
        expect_corrupt(decode_as(zstd.clone(), vec![Buffer::from_vec(vec![9u8; 20])], 2, &DataType::Int32));
        let brotli = wrap(Pb::Flat(enc20::Flat {
            bits_per_value: 32,
            buffer: page_buffer_ref(0),
            compression: Some(enc20::Compression { scheme: "brotli".into(), level: None }),
        }));
        expect_corrupt(decode_as(brotli, vec![Buffer::from_vec(vec![9u8; 20])], 2, &DataType::Int32));
        // Binary: decreasing offsets, offsets past the bytes, indices too short.
        let binary = |adj| {
            wrap(Pb::Binary(Box::new(enc20::Binary {
                indices: Some(Box::new(no_nulls(flat(64, 0)))),
                bytes: Some(Box::new(flat(8, 1))),
                null_adjustment: adj,
            })))
        };
        let idx = |v: &[u64]| Buffer::from_vec(v.to_vec());
        let bytes = Buffer::from(b"abcdef".as_slice());
        expect_corrupt(decode_as(binary(7), vec![idx(&[4, 2]), bytes.clone()], 2, &DataType::Utf8));
        expect_corrupt(decode_as(binary(100), vec![idx(&[4, 9]), bytes.clone()], 2, &DataType::Utf8));
        expect_corrupt(decode_as(binary(7), vec![idx(&[4]), bytes.clone()], 2, &DataType::Utf8));
        // Invalid UTF-8 is caught when building the Arrow array.
        let bad_utf8 = decode_as(binary(3), vec![idx(&[2]), Buffer::from(vec![0xff, 0xfe])], 1, &DataType::Utf8);
        expect_corrupt(bad_utf8);
        // Dictionary: index out of range for either indexing.
        let dict = |n_items| {
            wrap(Pb::Dictionary(Box::new(enc20::Dictionary {
                indices: Some(Box::new(no_nulls(flat(8, 2)))),
                items: Some(Box::new(binary(7))),
                num_dictionary_items: n_items,
            })))
        };
        let bufs = vec![idx(&[3, 6]), bytes.clone(), Buffer::from(vec![0u8, 2, 1])];
        assert!(decode_as(dict(2), bufs.clone(), 3, &DataType::Utf8).is_ok());
        expect_corrupt(decode_as(dict(2), vec![bufs[0].clone(), bytes.clone(), Buffer::from(vec![3u8])], 1, &DataType::Utf8));
        let dict_type = DataType::Dictionary(Box::new(DataType::UInt8), Box::new(DataType::Utf8));
        expect_corrupt(decode_as(dict(2), bufs.clone(), 3, &dict_type));
        expect_corrupt(decode_as(dict(5), bufs.clone(), 3, &DataType::Utf8));
        // Shapes that do not fit the column.
        expect_corrupt(decode_as(binary(7), vec![idx(&[3, 6]), bytes.clone()], 2, &DataType::Int64));
        expect_corrupt(decode_as(no_nulls(flat(32, 0)), vec![Buffer::from_vec(vec![0u8; 8])], 2, &DataType::Utf8));
        // Nested 2.0 pages are not supported (yet), and never panic.
        let list = wrap(Pb::List(Box::new(enc20::List { offsets: None, null_offset_adjustment: 0, num_items: 0 })));
        expect_corrupt(decode_as(list, vec![], 2, &DataType::Int32));
        // Bit-packing to zero bits would leave the row count unbounded.
        let zero_width = wrap(Pb::BitpackedForNonNeg(enc20::BitpackedForNonNeg {
            compressed_bits_per_value: 0,
            uncompressed_bits_per_value: 32,
            buffer: page_buffer_ref(0),
        }));
        expect_corrupt(decode_as(zero_width, vec![Buffer::from_vec(vec![0u8; 8])], u64::MAX, &DataType::Int32));
        // Huge row counts with nothing backing them.
        expect_corrupt(decode_as(all_nulls(), vec![], u64::MAX, &DataType::Int32));
        let big = wrap(Pb::Constant(enc20::Constant { value: bytes::Bytes::from_static(&[1; 16]) }));
        expect_corrupt(decode_as(big, vec![], 1 << 31, &DataType::Decimal128(10, 2)));
        // Fixed-size list whose item count overflows.
        let fsl = no_nulls(wrap(Pb::FixedSizeList(Box::new(enc20::FixedSizeList {
            dimension: u32::MAX,
            items: Some(Box::new(no_nulls(flat(32, 0)))),
            has_validity: false,
        }))));
        let dt = DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), u32::MAX as i32);
        let _ = decode_as(fsl, vec![Buffer::from_vec(vec![0u8; 8])], u64::MAX / 2, &dt);
    }

    #[test]
    fn hostile_ranged_reads_are_errors() {
        let a: ArrayRef = Arc::new(StringArray::from(vec!["ab", "cde", "f"]));
        let (enc, buffers) = encoded(&a, &[]);
        let (file, mut locations) = file_image(&buffers);
        let fetch = |ranges: &[Range<u64>]| -> Result<Vec<Buffer>> {
            Ok(ranges.iter().map(|r| Buffer::from(&file[r.start as usize..(r.end as usize).min(file.len())])).collect())
        };
        let dt = DataType::Utf8;
        let kind = LeafKind::of(&dt).unwrap();
        // Bytes buffer declared shorter than the offsets reach.
        locations[1].1 = 2;
        let src = PageSource { locations: &locations, loaded: &[], fetch: &fetch };
        assert!(matches!(read_rows(&enc, &src, 3, &kind, &dt, &[1..3]), Err(Error::Corrupt(_))));
        // Indices buffer shorter than the rows.
        let (_, mut locations) = file_image(&buffers);
        locations[0].1 = 8;
        let src = PageSource { locations: &locations, loaded: &[], fetch: &fetch };
        assert!(matches!(read_rows(&enc, &src, 3, &kind, &dt, &[0..2]), Err(Error::Corrupt(_))));
        // Rows outside the page are refused.
        let (_, locations) = file_image(&buffers);
        let src = PageSource { locations: &locations, loaded: &[], fetch: &fetch };
        assert!(read_rows(&enc, &src, 3, &kind, &dt, &[2..4]).is_err());
        // A short read is an error, not a panic.
        let short =
            |ranges: &[Range<u64>]| -> Result<Vec<Buffer>> { Ok(ranges.iter().map(|_| Buffer::from(vec![1u8])).collect()) };
        let src = PageSource { locations: &locations, loaded: &[], fetch: &short };
        assert!(matches!(read_rows(&enc, &src, 3, &kind, &dt, &[0..3]), Err(Error::Corrupt(_))));
        // Fixed-width pages: values buffer too short.
        let b: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3]));
        let (enc, buffers) = encoded(&b, &[]);
        let (_, mut locations) = file_image(&buffers);
        locations[0].1 = 16;
        let src = PageSource { locations: &locations, loaded: &[], fetch: &fetch };
        let dt = DataType::Int64;
        assert!(matches!(read_rows(&enc, &src, 3, &LeafKind::of(&dt).unwrap(), &dt, &[2..3]), Err(Error::Corrupt(_))));
    }

    /// Random damage to the buffers of valid pages never panics.
    #[test]
    fn damaged_buffers_never_panic() {
        let v: Vec<Option<String>> = strings(60, 4);
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(v.clone())),
            Arc::new(StringArray::from_iter((0..300).map(|i| (i % 9 != 0).then(|| ["p", "q", "r"][i % 3])))),
            fixed_array(DataType::Int32, 100, 3, 1),
            fsl(DataType::Float32, 4, 30, 3, 5),
            Arc::new(DictionaryArray::new(
                arrow_array::PrimitiveArray::<Int8Type>::from(vec![Some(0), None, Some(1)]),
                Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef,
            )),
        ];
        let mut rng = Lcg(99);
        for a in arrays {
            let dt = a.data_type().clone();
            let (enc, buffers) = encoded(&a, &[]);
            for _ in 0..300 {
                let mut bufs: Vec<Buffer> = buffers.clone();
                let bi = (rng.next() as usize) % bufs.len();
                let mut raw = bufs[bi].as_slice().to_vec();
                if rng.next() % 4 == 0 {
                    raw.truncate((rng.next() as usize) % (raw.len() + 1));
                } else if !raw.is_empty() {
                    for _ in 0..3 {
                        let p = (rng.next() as usize) % raw.len();
                        raw[p] = rng.next() as u8;
                    }
                }
                bufs[bi] = Buffer::from_vec(raw);
                let _ = decode_as(enc.clone(), bufs.clone(), a.len() as u64, &dt);
                let (file, locations) = file_image(&bufs);
                let fetch = |ranges: &[Range<u64>]| -> Result<Vec<Buffer>> {
                    Ok(ranges.iter().map(|r| Buffer::from(&file[r.start as usize..r.end as usize])).collect())
                };
                let src = PageSource { locations: &locations, loaded: &[], fetch: &fetch };
                let n = a.len() as u64;
                if let Ok(chunk) = read_rows(&enc, &src, n, &LeafKind::of(&dt).unwrap(), &dt, &[1..n / 2, n - 1..n]) {
                    let mut b = LeafBuilder::new(LeafKind::of(&dt).unwrap(), 0);
                    if b.append(&chunk.values, chunk.def.as_deref(), Selection::All).is_ok() {
                        let _ = b.finish(&dt);
                    }
                }
            }
        }
    }

    #[test]
    fn packed_structs_round_trip_row_major() {
        let fields = arrow_schema::Fields::from(vec![
            Field::new("x", DataType::Int32, true),
            Field::new("y", DataType::Float64, true),
            Field::new("z", DataType::UInt8, true),
        ]);
        let n = 1000usize;
        let a: ArrayRef = Arc::new(arrow_array::StructArray::new(
            fields.clone(),
            vec![
                Arc::new(Int32Array::from_iter_values((0..n as i32).map(|i| i * -3))),
                Arc::new(arrow_array::Float64Array::from_iter_values((0..n).map(|i| i as f64 / 4.0))),
                Arc::new(arrow_array::UInt8Array::from_iter_values((0..n).map(|i| i as u8))),
            ],
            None,
        ));
        let field = field_of(a.data_type(), &[("lance-encoding:packed", "true")]);
        let page = encode_page(&a.slice(7, 900), &field).unwrap();
        let enc = enc20::ArrayEncoding::decode(page.encoding.as_slice()).unwrap();
        assert_eq!(
            describe(&enc),
            "packed_struct(nullable(no_nulls, flat(32)), nullable(no_nulls, flat(64)), nullable(no_nulls, flat(8)))"
        );
        assert_eq!(page.buffers.len(), 1);
        assert_eq!(page.buffers[0].len(), 900 * 13);
        let row = |i: usize| -> Vec<u8> {
            let i = i + 7;
            [&(i as i32 * -3).to_le_bytes()[..], &(i as f64 / 4.0).to_le_bytes(), &[i as u8]].concat()
        };
        assert_eq!(&page.buffers[0].as_slice()[13 * 5..13 * 6], &row(5)[..]);
        let kind = LeafKind::of_field(&field).unwrap();
        let dt = a.data_type().clone();
        let whole = decode_page(&enc, &page.buffers, 900, &kind).unwrap();
        let DataBlock::Fixed(f) = &whole.values else { panic!("not fixed-width rows") };
        assert_eq!((f.bits_per_value, f.data.len()), (104, 900 * 13));
        // By byte ranges.
        assert!(supports_ranged_reads(&enc, 1));
        let (file, locations) = file_image(&page.buffers);
        let fetch = |ranges: &[Range<u64>]| -> Result<Vec<Buffer>> {
            Ok(ranges.iter().map(|r| Buffer::from(&file[r.start as usize..r.end as usize])).collect())
        };
        let src = PageSource { locations: &locations, loaded: &[], fetch: &fetch };
        let chunk = read_rows(&enc, &src, 900, &kind, &dt, &[3..5, 899..900]).unwrap();
        let DataBlock::Fixed(f) = &chunk.values else { panic!("not fixed-width rows") };
        assert_eq!(f.data.as_slice(), &[row(3), row(4), row(899)].concat()[..]);
        // Null rows or null children cannot be packed in 2.0.
        let with_nulls: ArrayRef = Arc::new(arrow_array::StructArray::new(
            fields,
            a.as_struct().columns().to_vec(),
            Some(NullBuffer::from((0..n).map(|i| i != 3).collect::<Vec<_>>())),
        ));
        assert!(matches!(encode_page(&with_nulls, &field), Err(Error::InvalidInput(_))));
        // Hostile: rows shorter than the page says, children of partial bytes.
        let short = vec![page.buffers[0].slice_with_length(0, 13 * 10)];
        assert!(matches!(decode_page(&enc, &short, 900, &kind), Err(Error::Corrupt(_))));
        let mut odd = enc.clone();
        if let Some(Pb::PackedStruct(p)) = odd.array_encoding.as_mut() {
            p.inner[0] =
                no_nulls(wrap(Pb::Flat(enc20::Flat { bits_per_value: 12, buffer: page_buffer_ref(0), compression: None })));
        }
        assert!(decode_page(&odd, &page.buffers, 900, &kind).is_err());
    }

    #[test]
    fn ranged_reads_cover_the_common_shapes() {
        let cases: Vec<ArrayRef> = vec![
            fixed_array(DataType::Int32, 10, 0, 1),
            fixed_array(DataType::Float64, 10, 3, 1),
            Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
            Arc::new(StringArray::from(vec!["a", "b"])),
            Arc::new(NullArray::new(4)),
            fsl(DataType::Float32, 2, 5, 2, 3),
        ];
        for a in cases {
            let (enc, buffers) = encoded(&a, &[]);
            assert!(supports_ranged_reads(&enc, buffers.len()), "{}", describe(&enc));
        }
        let compressed: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
        let (enc, buffers) = encoded(&compressed, &[("lance-encoding:compression", "zstd")]);
        assert!(!supports_ranged_reads(&enc, buffers.len()));
        let dict: ArrayRef = Arc::new(StringArray::from(vec!["a"; 200]));
        let (enc, buffers) = encoded(&dict, &[]);
        assert!(!supports_ranged_reads(&enc, buffers.len()));
    }
}
