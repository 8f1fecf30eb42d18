//! The full-zip page layout (2.1 / 2.2): wide values (≥ 256 bytes, vectors, images) stored
//! row by row with their levels "zipped" in front.
//!
//! Buffer 0 holds, per level: a control word (`(rep << bits_def) | def`, 1/2/4 bytes; absent
//! when the column has neither), then — for visible items — the value: `bits_per_value/8`
//! bytes for fixed width (null items zero-filled), or a length (`bits_per_offset/8` bytes)
//! and that many bytes for variable width (valid items only). Buffer 1, present for
//! variable width or repetition, is the repetition index: `rows + 1` unsigned integers (1, 2,
//! 4 or 8 bytes each) giving the byte offset of every row in buffer 0.
//!
//! Random access: a fixed-width row without repetition sits at `row · stride`; otherwise the
//! repetition index gives its byte range. Values compressed per value (FSST with the page's
//! symbol table, LZ4/zstd) are decompressed one by one.

use std::ops::Range;
use std::sync::Arc;

use arrow_buffer::{Buffer, MutableBuffer};

use super::builder::{LeafBuilder, Selection};
use super::layout::{append_decoded, PageInfo, PageLayout, PageRequest, PageRows, PieceCursor};
use super::miniblock::{check_fetched, DecodedChunk};
use super::repdef::{bits_for, max_def, max_rep, max_visible_def, Layer};
use crate::encodings::block::read_uint;
use crate::encodings::{Compression, DataBlock, FixedSizeListBlock, FixedWidthBlock, GeneralScheme, VariableWidthBlock};
use crate::error::{Error, Result};
use crate::format::enc21;
use crate::kernels::fsst::SymbolTable;
use crate::schema::LeafKind;

/// How each value is stored.
#[derive(Debug, Clone)]
pub enum ValueKind {
    /// Fixed width, possibly a fixed-size list of `dim` items of `item_bits`.
    Fixed {
        /// Bits of one whole value.
        bits: u64,
        /// Items per value if the values are fixed-size lists.
        dim: Option<u64>,
        /// Bits of one item.
        item_bits: u64,
        /// Bytes of item validity (a bitmap of the `dim` items, padded to a byte) in front
        /// of each fixed-size list's items; 0 when items cannot be null.
        validity_bytes: u64,
    },
    /// Variable width with a length prefix of `offset_bits`.
    Variable {
        /// Bits of the length prefix.
        offset_bits: u64,
        /// Per-value decompression.
        per_value: PerValue,
        /// Each value is a row of a variable packed struct with these children.
        packed: Option<Vec<crate::encodings::PackedField>>,
    },
}

/// Per-value decompression of variable-width full-zip values.
#[derive(Debug, Clone)]
pub enum PerValue {
    /// Stored raw.
    None,
    /// FSST with the page's table.
    Fsst(Arc<SymbolTable>),
    /// Independently LZ4/zstd-framed.
    General(GeneralScheme),
    /// Rows of a variable packed struct whose variable children are compressed per value
    /// (with these codecs); rows are rewritten with the children's bytes decompressed.
    PackedChildren(Vec<crate::encodings::PackedField>, Vec<Compression>),
}

/// The parsed `FullZipLayout`.
#[derive(Debug, Clone)]
pub struct FullZipLayout {
    /// Bits of the repetition part of the control word.
    pub bits_rep: u32,
    /// Bits of the definition part of the control word.
    pub bits_def: u32,
    /// Value storage.
    pub kind: ValueKind,
    /// Number of levels.
    pub num_items: u64,
    /// Number of visible items.
    pub num_visible_items: u64,
    /// Structural layers, innermost first.
    pub layers: Vec<Layer>,
}

fn ctrl_bytes(bits: u32) -> usize {
    match bits {
        0 => 0,
        1..=8 => 1,
        9..=16 => 2,
        _ => 4,
    }
}

impl FullZipLayout {
    /// Parses the protobuf message.
    pub fn from_pb(pb: &enc21::FullZipLayout) -> Result<Self> {
        let layers = Layer::parse_all(&pb.layers)?;
        let comp = Compression::from_pb(
            pb.value_compression.as_ref().ok_or_else(|| Error::corrupt("full-zip page without value compression"))?,
        )?;
        let kind = match pb.details {
            Some(enc21::full_zip_layout::Details::BitsPerValue(bits)) => {
                let bits = bits as u64;
                let (dim, item_bits, validity_bytes) = match &comp {
                    Compression::Flat { bits: b, data: None } if *b == bits => (None, bits, 0),
                    Compression::FixedSizeList { dim, has_validity, values } => match values.as_ref() {
                        Compression::Flat { bits: b, data: None } => {
                            // Items with validity carry a byte-padded bitmap in front.
                            let validity_bytes = if *has_validity { dim.div_ceil(8) } else { 0 };
                            if b.checked_mul(*dim).and_then(|x| x.checked_add(validity_bytes * 8)) != Some(bits) {
                                return Err(Error::corrupt(format!(
                                    "full-zip values of {bits} bits cannot hold {dim} items of {b} bits"
                                )));
                            }
                            (Some(*dim), *b, validity_bytes)
                        }
                        // Every item null (pylance writes this when a page's items all are):
                        // each value is its items' validity bitmap alone; the items decode
                        // as nulls of the column's width (`item_bits` 0).
                        Compression::Constant { value: None } if *has_validity && dim.div_ceil(8) * 8 == bits => {
                            (Some(*dim), 0, dim.div_ceil(8))
                        }
                        _ => return Err(Error::not_supported(format!("full-zip value encoding {}", comp.describe()))),
                    },
                    _ => return Err(Error::not_supported(format!("full-zip value encoding {}", comp.describe()))),
                };
                let null_items = dim.is_some() && item_bits == 0 && validity_bytes > 0;
                if bits == 0 || bits % 8 != 0 || (item_bits == 0 && !null_items) || item_bits % 8 != 0 {
                    return Err(Error::not_supported(format!("full-zip values of {bits} bits with {item_bits}-bit items")));
                }
                ValueKind::Fixed { bits, dim, item_bits, validity_bytes }
            }
            Some(enc21::full_zip_layout::Details::BitsPerOffset(bits)) => {
                if !matches!(bits, 8 | 16 | 32 | 64) {
                    return Err(Error::corrupt(format!("full-zip lengths of {bits} bits")));
                }
                let per_value = match &comp {
                    // Rows of a variable packed struct are stored raw; the reader checks
                    // the children's layout against the schema.
                    Compression::Variable { .. } => PerValue::None,
                    Compression::VariablePackedStruct { fields, codecs } => {
                        if codecs.iter().zip(fields).all(|(c, f)| c.describe() == f.raw_codec().describe()) {
                            PerValue::None
                        } else {
                            PerValue::PackedChildren(fields.clone(), codecs.clone())
                        }
                    }
                    Compression::Fsst { table, .. } => PerValue::Fsst(table.clone()),
                    Compression::General { scheme, values } if matches!(values.as_ref(), Compression::Variable { .. }) => {
                        PerValue::General(*scheme)
                    }
                    other => return Err(Error::not_supported(format!("full-zip value encoding {}", other.describe()))),
                };
                let packed = match &comp {
                    Compression::VariablePackedStruct { fields, .. } => Some(fields.clone()),
                    _ => None,
                };
                ValueKind::Variable { offset_bits: bits as u64, per_value, packed }
            }
            None => return Err(Error::corrupt("full-zip page without bits_per_value or bits_per_offset")),
        };
        let layout = Self {
            bits_rep: pb.bits_rep,
            bits_def: pb.bits_def,
            kind,
            num_items: pb.num_items as u64,
            num_visible_items: pb.num_visible_items as u64,
            layers,
        };
        if layout.bits_rep != bits_for(max_rep(&layout.layers)) || layout.bits_def != bits_for(max_def(&layout.layers)) {
            return Err(Error::corrupt("full-zip control-word widths do not match the page's layers"));
        }
        Ok(layout)
    }

    /// Whether buffer 1 (the repetition index) exists.
    pub fn has_rep_index(&self) -> bool {
        self.bits_rep > 0 || matches!(self.kind, ValueKind::Variable { .. })
    }

    /// Bytes per row when rows have a fixed size (fixed width, no repetition).
    pub fn fixed_stride(&self) -> Option<u64> {
        match self.kind {
            ValueKind::Fixed { bits, .. } if self.bits_rep == 0 => {
                Some(ctrl_bytes(self.bits_rep + self.bits_def) as u64 + bits / 8)
            }
            _ => None,
        }
    }
}

/// A parsed repetition index: `rows + 1` byte offsets.
#[derive(Debug, Clone)]
pub struct RepIndex {
    data: Buffer,
    width: usize,
    rows: u64,
}

impl RepIndex {
    /// Parses the index of a page with `rows` rows over a data buffer of `data_len` bytes.
    pub fn parse(data: Buffer, rows: u64, data_len: u64) -> Result<Self> {
        let entries = rows + 1;
        let width = (data.len() as u64 / entries) as usize;
        if !matches!(width, 1 | 2 | 4 | 8) || width as u64 * entries != data.len() as u64 {
            return Err(Error::corrupt(format!(
                "full-zip repetition index of {} bytes does not fit {entries} entries",
                data.len()
            )));
        }
        let idx = Self { data, width, rows };
        let mut prev = 0;
        for r in 0..=rows {
            let o = idx.offset(r);
            if o < prev || o > data_len {
                return Err(Error::corrupt("full-zip repetition index is not increasing or overruns the page"));
            }
            prev = o;
        }
        Ok(idx)
    }

    /// Byte offset where `row` starts (`row == rows` gives the end).
    #[inline]
    pub fn offset(&self, row: u64) -> u64 {
        read_uint(self.data.as_slice(), row as usize * self.width, self.width)
    }

    /// Number of rows.
    pub fn rows(&self) -> u64 {
        self.rows
    }
}

/// [`decode_levels`] of one row of a column without lists whose values are stored raw: a
/// valid value is sliced from `buf` (no copy; images and documents are large). `None` when
/// the row is not such a value.
pub fn decode_one_raw(layout: &FullZipLayout, buf: &Buffer) -> Result<Option<DecodedChunk>> {
    let ValueKind::Variable { offset_bits, per_value: PerValue::None, .. } = &layout.kind else {
        return Ok(None);
    };
    if layout.bits_rep > 0 {
        return Ok(None);
    }
    let b = buf.as_slice();
    let ctrl = ctrl_bytes(layout.bits_def);
    if b.len() < ctrl || (ctrl > 0 && read_uint(b, 0, ctrl) != 0) {
        return Ok(None); // a null value (or a short buffer, which the general path reports)
    }
    let len_width = (*offset_bits / 8) as usize;
    let Some(l) = b.get(ctrl..ctrl + len_width) else { return Ok(None) };
    let len = read_uint(l, 0, len_width) as usize;
    let start = ctrl + len_width;
    if start.checked_add(len) != Some(b.len()) {
        return Ok(None);
    }
    let values = DataBlock::Variable(VariableWidthBlock {
        offsets: Buffer::from_vec(vec![0u64, len as u64]),
        data: buf.slice_with_length(start, len),
        bits_per_offset: 64,
        num_values: 1,
    });
    let def = (layout.bits_def > 0).then(|| vec![0u16]);
    Ok(Some(DecodedChunk::full(None, def, values)))
}

/// Decodes the zipped bytes of consecutive levels (whole rows): `num_levels` of them, or all
/// the levels in `bytes` when `None`.
pub fn decode_levels(layout: &FullZipLayout, bytes: &[u8], num_levels: Option<u64>) -> Result<DecodedChunk> {
    let ctrl = ctrl_bytes(layout.bits_rep + layout.bits_def);
    let def_mask = (1u64 << layout.bits_def) - 1;
    let visible_limit = max_visible_def(&layout.layers);
    let max_d = max_def(&layout.layers);
    let n = num_levels.map(|n| n as usize).unwrap_or(usize::MAX);
    let cap = num_levels.map(|n| n as usize).unwrap_or(0);
    let mut rep = (layout.bits_rep > 0).then(|| Vec::with_capacity(cap));
    let mut def = (layout.bits_def > 0).then(|| Vec::with_capacity(cap));
    let mut pos = 0usize;
    let truncated = || Error::corrupt("full-zip data ends in the middle of a value");
    let read_ctrl = |pos: &mut usize| -> Result<(u16, u16)> {
        if ctrl == 0 {
            return Ok((0, 0));
        }
        let w = bytes.get(*pos..*pos + ctrl).ok_or_else(truncated)?;
        *pos += ctrl;
        let word = read_uint(w, 0, ctrl);
        let d = (word & def_mask) as u16;
        let r = (word >> layout.bits_def) as u16;
        if d > max_d {
            return Err(Error::corrupt(format!("full-zip definition level {d} above the maximum {max_d}")));
        }
        Ok((r, d))
    };
    // Fixed width: value bytes; variable width: offsets and bytes.
    let fixed_width = match &layout.kind {
        ValueKind::Fixed { bits, .. } => Some((*bits / 8) as usize),
        ValueKind::Variable { .. } => None,
    };
    let validity_bytes = match &layout.kind {
        ValueKind::Fixed { validity_bytes, .. } => *validity_bytes as usize,
        ValueKind::Variable { .. } => 0,
    };
    let dim_items = match &layout.kind {
        ValueKind::Fixed { dim: Some(d), .. } => *d as usize,
        _ => 0,
    };
    let mut fixed_out = MutableBuffer::new(cap * fixed_width.unwrap_or(0));
    let mut item_validity = (validity_bytes > 0).then(|| arrow_buffer::BooleanBufferBuilder::new(cap * dim_items));
    let mut offsets: Vec<u64> = Vec::with_capacity(if fixed_width.is_some() { 0 } else { cap + 1 });
    offsets.push(0);
    let mut data = Vec::new();
    let mut visible = 0u64;
    let mut count = 0usize;
    while count < n && (num_levels.is_some() || pos < bytes.len()) {
        count += 1;
        let (r, d) = read_ctrl(&mut pos)?;
        if let Some(v) = rep.as_mut() {
            v.push(r)
        }
        if let Some(v) = def.as_mut() {
            v.push(d)
        }
        if d > visible_limit {
            continue;
        }
        visible += 1;
        match (&layout.kind, fixed_width) {
            (_, Some(width)) => {
                let v = bytes.get(pos..pos + width).ok_or_else(truncated)?;
                match item_validity.as_mut() {
                    Some(bits) => {
                        bits.append_packed_range(0..dim_items, &v[..validity_bytes]);
                        fixed_out.extend_from_slice(&v[validity_bytes..]);
                    }
                    None => fixed_out.extend_from_slice(v),
                }
                pos += width;
            }
            (ValueKind::Variable { offset_bits, per_value, .. }, None) => {
                if d == 0 {
                    let len_width = (*offset_bits / 8) as usize;
                    let l = bytes.get(pos..pos + len_width).ok_or_else(truncated)?;
                    let len = read_uint(l, 0, len_width) as usize;
                    pos += len_width;
                    let v = bytes.get(pos..pos.checked_add(len).ok_or_else(truncated)?).ok_or_else(truncated)?;
                    pos += len;
                    match per_value {
                        PerValue::None => data.extend_from_slice(v),
                        PerValue::Fsst(t) => crate::encodings::fsst::decompress_value(t, v, &mut data)?,
                        PerValue::General(s) => data.extend_from_slice(&s.decompress(v)?),
                        PerValue::PackedChildren(fields, codecs) => unpack_packed_row(v, fields, codecs, &mut data)?,
                    }
                }
                offsets.push(data.len() as u64);
            }
            (ValueKind::Fixed { .. }, None) => unreachable!("fixed layouts have a width"),
        }
    }
    let values = match &layout.kind {
        ValueKind::Fixed { dim: Some(dim), item_bits, .. } => DataBlock::FixedSizeList(FixedSizeListBlock {
            child: Box::new(match item_bits {
                0 => DataBlock::Empty { num_values: visible * dim }, // (every item null)
                _ => DataBlock::Fixed(FixedWidthBlock {
                    data: fixed_out.into(),
                    bits_per_value: *item_bits,
                    num_values: visible * dim,
                }),
            }),
            dimension: *dim,
            item_validity: item_validity.map(|mut b| b.finish().into_inner()),
        }),
        ValueKind::Fixed { bits, dim: None, .. } => {
            DataBlock::Fixed(FixedWidthBlock { data: fixed_out.into(), bits_per_value: *bits, num_values: visible })
        }
        ValueKind::Variable { .. } => DataBlock::Variable(VariableWidthBlock::from_u64(offsets, data)),
    };
    Ok(DecodedChunk::full(rep, def, values))
}

/// Appends one row of a variable packed struct to `out` with its variable children's bytes
/// decompressed (fixed children and length prefixes are rewritten as they are).
fn unpack_packed_row(
    row: &[u8],
    fields: &[crate::encodings::PackedField],
    codecs: &[Compression],
    out: &mut Vec<u8>,
) -> Result<()> {
    use crate::encodings::PackedField;
    let bad = || Error::corrupt("a packed struct row does not hold its children");
    let mut at = 0usize;
    let mut scratch = Vec::new();
    for (f, c) in fields.iter().zip(codecs) {
        match f {
            PackedField::Fixed { bits } => {
                let w = (*bits / 8) as usize;
                out.extend_from_slice(row.get(at..at + w).ok_or_else(bad)?);
                at += w;
            }
            PackedField::Variable { length_bits } => {
                let lw = (*length_bits / 8) as usize;
                let n = read_uint(row.get(at..at + lw).ok_or_else(bad)?, 0, lw) as usize;
                at += lw;
                let v = row.get(at..at.checked_add(n).ok_or_else(bad)?).ok_or_else(bad)?;
                at += n;
                scratch.clear();
                let plain: &[u8] = match c {
                    Compression::Fsst { table, .. } => {
                        crate::encodings::fsst::decompress_value(table, v, &mut scratch)?;
                        &scratch
                    }
                    Compression::General { scheme, .. } => {
                        scratch = scheme.decompress(v)?;
                        &scratch
                    }
                    _ => v,
                };
                out.extend_from_slice(&(plain.len() as u64).to_le_bytes()[..lw]);
                out.extend_from_slice(plain);
            }
        }
    }
    if at != row.len() {
        return Err(bad());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Writing (columns without repetition)
// ---------------------------------------------------------------------------------------

/// Encoded full-zip page: buffers and layout.
pub struct EncodedFullZip {
    /// Page buffers (data, and the repetition index when present).
    pub buffers: Vec<Vec<u8>>,
    /// The page layout message.
    pub layout: enc21::PageLayout,
}

/// Encodes a page. `rep`/`def` (page numbering) have one entry per level (`None` = one
/// level per value with no lists / all valid); `values` holds one value per visible level
/// (null items hold zeros / empty values).
pub fn encode(
    values: &DataBlock,
    rep: Option<&[u16]>,
    def: Option<&[u16]>,
    max_rep: u16,
    layers: &[Layer],
    per_value: &PerValueEncoder,
) -> Result<EncodedFullZip> {
    let num_values = values.num_values() as usize;
    let num_levels = rep.map(|r| r.len()).or(def.map(|d| d.len())).unwrap_or(num_values);
    let bits_def = bits_for(max_def(layers));
    let bits_rep = bits_for(max_rep);
    let ctrl = ctrl_bytes(bits_rep + bits_def);
    let visible_limit = max_visible_def(layers);
    let mut data = Vec::new();
    // Fixed-width bytes (and their width), or a variable-width block. Fixed-size lists with
    // item validity store a byte-padded bitmap of their items in front of each value.
    let mut fsl_validity: Option<(&[u8], usize)> = None;
    let (fixed, details, value_compression): (Option<(&[u8], usize)>, _, Compression) = match values {
        DataBlock::Fixed(f) if f.bits_per_value % 8 == 0 => (
            Some((f.data.as_slice(), (f.bits_per_value / 8) as usize)),
            enc21::full_zip_layout::Details::BitsPerValue(f.bits_per_value as u32),
            Compression::Flat { bits: f.bits_per_value, data: None },
        ),
        DataBlock::FixedSizeList(l) => match l.child.as_ref() {
            DataBlock::Fixed(f) if f.bits_per_value % 8 == 0 => {
                let dim = l.dimension as usize;
                let validity_bytes = if l.item_validity.is_some() { dim.div_ceil(8) } else { 0 };
                if let Some(v) = &l.item_validity {
                    fsl_validity = Some((v.as_slice(), dim));
                }
                let items_bytes = (f.bits_per_value / 8) as usize * dim;
                let bits = (items_bytes + validity_bytes) as u64 * 8;
                (
                    Some((f.data.as_slice(), items_bytes)),
                    enc21::full_zip_layout::Details::BitsPerValue(
                        u32::try_from(bits).map_err(|_| Error::invalid_input("a fixed-size list value exceeds 512 MiB"))?,
                    ),
                    Compression::FixedSizeList {
                        dim: l.dimension,
                        has_validity: l.item_validity.is_some(),
                        values: Box::new(Compression::Flat { bits: f.bits_per_value, data: None }),
                    },
                )
            }
            _ => return Err(Error::not_supported("full-zip of fixed-size lists of non-byte-aligned items")),
        },
        DataBlock::Variable(vb) => (
            None,
            enc21::full_zip_layout::Details::BitsPerOffset(vb.bits_per_offset as u32),
            per_value.description(vb.bits_per_offset),
        ),
        other => return Err(Error::internal(format!("full-zip of a {} block", other.kind()))),
    };
    let length_bytes = match values {
        DataBlock::Variable(vb) => (vb.bits_per_offset / 8) as usize,
        _ => 0,
    };
    let needs_index = rep.is_some() || fixed.is_none();
    let mut row_offsets: Vec<u64> = Vec::new();
    let mut scratch = Vec::new();
    let mut v = 0usize;
    for p in 0..num_levels {
        let r = rep.map(|r| r[p]).unwrap_or(max_rep);
        let d = def.map(|d| d[p]).unwrap_or(0);
        if needs_index && r == max_rep {
            row_offsets.push(data.len() as u64);
        }
        if ctrl > 0 {
            let word = ((r as u32) << bits_def) | d as u32;
            data.extend_from_slice(&word.to_le_bytes()[..ctrl]);
        }
        if d > visible_limit {
            continue;
        }
        if v >= num_values {
            return Err(Error::internal("more visible levels than values"));
        }
        match (fixed, values) {
            (Some((bytes, w)), _) => {
                if let Some((bits, dim)) = fsl_validity {
                    let start = data.len();
                    data.resize(start + dim.div_ceil(8), 0);
                    for k in 0..dim {
                        if arrow_buffer::bit_util::get_bit(bits, v * dim + k) {
                            arrow_buffer::bit_util::set_bit(&mut data[start..], k);
                        }
                    }
                }
                data.extend_from_slice(&bytes[v * w..(v + 1) * w]);
            }
            (None, DataBlock::Variable(vb)) if d == 0 => {
                scratch.clear();
                let value = per_value.encode(vb.value(v), &mut scratch)?;
                data.extend_from_slice(&(value.len() as u64).to_le_bytes()[..length_bytes]);
                if length_bytes == 4 && value.len() > u32::MAX as usize {
                    return Err(Error::invalid_input("a value exceeds 4 GiB; use large_string / large_binary"));
                }
                data.extend_from_slice(value);
            }
            _ => {}
        }
        v += 1;
    }
    if v != num_values {
        return Err(Error::internal(format!("{v} visible levels for {num_values} values")));
    }
    let rep_index = needs_index.then(|| {
        row_offsets.push(data.len() as u64);
        let total = data.len() as u64;
        let width = if total <= u8::MAX as u64 {
            1
        } else if total <= u16::MAX as u64 {
            2
        } else if total <= u32::MAX as u64 {
            4
        } else {
            8
        };
        let mut idx = Vec::with_capacity(row_offsets.len() * width);
        for o in &row_offsets {
            idx.extend_from_slice(&o.to_le_bytes()[..width]);
        }
        idx
    });
    let layout = enc21::PageLayout {
        layout: Some(enc21::page_layout::Layout::FullZipLayout(enc21::FullZipLayout {
            bits_rep,
            bits_def,
            details: Some(details),
            num_items: u32::try_from(num_levels)
                .map_err(|_| Error::invalid_input("a full-zip page with more than 2^32 levels"))?,
            num_visible_items: num_values as u32,
            value_compression: Some(value_compression.to_pb()),
            layers: layers.iter().map(|l| l.to_pb()).collect(),
        })),
    };
    let mut buffers = vec![data];
    buffers.extend(rep_index);
    Ok(EncodedFullZip { buffers, layout })
}

/// How the writer compresses each variable-width full-zip value.
pub enum PerValueEncoder {
    /// Raw bytes.
    None,
    /// FSST with a page symbol table.
    Fsst(Arc<SymbolTable>),
    /// LZ4/zstd per value.
    General(GeneralScheme),
    /// Raw rows of a variable packed struct with these children.
    Packed(Vec<crate::encodings::PackedField>),
}

impl PerValueEncoder {
    fn encode<'a>(&self, v: &'a [u8], scratch: &'a mut Vec<u8>) -> Result<&'a [u8]> {
        match self {
            PerValueEncoder::None | PerValueEncoder::Packed(_) => Ok(v),
            PerValueEncoder::Fsst(t) => {
                t.compress_into(v, scratch);
                Ok(scratch)
            }
            PerValueEncoder::General(s) => {
                s.compress_into(v, scratch)?;
                Ok(scratch)
            }
        }
    }

    fn description(&self, offset_bits: u8) -> Compression {
        let variable = Compression::Variable { offset_bits, values: None };
        match self {
            PerValueEncoder::None => variable,
            PerValueEncoder::Fsst(t) => Compression::Fsst { table: t.clone(), values: Box::new(variable) },
            PerValueEncoder::General(s) => Compression::General { scheme: *s, values: Box::new(variable) },
            PerValueEncoder::Packed(fields) => Compression::VariablePackedStruct {
                fields: fields.clone(),
                codecs: fields.iter().map(|f| f.raw_codec()).collect(),
            },
        }
    }
}

/// A full-zip page's metadata: its repetition index, if it has one.
#[derive(Debug)]
pub struct FullZipState {
    /// Byte offsets of the rows (variable-width values or lists).
    pub rep_index: Option<RepIndex>,
}

impl FullZipLayout {
    /// Byte ranges (relative to the page's data buffer) of runs of rows.
    fn run_bytes(&self, page: &PageInfo, state: &FullZipState, runs: &[Range<u64>]) -> Result<Vec<Range<u64>>> {
        let ranges = runs
            .iter()
            .map(|run| match (self.fixed_stride(), &state.rep_index) {
                (Some(stride), _) => Ok(run.start * stride..run.end * stride),
                (None, Some(idx)) => Ok(idx.offset(run.start)..idx.offset(run.end)),
                (None, None) => Err(Error::corrupt("variable full-zip page without a repetition index")),
            })
            .collect::<Result<Vec<_>>>()?;
        if ranges.iter().any(|r| r.end > page.buffers[0].1) {
            return Err(Error::corrupt("full-zip rows lie beyond the page's data buffer"));
        }
        Ok(ranges)
    }

    /// The rows of a page with lists, found through its repetition index.
    fn nested_index<'s>(&self, state: &'s FullZipState) -> Result<&'s RepIndex> {
        state.rep_index.as_ref().ok_or_else(|| Error::not_supported("a full-zip page of lists without a repetition index"))
    }
}

impl PageLayout for FullZipLayout {
    type State = FullZipState;

    fn layers(&self) -> &[Layer] {
        &self.layers
    }

    fn state_buffers(&self, _page: &PageInfo) -> Vec<usize> {
        if self.has_rep_index() {
            vec![1]
        } else {
            vec![]
        }
    }

    fn load_state(&self, page: &PageInfo, buffers: Vec<Buffer>, _kind: &LeafKind) -> Result<FullZipState> {
        if page.buffers.is_empty() || (self.has_rep_index() && page.buffers.len() < 2) {
            return Err(Error::corrupt("full-zip page is missing buffers"));
        }
        if self.bits_rep == 0 && self.num_items != page.num_rows {
            return Err(Error::corrupt(format!("full-zip page has {} levels for {} rows", self.num_items, page.num_rows)));
        }
        let rep_index = if self.has_rep_index() {
            let buf = buffers.into_iter().next().ok_or_else(|| Error::Internal("full-zip index not fetched".into()))?;
            Some(RepIndex::parse(buf, page.num_rows, page.buffers[0].1)?)
        } else {
            let stride = self.fixed_stride().ok_or_else(|| Error::corrupt("variable full-zip page without an index"))?;
            if stride.checked_mul(page.num_rows).is_none_or(|n| n > page.buffers[0].1) {
                return Err(Error::corrupt("full-zip page data is shorter than its rows"));
            }
            None
        };
        Ok(FullZipState { rep_index })
    }

    fn plan(
        &self,
        page: &PageInfo,
        state: &FullZipState,
        req: &PageRequest,
        round: usize,
        _fetched: &[Buffer],
    ) -> Result<Option<Vec<Range<u64>>>> {
        if round > 0 {
            return Ok(None);
        }
        let data_pos = page.buffers[0].0;
        let runs = req.rows.to_runs();
        let bytes = if req.nested {
            let idx = self.nested_index(state)?;
            runs.iter().map(|r| idx.offset(r.start)..idx.offset(r.end)).collect()
        } else {
            self.run_bytes(page, state, &runs)?
        };
        Ok(Some(bytes.into_iter().map(|b| data_pos + b.start..data_pos + b.end).collect()))
    }

    fn decode(
        &self,
        _page: &PageInfo,
        state: &FullZipState,
        req: &PageRequest,
        fetched: &[Buffer],
        out: &mut LeafBuilder,
    ) -> Result<()> {
        let runs = req.rows.to_runs();
        check_fetched(fetched.len(), runs.len())?;
        if req.nested {
            self.nested_index(state)?;
            let visible_limit = max_visible_def(&self.layers);
            for (rows, b) in runs.iter().zip(fetched) {
                crate::interrupt::check()?;
                let mut piece = PieceCursor::new(decode_levels(self, b.as_slice(), None)?, req.path.max_rep, visible_limit)?;
                piece.append_rows(out, rows.start, rows, &req.table, false)?;
            }
            return Ok(());
        }
        for (run, b) in runs.iter().zip(fetched) {
            crate::interrupt::check()?;
            let one = if run.end - run.start == 1 { decode_one_raw(self, b)? } else { None };
            let decoded = match one {
                Some(d) => d,
                None => decode_levels(self, b.as_slice(), Some(run.end - run.start))?,
            };
            append_decoded(out, &decoded, &req.table, Selection::All)?;
        }
        Ok(())
    }

    fn num_levels(&self, _page: &PageInfo) -> u64 {
        self.num_items
    }

    fn value_bytes(&self, page: &PageInfo, state: &FullZipState, rows: &PageRows) -> u64 {
        let Some(idx) = &state.rep_index else { return 0 };
        let span = |r: Range<u64>| {
            if r.start <= r.end && r.end <= idx.rows() {
                idx.offset(r.end).saturating_sub(idx.offset(r.start))
            } else {
                0
            }
        };
        match rows {
            PageRows::Range(r) => span(r.clone()),
            PageRows::Rows(v) => v.iter().map(|&r| span(r..r + 1)).sum(),
            PageRows::Ranges(v) => v.iter().map(|r| span(r.clone())).sum(),
        }
        .min(page.buffers.first().map(|b| b.1).unwrap_or(0) * 2)
    }
}
