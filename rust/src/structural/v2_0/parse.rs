//! Parsing an `ArrayEncoding` tree into a checked [`Node`] tree: the one dispatch point on
//! the oneof.

use std::sync::Arc;

use crate::encodings::GeneralScheme;
use crate::error::{Error, Result};
use crate::format::enc20;
use crate::format::enc20::array_encoding::ArrayEncoding as Pb;
use crate::format::enc20::nullable::Nullability;
use crate::kernels::fsst::SymbolTable;

use super::*;

/// A validated `ArrayEncoding` node; buffer references are indices into the page buffers.
#[derive(Debug, Clone)]
pub(super) enum Node {
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
    pub(super) fn parse(enc: &enc20::ArrayEncoding, num_buffers: usize) -> Result<Node> {
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
