//! Compressive encodings: bytes ⇄ [`DataBlock`]s.
//!
//! Each encoding lives in its own module with plain functions for the contexts it is used
//! in; [`Compression`] is the single dispatch point on the protobuf `CompressiveEncoding`
//! oneof (an unknown or unimplemented variant is [`Error::NotSupported`]). Contexts:
//!
//! * **mini-block**: a chunk carries [`Compression::miniblock_buffers`] value buffers that
//!   decode to the chunk's values ([`Compression::decode_miniblock`]);
//! * **block**: one buffer holds a whole stream (dictionary items, rep/def levels of a chunk
//!   or a constant page) ([`Compression::decode_block`]);
//! * **full-zip**: each value is stored (and compressed) on its own; see
//!   `structural::fullzip`.

pub mod bitpacking;
pub mod block;
pub mod bss;
pub mod dictionary;
pub mod fsst;
pub mod general;
pub mod hash;
pub mod rle;
pub mod variable;

use std::sync::Arc;

use arrow_buffer::{Buffer, MutableBuffer};

pub use block::{DataBlock, FixedSizeListBlock, FixedWidthBlock, VariableWidthBlock};
pub use general::GeneralScheme;

use crate::error::{Error, Result};
use crate::format::enc21;
use crate::format::enc21::compressive_encoding::Compression as Pb;
use crate::kernels::fsst::SymbolTable;

/// A parsed `CompressiveEncoding` tree.
#[derive(Debug, Clone)]
pub enum Compression {
    /// Fixed-width values, optionally general-compressed as a whole buffer.
    Flat {
        /// Bits per value.
        bits: u64,
        /// Whole-buffer compression.
        data: Option<GeneralScheme>,
    },
    /// Offsets + bytes.
    Variable {
        /// 32 or 64.
        offset_bits: u8,
        /// Compression of the bytes (not produced by pylance 14; rejected).
        values: Option<GeneralScheme>,
    },
    /// Every value is the same.
    Constant {
        /// The value's bytes.
        value: Option<bytes::Bytes>,
    },
    /// FastLanes with a per-1024 width word.
    InlineBitpacking {
        /// Uncompressed width (8/16/32/64).
        bits: u64,
    },
    /// FastLanes with one width for the buffer.
    OutOfLineBitpacking {
        /// Uncompressed width.
        bits: u64,
        /// Packed width.
        width: u64,
    },
    /// FSST-compressed strings.
    Fsst {
        /// The page's symbol table.
        table: Arc<SymbolTable>,
        /// Encoding of the compressed strings (variable).
        values: Box<Compression>,
    },
    /// Run-length encoding.
    Rle {
        /// Width of a run value in bits.
        value_bits: u64,
    },
    /// Byte-stream split of fixed-width values.
    ByteStreamSplit {
        /// Width of a value in bits.
        bits: u64,
    },
    /// General compression (LZ4/zstd) around another encoding.
    General {
        /// The scheme.
        scheme: GeneralScheme,
        /// The wrapped encoding.
        values: Box<Compression>,
    },
    /// Fixed-size lists of items.
    FixedSizeList {
        /// Items per value.
        dim: u64,
        /// Whether an item-validity bitmap precedes the items.
        has_validity: bool,
        /// Encoding of the items.
        values: Box<Compression>,
    },
    /// Row-major fixed-width struct.
    PackedStruct {
        /// Width of each child in bits.
        bits: Vec<u64>,
        /// Encoding of the rows (flat of the total width).
        values: Box<Compression>,
    },
    /// Row-major struct with variable-width children (2.2, full-zip values): each row is its
    /// children's bytes in order, a variable child as a little-endian length then its
    /// bytes; a null row is empty.
    VariablePackedStruct {
        /// How each child is stored in a row.
        fields: Vec<PackedField>,
        /// Each child's per-value compression: flat for fixed children; variable (raw),
        /// FSST or general for variable ones (a variable child's length is that of its
        /// compressed bytes).
        codecs: Vec<Compression>,
    },
}

impl PackedField {
    /// The raw per-value encoding of a child stored this way.
    pub fn raw_codec(&self) -> Compression {
        match self {
            PackedField::Fixed { bits } => Compression::Flat { bits: *bits, data: None },
            PackedField::Variable { length_bits } => Compression::Variable { offset_bits: *length_bits as u8, values: None },
        }
    }
}

/// One child of a [`Compression::VariablePackedStruct`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PackedField {
    /// `bits / 8` bytes, uncompressed.
    Fixed {
        /// Bits of the value.
        bits: u64,
    },
    /// A `length_bits`-bit length, then that many uncompressed bytes.
    Variable {
        /// Bits of the length prefix (32 or 64).
        length_bits: u64,
    },
}

fn flat_bits(c: &Option<Box<enc21::CompressiveEncoding>>, what: &str) -> Result<u64> {
    match c.as_deref().and_then(|c| c.compression.as_ref()) {
        Some(Pb::Flat(f)) if f.data.is_none() => Ok(f.bits_per_value),
        _ => Err(Error::not_supported(format!("{what} other than flat"))),
    }
}

fn child(c: &Option<Box<enc21::CompressiveEncoding>>, what: &str) -> Result<Box<Compression>> {
    match c.as_deref() {
        Some(c) => Ok(Box::new(Compression::from_pb(c)?)),
        None => Err(Error::corrupt(format!("{what} encoding is missing its inner encoding"))),
    }
}

impl Compression {
    /// Parses the protobuf description (the one dispatch point on the oneof).
    pub fn from_pb(pb: &enc21::CompressiveEncoding) -> Result<Self> {
        let Some(c) = pb.compression.as_ref() else {
            return Err(Error::corrupt("empty CompressiveEncoding"));
        };
        Ok(match c {
            Pb::Flat(f) => {
                Compression::Flat { bits: f.bits_per_value, data: f.data.as_ref().map(GeneralScheme::from_pb).transpose()? }
            }
            Pb::Variable(v) => {
                let offset_bits = match v.offsets.as_ref().and_then(|o| o.compression.as_ref()) {
                    Some(Pb::Flat(f)) if f.bits_per_value == 32 || f.bits_per_value == 64 => f.bits_per_value as u8,
                    _ => return Err(Error::not_supported("variable encoding with non-flat 32/64-bit offsets")),
                };
                if v.values.is_some() {
                    return Err(Error::not_supported("variable encoding with compressed bytes"));
                }
                Compression::Variable { offset_bits, values: None }
            }
            Pb::Constant(c) => Compression::Constant { value: c.value.clone() },
            Pb::InlineBitpacking(b) => {
                if b.values.is_some() {
                    return Err(Error::not_supported("inline bit-packing with buffer compression"));
                }
                Compression::InlineBitpacking { bits: b.uncompressed_bits_per_value }
            }
            Pb::OutOfLineBitpacking(b) => Compression::OutOfLineBitpacking {
                bits: b.uncompressed_bits_per_value,
                width: flat_bits(&b.values, "out-of-line bit-packed values")?,
            },
            Pb::Fsst(f) => Compression::Fsst {
                table: Arc::new(
                    SymbolTable::from_bytes(&f.symbol_table)
                        .map_err(|e| Error::corrupt(format!("invalid FSST symbol table: {e}")))?,
                ),
                values: child(&f.values, "fsst")?,
            },
            Pb::Dictionary(_) => return Err(Error::not_supported("a dictionary nested inside a compressive encoding")),
            Pb::Rle(r) => {
                let value_bits = flat_bits(&r.values, "RLE values")?;
                let len_bits = flat_bits(&r.run_lengths, "RLE run lengths")?;
                if len_bits != 8 {
                    return Err(Error::not_supported(format!("RLE run lengths of {len_bits} bits")));
                }
                Compression::Rle { value_bits }
            }
            Pb::ByteStreamSplit(b) => Compression::ByteStreamSplit { bits: flat_bits(&b.values, "byte-stream-split values")? },
            Pb::General(g) => Compression::General {
                scheme: GeneralScheme::from_pb(
                    g.compression.as_ref().ok_or_else(|| Error::corrupt("general encoding without a scheme"))?,
                )?,
                values: child(&g.values, "general")?,
            },
            Pb::FixedSizeList(f) => Compression::FixedSizeList {
                dim: f.items_per_value,
                has_validity: f.has_validity,
                values: child(&f.values, "fixed_size_list")?,
            },
            Pb::PackedStruct(p) => {
                Compression::PackedStruct { bits: p.bits_per_value.clone(), values: child(&p.values, "packed_struct")? }
            }
            Pb::VariablePackedStruct(v) => {
                use enc21::variable_packed_struct::field_encoding::Layout;
                let mut fields = Vec::with_capacity(v.fields.len());
                let mut codecs = Vec::with_capacity(v.fields.len());
                for f in &v.fields {
                    let value = Compression::from_pb(
                        f.value.as_ref().ok_or_else(|| Error::corrupt("packed struct child without an encoding"))?,
                    )?;
                    let raw_variable = |c: &Compression| matches!(c, Compression::Variable { values: None, .. });
                    fields.push(match (f.layout, &value) {
                        (Some(Layout::BitsPerValue(bits)), Compression::Flat { bits: b, data: None }) if *b == bits && bits % 8 == 0 => {
                            PackedField::Fixed { bits }
                        }
                        (Some(Layout::BitsPerLength(l @ (32 | 64))), c)
                            if raw_variable(c)
                                || matches!(c, Compression::Fsst { values, .. } | Compression::General { values, .. } if raw_variable(values)) =>
                        {
                            PackedField::Variable { length_bits: l }
                        }
                        (layout, value) => {
                            return Err(Error::not_supported(format!(
                                "variable packed struct child stored as {} with layout {layout:?}",
                                value.describe()
                            )))
                        }
                    });
                    codecs.push(value);
                }
                if fields.is_empty() {
                    return Err(Error::corrupt("variable packed struct without children"));
                }
                Compression::VariablePackedStruct { fields, codecs }
            }
        })
    }

    /// The protobuf description.
    pub fn to_pb(&self) -> enc21::CompressiveEncoding {
        let flat = |bits: u64| {
            Some(Box::new(enc21::CompressiveEncoding::from(Pb::Flat(enc21::Flat { bits_per_value: bits, data: None }))))
        };
        let c = match self {
            Compression::Flat { bits, data } => Pb::Flat(enc21::Flat { bits_per_value: *bits, data: data.map(|d| d.to_pb()) }),
            Compression::Variable { offset_bits, .. } => {
                Pb::Variable(Box::new(enc21::Variable { offsets: flat(*offset_bits as u64), values: None }))
            }
            Compression::Constant { value } => Pb::Constant(enc21::Constant { value: value.clone() }),
            Compression::InlineBitpacking { bits } => {
                Pb::InlineBitpacking(enc21::InlineBitpacking { uncompressed_bits_per_value: *bits, values: None })
            }
            Compression::OutOfLineBitpacking { bits, width } => Pb::OutOfLineBitpacking(Box::new(enc21::OutOfLineBitpacking {
                uncompressed_bits_per_value: *bits,
                values: flat(*width),
            })),
            Compression::Fsst { table, values } => {
                Pb::Fsst(Box::new(enc21::Fsst { symbol_table: table.to_bytes().into(), values: Some(Box::new(values.to_pb())) }))
            }
            Compression::Rle { value_bits } => Pb::Rle(Box::new(enc21::Rle { values: flat(*value_bits), run_lengths: flat(8) })),
            Compression::ByteStreamSplit { bits } => {
                Pb::ByteStreamSplit(Box::new(enc21::ByteStreamSplit { values: flat(*bits) }))
            }
            Compression::General { scheme, values } => Pb::General(Box::new(enc21::General {
                compression: Some(scheme.to_pb()),
                values: Some(Box::new(values.to_pb())),
            })),
            Compression::FixedSizeList { dim, has_validity, values } => Pb::FixedSizeList(Box::new(enc21::FixedSizeList {
                items_per_value: *dim,
                values: Some(Box::new(values.to_pb())),
                has_validity: *has_validity,
            })),
            Compression::PackedStruct { bits, values } => Pb::PackedStruct(Box::new(enc21::PackedStruct {
                bits_per_value: bits.clone(),
                values: Some(Box::new(values.to_pb())),
            })),
            Compression::VariablePackedStruct { fields, codecs } => {
                use enc21::variable_packed_struct::{field_encoding::Layout, FieldEncoding};
                Pb::VariablePackedStruct(enc21::VariablePackedStruct {
                    fields: fields
                        .iter()
                        .zip(codecs)
                        .map(|(f, c)| FieldEncoding {
                            value: Some(c.to_pb()),
                            layout: Some(match f {
                                PackedField::Fixed { bits } => Layout::BitsPerValue(*bits),
                                PackedField::Variable { length_bits } => Layout::BitsPerLength(*length_bits),
                            }),
                        })
                        .collect(),
                })
            }
        };
        enc21::CompressiveEncoding::from(c)
    }

    /// Number of value buffers this encoding uses in a mini-block chunk.
    pub fn miniblock_buffers(&self) -> usize {
        match self {
            Compression::Constant { .. } => 0,
            Compression::Rle { .. } => 2,
            Compression::General { values, .. } => values.miniblock_buffers(),
            Compression::FixedSizeList { has_validity, values, .. } => values.miniblock_buffers() + *has_validity as usize,
            _ => 1,
        }
    }

    /// Decodes the value buffers of one mini-block chunk holding `n` values.
    pub fn decode_miniblock(&self, bufs: &[Buffer], n: u64) -> Result<DataBlock> {
        const CTX: &str = "mini-block chunk";
        let need = self.miniblock_buffers();
        if bufs.len() < need {
            return Err(Error::corrupt(format!("{CTX}: {} value buffers, encoding needs {need}", bufs.len())));
        }
        match self {
            Compression::Flat { bits, data } => {
                let buf = match data {
                    Some(s) => Buffer::from_vec(s.decompress(bufs[0].as_slice())?),
                    None => bufs[0].clone(),
                };
                fixed(buf, *bits, n, CTX)
            }
            Compression::Variable { offset_bits, .. } => variable::decode_miniblock(&bufs[0], *offset_bits, n, CTX),
            Compression::Constant { value } => constant(value.as_deref(), n),
            Compression::InlineBitpacking { bits } => bitpacking::decode_inline(bufs[0].as_slice(), *bits, n, CTX),
            Compression::OutOfLineBitpacking { bits, width } => {
                bitpacking::decode_out_of_line(bufs[0].as_slice(), *bits, *width, n, CTX)
            }
            Compression::Fsst { table, values } => {
                let inner = values.decode_miniblock(bufs, n)?;
                fsst::decompress_block(table, inner, CTX)
            }
            Compression::Rle { value_bits } => {
                rle::expand(bufs[0].as_slice(), bufs[1].as_slice(), (*value_bits / 8) as usize, n, CTX)
            }
            Compression::ByteStreamSplit { bits } => bss::decode(bufs[0].as_slice(), *bits, n, CTX),
            Compression::General { scheme, values } => {
                let mut owned = bufs.to_vec();
                owned[0] = Buffer::from_vec(scheme.decompress(bufs[0].as_slice())?);
                values.decode_miniblock(&owned, n)
            }
            Compression::FixedSizeList { dim, has_validity, values } => {
                let items = n.checked_mul(*dim).ok_or_else(|| Error::corrupt("fixed-size list too large"))?;
                let (validity, rest) = if *has_validity { (Some(bufs[0].clone()), &bufs[1..]) } else { (None, bufs) };
                if let Some(v) = &validity {
                    if (v.len() as u64) * 8 < items {
                        return Err(Error::corrupt(format!("{CTX}: item validity too short")));
                    }
                }
                let child = values.decode_miniblock(rest, items)?;
                Ok(DataBlock::FixedSizeList(FixedSizeListBlock {
                    child: Box::new(child),
                    dimension: *dim,
                    item_validity: validity,
                }))
            }
            Compression::VariablePackedStruct { .. } => {
                Err(Error::corrupt(format!("{CTX}: variable packed structs are stored in full-zip pages only")))
            }
            Compression::PackedStruct { bits, values } => {
                let total: u64 = bits.iter().sum();
                let block = values.decode_miniblock(bufs, n)?.into_fixed(CTX)?;
                if block.bits_per_value != total {
                    return Err(Error::corrupt(format!(
                        "{CTX}: packed struct of {total} bits stored as {} bits",
                        block.bits_per_value
                    )));
                }
                Ok(DataBlock::Fixed(block))
            }
        }
    }

    /// Decodes only the values at `rows` (each `< n`, any order) of one mini-block chunk, in
    /// that order, when this encoding can do so without decoding the whole chunk: FastLanes
    /// blocks support extracting single values and FSST strings decompress one by one.
    /// `None` means the caller should decode the whole chunk.
    pub fn decode_miniblock_rows(&self, bufs: &[Buffer], n: u64, rows: &[u32]) -> Result<Option<DataBlock>> {
        const CTX: &str = "mini-block chunk";
        if bufs.len() < self.miniblock_buffers() || rows.iter().any(|&r| r as u64 >= n) {
            return Ok(None);
        }
        match self {
            Compression::InlineBitpacking { bits } => {
                Ok(Some(bitpacking::decode_inline_rows(bufs[0].as_slice(), *bits, n, rows, CTX)?))
            }
            Compression::Fsst { table, values } if matches!(values.as_ref(), Compression::Variable { .. }) => {
                let inner = values.decode_miniblock(bufs, n)?.into_variable(CTX)?;
                let mut offsets = Vec::with_capacity(rows.len() + 1);
                let mut data = Vec::new();
                offsets.push(0u64);
                for &r in rows {
                    fsst::decompress_value(table, inner.value(r as usize), &mut data)?;
                    offsets.push(data.len() as u64);
                }
                Ok(Some(DataBlock::Variable(VariableWidthBlock::from_u64(offsets, data))))
            }
            _ => Ok(None),
        }
    }

    /// Decodes one buffer holding a whole stream of `n` values (block context).
    pub fn decode_block(&self, buf: &Buffer, n: u64) -> Result<DataBlock> {
        const CTX: &str = "block";
        match self {
            Compression::Flat { bits, data } => {
                let buf = match data {
                    Some(s) => Buffer::from_vec(s.decompress(buf.as_slice())?),
                    None => buf.clone(),
                };
                fixed(buf, *bits, n, CTX)
            }
            Compression::Variable { .. } => variable::decode_block(buf, n, CTX),
            Compression::Constant { value } => constant(value.as_deref(), n),
            Compression::InlineBitpacking { bits } => bitpacking::decode_inline(buf.as_slice(), *bits, n, CTX),
            Compression::OutOfLineBitpacking { bits, width } => {
                bitpacking::decode_out_of_line(buf.as_slice(), *bits, *width, n, CTX)
            }
            Compression::Fsst { table, values } => fsst::decompress_block(table, values.decode_block(buf, n)?, CTX),
            Compression::Rle { value_bits } => rle::decode_block(buf, (*value_bits / 8) as usize, n, CTX),
            Compression::ByteStreamSplit { bits } => bss::decode(buf.as_slice(), *bits, n, CTX),
            Compression::General { scheme, values } => {
                values.decode_block(&Buffer::from_vec(scheme.decompress(buf.as_slice())?), n)
            }
            Compression::FixedSizeList { dim, has_validity: false, values } => {
                let items = n.checked_mul(*dim).ok_or_else(|| Error::corrupt("fixed-size list too large"))?;
                let child = values.decode_block(buf, items)?;
                Ok(DataBlock::FixedSizeList(FixedSizeListBlock { child: Box::new(child), dimension: *dim, item_validity: None }))
            }
            other => Err(Error::not_supported(format!("{} in block context", other.name()))),
        }
    }

    /// A short name for messages and metadata.
    pub fn name(&self) -> &'static str {
        match self {
            Compression::Flat { .. } => "flat",
            Compression::Variable { .. } => "variable",
            Compression::Constant { .. } => "constant",
            Compression::InlineBitpacking { .. } => "inline_bitpacking",
            Compression::OutOfLineBitpacking { .. } => "out_of_line_bitpacking",
            Compression::Fsst { .. } => "fsst",
            Compression::Rle { .. } => "rle",
            Compression::ByteStreamSplit { .. } => "byte_stream_split",
            Compression::General { .. } => "general",
            Compression::FixedSizeList { .. } => "fixed_size_list",
            Compression::PackedStruct { .. } => "packed_struct",
            Compression::VariablePackedStruct { .. } => "variable_packed_struct",
        }
    }

    /// A one-line description of the tree, e.g. `general(zstd(3), flat(64))`.
    pub fn describe(&self) -> String {
        match self {
            Compression::Flat { bits, data: None } => format!("flat({bits})"),
            Compression::Flat { bits, data: Some(s) } => format!("flat({bits}, {})", scheme_name(*s)),
            Compression::Variable { offset_bits, .. } => format!("variable({offset_bits})"),
            Compression::Constant { .. } => "constant".into(),
            Compression::InlineBitpacking { bits } => format!("inline_bitpacking({bits})"),
            Compression::OutOfLineBitpacking { bits, width } => format!("out_of_line_bitpacking({bits}->{width})"),
            Compression::Fsst { values, .. } => format!("fsst({})", values.describe()),
            Compression::Rle { value_bits } => format!("rle({value_bits})"),
            Compression::ByteStreamSplit { bits } => format!("byte_stream_split({bits})"),
            Compression::General { scheme, values } => format!("general({}, {})", scheme_name(*scheme), values.describe()),
            Compression::FixedSizeList { dim, has_validity, values } => {
                format!("fixed_size_list({dim}{}, {})", if *has_validity { ", nullable items" } else { "" }, values.describe())
            }
            Compression::PackedStruct { bits, .. } => format!("packed_struct({bits:?})"),
            Compression::VariablePackedStruct { codecs, .. } => {
                let f: Vec<String> = codecs.iter().map(|c| c.describe()).collect();
                format!("variable_packed_struct({})", f.join(", "))
            }
        }
    }
}

fn scheme_name(s: GeneralScheme) -> String {
    match s {
        GeneralScheme::Lz4 => "lz4".into(),
        GeneralScheme::Zstd(l) => format!("zstd({l})"),
    }
}

impl From<Pb> for enc21::CompressiveEncoding {
    fn from(c: Pb) -> Self {
        enc21::CompressiveEncoding { compression: Some(c) }
    }
}

fn fixed(buf: Buffer, bits: u64, n: u64, ctx: &str) -> Result<DataBlock> {
    if bits == 0 || (bits != 1 && bits % 8 != 0) {
        return Err(Error::not_supported(format!("{ctx}: flat values of {bits} bits")));
    }
    let block = FixedWidthBlock { data: buf, bits_per_value: bits, num_values: n };
    block.validate(ctx)?;
    Ok(DataBlock::Fixed(block))
}

fn constant(value: Option<&[u8]>, n: u64) -> Result<DataBlock> {
    block::check_unbacked(n, value.map_or(0, |v| v.len() as u64), "constant encoding")?;
    let Some(v) = value else { return Ok(DataBlock::Empty { num_values: n }) };
    let mut out = MutableBuffer::new(v.len() * n as usize);
    for _ in 0..n {
        out.extend_from_slice(v);
    }
    Ok(DataBlock::Fixed(FixedWidthBlock { data: out.into(), bits_per_value: v.len() as u64 * 8, num_values: n }))
}
