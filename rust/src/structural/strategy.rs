//! Choosing a page's layout and encodings from its data (2.1 / 2.2), and producing the
//! page's buffers.
//!
//! The rules, in order:
//! 1. every value null → constant (all-null) page with no buffers;
//! 2. 2.2, no nulls, one distinct value → constant page (inline value ≤ 32 bytes, else an
//!    out-of-line value buffer);
//! 3. values of ≥ 256 bytes (or `lance-encoding:structural-encoding = fullzip`) → full-zip,
//!    compressing each value with FSST when it helps, or zstd when values exceed 32 KiB and
//!    compress;
//! 4. otherwise mini-block with the smallest of: flat, FastLanes bit-packing, RLE, a
//!    dictionary (low cardinality), FSST (strings ≥ 32 KiB in total, some ≥ 5 bytes);
//!    `lance-encoding:compression = zstd|lz4` wraps values in general compression and
//!    `= none` keeps them plain.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::{bit_util, Buffer, NullBuffer};
use arrow_schema::DataType;
use prost::Message;

use super::fullzip::{self, PerValueEncoder};
use super::miniblock::{self, ValueChunk};
use super::page::{block_from_array, EncodedPage};
use super::repdef::{bits_for, canonical_to_page, max_def, max_visible_def, Layer, LeafPath};
use super::shred::ShreddedLeaf;
use super::LeafKind;
use crate::encodings::{
    bitpacking, bss, dictionary, fsst, rle, variable, Compression, DataBlock, FixedSizeListBlock, FixedWidthBlock, GeneralScheme,
    VariableWidthBlock,
};
use crate::error::{Error, Result};
use crate::format::FileVersion;
use crate::format::{enc21, TYPE_URL_PAGE_LAYOUT};
use crate::schema::{FieldHints, LanceField, Structural};

/// Values at least this large go to full-zip pages.
pub const FULLZIP_MIN_VALUE_BYTES: u64 = 256;
/// Full-zip values larger than this are compressed one by one with zstd (if it helps).
pub const PER_VALUE_ZSTD_MIN_BYTES: u64 = 32 * 1024;
/// Target size of a mini-block chunk's values.
const CHUNK_TARGET_BYTES: usize = 4096;
/// Most values in one mini-block chunk.
const MAX_CHUNK_VALUES: usize = 4096;

/// Encodes one page of a flat column (2.0: one column per field; 2.1+: a leaf with no
/// structure above it).
pub fn encode_page(array: &ArrayRef, field: &LanceField, version: FileVersion) -> Result<EncodedPage> {
    if !version.is_structural() {
        return crate::structural::v2_0::encode_page(array, field);
    }
    let nulls = array.logical_nulls();
    let def = nulls
        .as_ref()
        .filter(|nb| nb.null_count() > 0)
        .map(|nb| nb.iter().map(|v| if v { 0u16 } else { 1 }).collect::<Vec<u16>>());
    let leaf = ShreddedLeaf { path: LeafPath::flat(), rep: None, def, values: array.clone(), num_rows: array.len() };
    encode_leaf_page(&leaf, field, version, None)
}

/// Encodes one page of a leaf column (2.1+): its levels and the values of its visible items.
/// `layers` fixes the page's rep/def layers (they must admit every level of the page); by
/// default they are derived from the page's own levels.
pub fn encode_leaf_page(
    leaf: &ShreddedLeaf,
    field: &LanceField,
    version: FileVersion,
    layers: Option<&[Layer]>,
) -> Result<EncodedPage> {
    let hints = FieldHints::of(field)?;
    // Pages below a fixed-size list of structs count its items (as pylance writes them).
    let n = leaf.num_rows as u64 * leaf.path.row_scale();
    // Arrow dictionaries keep their dictionary (pylance reads such columns only from
    // dictionary pages whose indices have the key's width); everything else is plain.
    let arrow_dictionary = matches!(leaf.values.data_type(), DataType::Dictionary(_, _));
    let array = if arrow_dictionary { leaf.values.clone() } else { materialize_dictionary(&leaf.values)? };
    let kind = LeafKind::of_field(field)?;
    let nulls = array.logical_nulls();
    let null_count = nulls.as_ref().map(|n| n.null_count()).unwrap_or(0);
    let layout_page = |layout: enc21::PageLayout, buffers: Vec<Buffer>| EncodedPage {
        buffers,
        type_url: TYPE_URL_PAGE_LAYOUT.to_string(),
        encoding: layout.encode_to_vec(),
        num_rows: n,
    };
    let path = &leaf.path;
    let flat = path.kinds.len() == 1;

    if matches!(field.data_type, DataType::Struct(ref c) if c.is_empty()) {
        // A struct without children: one constant page of nothing, every row valid (as
        // pylance writes it, and it refuses the same cases).
        if !flat {
            return Err(Error::not_supported(format!(
                "field {:?}: a struct without children inside another struct or a list (top-level ones are written)",
                field.name
            )));
        }
        if null_count > 0 {
            return Err(Error::not_supported(format!(
                "field {:?}: null rows of a struct without children (such a column has no way to store them)",
                field.name
            )));
        }
    }
    // 1. A flat column whose values are all null.
    if flat && !arrow_dictionary && (null_count == array.len() || kind == LeafKind::Null) {
        let layout = enc21::PageLayout {
            layout: Some(enc21::page_layout::Layout::ConstantLayout(enc21::ConstantLayout {
                layers: vec![Layer::NullableItem.to_pb()],
                ..Default::default()
            })),
        };
        return Ok(layout_page(layout, vec![]));
    }
    let layers = match layers {
        Some(l) => l.to_vec(),
        None => path.page_layers(leaf.def.as_deref()),
    };
    // Whenever the layers can express a null or empty, the page carries def levels (all 0
    // if there are none): pylance's reader misreads nested pages with nullable layers and
    // no def levels.
    let has_def_layers = layers.iter().any(|l| l.def_levels() > 0);
    let def = match &leaf.def {
        Some(d) if has_def_layers => {
            let to_page = canonical_to_page(path, &layers)?;
            let mut page = Vec::with_capacity(d.len());
            for &l in d {
                match to_page.get(l as usize) {
                    Some(&p) if p != u16::MAX => page.push(p),
                    _ => return Err(Error::internal("a level the page's layers cannot express")),
                }
            }
            Some(page)
        }
        None if has_def_layers && !flat => {
            let levels = leaf.rep.as_ref().map(|r| r.len()).unwrap_or(leaf.values.len());
            Some(vec![0u16; levels])
        }
        _ => None,
    };
    let rep = leaf.rep.as_deref();

    let large_chunk = version >= FileVersion::V2_2;
    if arrow_dictionary {
        let plan = arrow_dictionary_plan(&array, nulls.as_ref(), version)?;
        let (layout, buffers) = miniblock_page(plan, array.len() as u64, rep, def.as_deref(), &layers, path, large_chunk)?;
        return Ok(layout_page(layout, buffers));
    }

    // 2. Nothing visible (e.g. only empty or null lists): a constant page of levels.
    if array.is_empty() || kind == LeafKind::Null {
        let raw = |l: &[u16]| -> Buffer { Buffer::from_vec(l.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()) };
        let layout = enc21::PageLayout {
            layout: Some(enc21::page_layout::Layout::ConstantLayout(enc21::ConstantLayout {
                layers: layers.iter().map(|l| l.to_pb()).collect(),
                // Raw u16 levels: the counts stay 0 (implied by the buffer sizes), as pylance
                // writes them; its reader misreads raw levels that come with counts.
                ..Default::default()
            })),
        };
        let buffers = vec![
            rep.map(raw).unwrap_or_else(|| Buffer::from_vec(Vec::<u8>::new())),
            def.as_deref().map(raw).unwrap_or_else(|| Buffer::from_vec(Vec::<u8>::new())),
        ];
        return Ok(layout_page(layout, buffers));
    }
    let values = block_from_array(&array, &kind, nulls.as_ref())?;

    let packed = matches!(kind, LeafKind::Packed { .. } | LeafKind::VarPacked { .. });
    if let LeafKind::VarPacked { fields } = &kind {
        // Rows of children with variable width: full-zip (2.2 only, as in pylance).
        if version < FileVersion::V2_2 {
            return Err(Error::invalid_input(format!(
                "packed structs with variable-width children need file version 2.2 or later (this file is {version})"
            )));
        }
        let per_value = PerValueEncoder::Packed(fields.clone());
        let enc = fullzip::encode(&values, rep, def.as_deref(), path.max_rep, &layers, &per_value)?;
        return Ok(layout_page(enc.layout, enc.buffers.into_iter().map(Buffer::from_vec).collect()));
    }
    // 3. Constant (2.2, flat, no nulls).
    if version >= FileVersion::V2_2 && flat && !packed && def.is_none() && hints.structural.is_none() {
        if let Some((layout, buffers)) = constant_layout(&values, &kind)? {
            return Ok(layout_page(layout, buffers));
        }
    }

    // 4. Full-zip for wide values.
    let wide = match &values {
        DataBlock::Variable(v) => (0..v.num_values as usize).any(|i| v.offset(i + 1) - v.offset(i) >= FULLZIP_MIN_VALUE_BYTES),
        _ => kind.bits().is_some_and(|b| b / 8 >= FULLZIP_MIN_VALUE_BYTES),
    };
    let bool_items = matches!(&kind, LeafKind::Bool) || matches!(&kind, LeafKind::Fsl { item, .. } if **item == LeafKind::Bool);
    let use_fullzip = !packed
        && !bool_items
        && match hints.structural {
            Some(Structural::FullZip) => true,
            Some(Structural::MiniBlock) => false,
            None => wide,
        };
    if use_fullzip {
        let per_value = choose_per_value(&values, &hints)?;
        let enc = fullzip::encode(&values, rep, def.as_deref(), path.max_rep, &layers, &per_value)?;
        return Ok(layout_page(enc.layout, enc.buffers.into_iter().map(Buffer::from_vec).collect()));
    }

    // 5. Mini-block.
    let is_float = matches!(array.data_type(), DataType::Float16 | DataType::Float32 | DataType::Float64);
    let plan = match (&kind, &values) {
        (LeafKind::Packed { widths }, DataBlock::Fixed(f)) => {
            let plain = plain_fixed(f);
            MiniBlockPlan {
                compression: Compression::PackedStruct {
                    bits: widths.iter().map(|w| *w as u64 * 8).collect(),
                    values: Box::new(plain.compression),
                },
                chunks: plain.chunks,
                dictionary: None,
            }
        }
        _ => choose_miniblock(&values, &kind, is_float, &hints, version)?,
    };
    let (layout, buffers) = miniblock_page(plan, values.num_values(), rep, def.as_deref(), &layers, path, large_chunk)?;
    Ok(layout_page(layout, buffers))
}

/// Serialises a mini-block page: chunks with their levels, metadata, dictionary and
/// repetition index.
fn miniblock_page(
    plan: MiniBlockPlan,
    num_items: u64,
    rep: Option<&[u16]>,
    def: Option<&[u16]>,
    layers: &[Layer],
    path: &LeafPath,
    large_chunk: bool,
) -> Result<(enc21::PageLayout, Vec<Buffer>)> {
    // Levels are bit-packed out of line at the width of the largest level (pylance's choice;
    // its inline form is limited to 1024 levels per chunk).
    let level_comp = |max: u16| Compression::OutOfLineBitpacking { bits: 16, width: bits_for(max).max(1) as u64 };
    let def_comp = def.map(|_| level_comp(max_def(layers)));
    let rep_comp = rep.map(|_| level_comp(path.max_rep));
    let levels = miniblock::ChunkLevels {
        rep,
        def,
        max_rep: path.max_rep,
        visible_limit: max_visible_def(layers),
        rep_width: rep_comp.as_ref().map(|_| bits_for(path.max_rep).max(1) as u64).unwrap_or(0),
        def_width: def_comp.as_ref().map(|_| bits_for(max_def(layers)).max(1) as u64).unwrap_or(0),
    };
    let serialized = miniblock::serialize_chunks(&plan.chunks, &levels, large_chunk)?;
    let dictionary = plan.dictionary.as_ref().map(|(c, _, n)| (c, *n));
    let layout = miniblock::layout_pb(&miniblock::LayoutParts {
        values: &plan.compression,
        rep: rep_comp.as_ref(),
        def: def_comp.as_ref(),
        dictionary,
        layers,
        num_items,
        large_chunk,
        has_rep_index: rep.is_some(),
    });
    let mut buffers = vec![Buffer::from_vec(serialized.metadata), Buffer::from_vec(serialized.data)];
    if let Some((_, bytes, _)) = plan.dictionary {
        buffers.push(Buffer::from_vec(bytes));
    }
    if let Some(idx) = serialized.rep_index {
        buffers.push(Buffer::from_vec(idx));
    }
    Ok((layout, buffers))
}

/// A dictionary page for an Arrow dictionary array: its own dictionary, and indices of the
/// key type's width (flat or bit-packed, whichever is smaller).
fn arrow_dictionary_plan(array: &ArrayRef, nulls: Option<&NullBuffer>, version: FileVersion) -> Result<MiniBlockPlan> {
    let dict = array.as_any_dictionary();
    let keys = dict.keys().to_data();
    let width = dict.keys().data_type().primitive_width().unwrap_or(4);
    let n = array.len();
    let mut raw = keys.buffers()[0].as_slice()[keys.offset() * width..(keys.offset() + n) * width].to_vec();
    if let Some(nb) = nulls {
        // Null slots (null keys or keys of null values) index item 0.
        for i in (0..n).filter(|&i| nb.is_null(i)) {
            raw[i * width..(i + 1) * width].fill(0);
        }
    }
    let values = dict.values();
    if values.null_count() > 0 {
        return Err(Error::not_supported("dictionary arrays whose dictionary contains nulls"));
    }
    let num_items = values.len() as u64;
    let max_index = num_items.saturating_sub(1);
    for c in raw.chunks_exact(width) {
        let mut b = [0u8; 8];
        b[..width].copy_from_slice(c);
        if u64::from_le_bytes(b) > max_index && num_items > 0 {
            return Err(Error::invalid_input("a dictionary key points outside its dictionary"));
        }
    }
    let bits = width as u64 * 8;
    let packed = bitpacking::inline_encoded_size(&raw, bits)?;
    let mut plan = if packed < raw.len() {
        bitpacked(&raw, bits)?
    } else {
        plain_fixed(&FixedWidthBlock { data: Buffer::from_vec(raw), bits_per_value: bits, num_values: n as u64 })
    };
    let item_kind = LeafKind::of(values.data_type())?;
    let items = block_from_array(values, &item_kind, None)?;
    let (desc, bytes) = dictionary_items(&items, version)?;
    plan.dictionary = Some((desc, bytes, num_items));
    Ok(plan)
}

/// Dictionary arrays are written as their values (the writer picks its own dictionary).
fn materialize_dictionary(array: &ArrayRef) -> Result<ArrayRef> {
    match array.data_type() {
        DataType::Dictionary(_, value) => {
            let dict = array.as_any_dictionary();
            let keys = dict.keys();
            let indices = arrow_select::take::take(dict.values().as_ref(), &arrow_cast_keys(keys)?, None)?;
            debug_assert_eq!(indices.data_type(), value.as_ref());
            Ok(indices)
        }
        _ => Ok(array.clone()),
    }
}

/// Keys of any integer type as a u32/u64 index array acceptable to `take`.
fn arrow_cast_keys(keys: &dyn Array) -> Result<arrow_array::UInt64Array> {
    let data = keys.to_data();
    let width = keys.data_type().primitive_width().unwrap_or(8);
    let signed = matches!(keys.data_type(), DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64);
    let raw = &data.buffers()[0].as_slice()[data.offset() * width..(data.offset() + data.len()) * width];
    let mut out = Vec::with_capacity(data.len());
    for (i, c) in raw.chunks_exact(width).enumerate() {
        let mut b = [0u8; 8];
        b[..width].copy_from_slice(c);
        let mut v = u64::from_le_bytes(b);
        if signed && c[width - 1] & 0x80 != 0 {
            if keys.is_valid(i) {
                return Err(Error::invalid_input("negative dictionary key"));
            }
            v = 0;
        }
        out.push(v);
    }
    Ok(arrow_array::UInt64Array::new(out.into(), data.nulls().cloned()))
}

/// A constant page for a block whose values are all equal, if they are.
fn constant_layout(values: &DataBlock, kind: &LeafKind) -> Result<Option<(enc21::PageLayout, Vec<Buffer>)>> {
    let n = values.num_values() as usize;
    if n == 0 {
        return Ok(None);
    }
    let (inline, out_of_line): (Option<Vec<u8>>, Option<Vec<u8>>) = match (values, kind) {
        (DataBlock::Fixed(f), LeafKind::Bool) => {
            let bits = f.data.as_slice();
            let first = bit_util::get_bit(bits, 0);
            if (0..n).any(|i| bit_util::get_bit(bits, i) != first) {
                return Ok(None);
            }
            (Some(vec![first as u8]), None)
        }
        (DataBlock::Fixed(f), LeafKind::Fixed { bytes }) => {
            let w = *bytes;
            let d = &f.data.as_slice()[..n * w];
            let first = &d[..w];
            if !d.chunks_exact(w).all(|c| c == first) {
                return Ok(None);
            }
            if w <= crate::structural::constant::MAX_INLINE_BYTES {
                (Some(first.to_vec()), None)
            } else {
                (None, Some(out_of_line_value(&[first])))
            }
        }
        (DataBlock::Variable(v), LeafKind::Variable { large }) => {
            let first = v.value(0);
            if !(1..n).all(|i| v.value(i) == first) {
                return Ok(None);
            }
            let offsets: Vec<u8> = if *large {
                [0u64, first.len() as u64].iter().flat_map(|o| o.to_le_bytes()).collect()
            } else {
                [0u32, first.len() as u32].iter().flat_map(|o| o.to_le_bytes()).collect()
            };
            (None, Some(out_of_line_value(&[&offsets, first])))
        }
        _ => return Ok(None),
    };
    let layout = enc21::PageLayout {
        layout: Some(enc21::page_layout::Layout::ConstantLayout(enc21::ConstantLayout {
            layers: vec![Layer::AllValidItem.to_pb()],
            inline_value: inline.map(Into::into),
            ..Default::default()
        })),
    };
    Ok(Some((layout, out_of_line.into_iter().map(Buffer::from_vec).collect())))
}

/// `u32 count, u32 len[i]..., bytes...` of a length-1 Arrow array's buffers.
fn out_of_line_value(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(parts.len() as u32).to_le_bytes());
    for p in parts {
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
    }
    for p in parts {
        out.extend_from_slice(p);
    }
    out
}

/// Per-value compression for a full-zip page of variable-width values.
fn choose_per_value(values: &DataBlock, hints: &FieldHints) -> Result<PerValueEncoder> {
    let DataBlock::Variable(v) = values else { return Ok(PerValueEncoder::None) };
    match hints.compression {
        Some(None) => return Ok(PerValueEncoder::None),
        Some(Some(s)) => return Ok(PerValueEncoder::General(s)),
        None => {}
    }
    let n = v.num_values as usize;
    let total = v.data_len();
    let max = (0..n).map(|i| v.offset(i + 1) - v.offset(i)).max().unwrap_or(0);
    if max > PER_VALUE_ZSTD_MIN_BYTES {
        // Large values (images, documents): zstd each one if a sample shows it pays.
        let sample: Vec<usize> = (0..n).step_by((n / 8).max(1)).take(8).collect();
        let (mut raw, mut packed) = (0usize, 0usize);
        for &i in &sample {
            let mut out = Vec::new();
            GeneralScheme::Zstd(0).compress_into(v.value(i), &mut out)?;
            raw += v.value(i).len();
            packed += out.len();
        }
        if (packed as f64) < raw as f64 * 0.9 {
            return Ok(PerValueEncoder::General(GeneralScheme::Zstd(0)));
        }
        return Ok(PerValueEncoder::None);
    }
    if total >= fsst::MIN_TOTAL_BYTES && max >= fsst::MIN_MAX_LEN {
        let (table, compressed) = fsst::compress_block(v)?;
        if (compressed.data_len() as f64) < total as f64 * 0.9 {
            return Ok(PerValueEncoder::Fsst(table));
        }
    }
    Ok(PerValueEncoder::None)
}

/// The chosen mini-block encoding of a page's values.
struct MiniBlockPlan {
    compression: Compression,
    chunks: Vec<ValueChunk>,
    /// (description, block-encoded bytes, number of items) of the page dictionary.
    dictionary: Option<(Compression, Vec<u8>, u64)>,
}

fn is_integer_like(kind: &LeafKind, dt_bits: u64) -> bool {
    matches!(kind, LeafKind::Fixed { .. }) && matches!(dt_bits, 8 | 16 | 32 | 64)
}

/// Picks the value encoding of a mini-block page and chunks the values.
/// `is_float`: floats get byte-stream-split before general compression (their raw bits
/// are bit-packed only when that is smaller, e.g. small positive values).
fn choose_miniblock(
    values: &DataBlock,
    kind: &LeafKind,
    is_float: bool,
    hints: &FieldHints,
    version: FileVersion,
) -> Result<MiniBlockPlan> {
    let general = hints.compression.flatten();
    let plain_only = matches!(hints.compression, Some(None)) || general.is_some();
    let plan = match values {
        DataBlock::Fixed(f) if f.bits_per_value == 1 => plain_fixed(f),
        DataBlock::Fixed(f) => {
            let w = f.bytes_per_value();
            let n = f.num_values as usize;
            let raw = &f.data.as_slice()[..n * w];
            let flat_size = raw.len();
            let mut best = (flat_size, 0u8); // 0 flat, 1 bitpack, 2 rle, 3 dictionary
            let mut dict = None;
            if !plain_only {
                if is_integer_like(kind, f.bits_per_value) {
                    let s = bitpacking::inline_encoded_size(raw, f.bits_per_value)?;
                    if s < best.0 {
                        best = (s, 1);
                    }
                }
                if matches!(f.bits_per_value, 8 | 16 | 32 | 64) {
                    let runs = rle::count_runs(raw, w);
                    if (runs as f64) < n as f64 * 0.5 {
                        let s = runs * (w + 1) + runs / 200 * (w + 1);
                        if s < best.0 {
                            best = (s, 2);
                        }
                    }
                }
                let dict_allowed = version >= FileVersion::V2_2 || f.bits_per_value >= 128;
                if dict_allowed && f.num_values >= dictionary::MIN_VALUES {
                    let card = dictionary::estimate_cardinality(n, |i| &raw[i * w..(i + 1) * w]);
                    // Worth building only when values repeat; then compare exact sizes.
                    if card <= dictionary::MAX_CARDINALITY && card * 2 < n {
                        if let Some(d) = dictionary::build_fixed(f, dictionary::MAX_CARDINALITY) {
                            let idx: Vec<u8> = d.indices.iter().flat_map(|i| i.to_le_bytes()).collect();
                            let size = d.items.num_values() as usize * w + bitpacking::inline_encoded_size(&idx, 32)?;
                            if size < best.0 {
                                best = (size, 3);
                                dict = Some(d);
                            }
                        }
                    }
                }
            }
            match best.1 {
                1 => bitpacked(raw, f.bits_per_value)?,
                2 => rle_chunks(raw, w)?,
                3 => dictionary_plan(dict.take().expect("dictionary built when chosen"), version)?,
                _ => {
                    if let (Some(scheme), true) = (general, is_float) {
                        bss_general(f, scheme)?
                    } else {
                        plain_fixed(f)
                    }
                }
            }
        }
        DataBlock::Variable(v) => {
            let n = v.num_values as usize;
            let total = v.data_len();
            let mut plan = None;
            if !plain_only && v.num_values >= dictionary::MIN_VALUES {
                let card = dictionary::estimate_cardinality(n, |i| v.value(i));
                if card <= dictionary::MAX_CARDINALITY && card < n {
                    let avg = total as f64 / n.max(1) as f64;
                    let idx_bits = (64 - (card.max(1) as u64 - 1).leading_zeros()) as f64;
                    let est = card as f64 * (avg + 4.0) + n as f64 * idx_bits / 8.0;
                    if est < (total as f64 + 4.0 * n as f64) * dictionary::MAX_SIZE_RATIO {
                        if let Some(d) = dictionary::build_variable(v, dictionary::MAX_CARDINALITY) {
                            plan = Some(dictionary_plan(d, version)?);
                        }
                    }
                }
            }
            if plan.is_none() && !plain_only && total >= fsst::MIN_TOTAL_BYTES {
                let max = (0..n).map(|i| v.offset(i + 1) - v.offset(i)).max().unwrap_or(0);
                if max >= fsst::MIN_MAX_LEN {
                    let (table, compressed) = fsst::compress_block(v)?;
                    if (compressed.data_len() as f64) < total as f64 * 0.9 {
                        let inner = variable_chunks(&compressed);
                        plan = Some(MiniBlockPlan {
                            compression: Compression::Fsst { table, values: Box::new(inner.compression) },
                            chunks: inner.chunks,
                            dictionary: None,
                        });
                    }
                }
            }
            plan.unwrap_or_else(|| variable_chunks(v))
        }
        DataBlock::FixedSizeList(l) => fsl_chunks(l)?,
        DataBlock::Empty { .. } | DataBlock::Dictionary { .. } => {
            return Err(Error::internal(format!("mini-block page of a {} block", values.kind())))
        }
    };
    match general {
        Some(scheme) if !matches!(plan.compression, Compression::General { .. }) => wrap_general(plan, scheme),
        _ => Ok(plan),
    }
}

/// Values per mini-block chunk for fixed-width values of `bits` (at least 2: pylance
/// rejects non-last chunks of one value).
fn fixed_chunk_values(bits: u64) -> usize {
    let per = (CHUNK_TARGET_BYTES * 8) / bits.max(1) as usize;
    let per = per.clamp(2, MAX_CHUNK_VALUES);
    1 << (usize::BITS - 1 - per.leading_zeros())
}

fn plain_fixed(f: &FixedWidthBlock) -> MiniBlockPlan {
    let per = fixed_chunk_values(f.bits_per_value);
    let n = f.num_values as usize;
    let mut chunks = Vec::with_capacity(n.div_ceil(per));
    let d = f.data.as_slice();
    let mut start = 0;
    while start < n {
        let count = per.min(n - start);
        let bytes = if f.bits_per_value == 1 {
            let mut b = vec![0u8; count.div_ceil(8)];
            for i in 0..count {
                if bit_util::get_bit(d, start + i) {
                    bit_util::set_bit(&mut b, i);
                }
            }
            b
        } else {
            let w = f.bytes_per_value();
            d[start * w..(start + count) * w].to_vec()
        };
        chunks.push(ValueChunk { buffers: vec![bytes], num_values: count as u64 });
        start += count;
    }
    MiniBlockPlan { compression: Compression::Flat { bits: f.bits_per_value, data: None }, chunks, dictionary: None }
}

fn bitpacked(raw: &[u8], bits: u64) -> Result<MiniBlockPlan> {
    let w = (bits / 8) as usize;
    let mut chunks = Vec::new();
    for c in raw.chunks(1024 * w) {
        let mut out = Vec::new();
        bitpacking::encode_inline(c, bits, &mut out)?;
        chunks.push(ValueChunk { buffers: vec![out], num_values: (c.len() / w) as u64 });
    }
    Ok(MiniBlockPlan { compression: Compression::InlineBitpacking { bits }, chunks, dictionary: None })
}

fn rle_chunks(raw: &[u8], w: usize) -> Result<MiniBlockPlan> {
    let mut chunks = Vec::new();
    for c in raw.chunks(MAX_CHUNK_VALUES * w) {
        let (values, lengths) = rle::runs(c, w);
        chunks.push(ValueChunk { buffers: vec![values, lengths], num_values: (c.len() / w) as u64 });
    }
    Ok(MiniBlockPlan { compression: Compression::Rle { value_bits: w as u64 * 8 }, chunks, dictionary: None })
}

fn dictionary_plan(d: dictionary::Dictionary, version: FileVersion) -> Result<MiniBlockPlan> {
    let num_items = d.items.num_values();
    let idx_bytes: Vec<u8> = d.indices.iter().flat_map(|i| i.to_le_bytes()).collect();
    let mut plan = bitpacked(&idx_bytes, 32)?;
    let (desc, bytes) = dictionary_items(&d.items, version)?;
    plan.dictionary = Some((desc, bytes, num_items));
    Ok(plan)
}

/// The block encoding of a page dictionary (LZ4-wrapped in 2.2, as pylance writes it).
fn dictionary_items(items: &DataBlock, version: FileVersion) -> Result<(Compression, Vec<u8>)> {
    let (desc, bytes) = match items {
        DataBlock::Variable(v) => {
            (Compression::Variable { offset_bits: v.bits_per_offset, values: None }, variable::encode_block(v))
        }
        DataBlock::Fixed(f) if f.bits_per_value % 8 == 0 => {
            let len = (f.num_values * f.bits_per_value / 8) as usize;
            (Compression::Flat { bits: f.bits_per_value, data: None }, f.data.as_slice()[..len].to_vec())
        }
        other => return Err(Error::not_supported(format!("dictionaries of {} values", other.kind()))),
    };
    if version >= FileVersion::V2_2 {
        let mut out = Vec::new();
        GeneralScheme::Lz4.compress_into(&bytes, &mut out)?;
        Ok((Compression::General { scheme: GeneralScheme::Lz4, values: Box::new(desc) }, out))
    } else {
        Ok((desc, bytes))
    }
}

fn variable_chunks(v: &VariableWidthBlock) -> MiniBlockPlan {
    let n = v.num_values as usize;
    let bits = v.bits_per_offset;
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < n {
        let remaining = n - start;
        // The rest fits one chunk (or is too few values to split: a non-last chunk must hold
        // at least two).
        if remaining <= 2 || (remaining <= MAX_CHUNK_VALUES && variable::miniblock_size(v, start, n, bits) <= CHUNK_TARGET_BYTES)
        {
            let mut buf = Vec::new();
            variable::encode_miniblock(v, start, n, bits, &mut buf);
            chunks.push(ValueChunk { buffers: vec![buf], num_values: remaining as u64 });
            break;
        }
        let mut count = 2;
        while count * 2 < remaining
            && count * 2 <= MAX_CHUNK_VALUES
            && variable::miniblock_size(v, start, start + count * 2, bits) <= CHUNK_TARGET_BYTES
        {
            count *= 2;
        }
        let mut buf = Vec::new();
        variable::encode_miniblock(v, start, start + count, bits, &mut buf);
        chunks.push(ValueChunk { buffers: vec![buf], num_values: count as u64 });
        start += count;
    }
    MiniBlockPlan { compression: Compression::Variable { offset_bits: bits, values: None }, chunks, dictionary: None }
}

fn fsl_chunks(l: &FixedSizeListBlock) -> Result<MiniBlockPlan> {
    let DataBlock::Fixed(items) = l.child.as_ref() else {
        return Err(Error::not_supported("fixed-size lists of non-fixed-width items"));
    };
    let dim = l.dimension as usize;
    let n = items.num_values as usize / dim.max(1);
    let row_bits = items.bits_per_value * l.dimension;
    let per = fixed_chunk_values(row_bits);
    let mut chunks = Vec::new();
    let mut start = 0;
    let get_bits = |src: &[u8], from: usize, count: usize| {
        let mut b = vec![0u8; count.div_ceil(8)];
        for i in 0..count {
            if bit_util::get_bit(src, from + i) {
                bit_util::set_bit(&mut b, i);
            }
        }
        b
    };
    while start < n {
        let count = per.min(n - start);
        let mut buffers = Vec::new();
        if let Some(v) = &l.item_validity {
            buffers.push(get_bits(v.as_slice(), start * dim, count * dim));
        }
        let data = if items.bits_per_value == 1 {
            get_bits(items.data.as_slice(), start * dim, count * dim)
        } else {
            let w = items.bytes_per_value();
            items.data.as_slice()[start * dim * w..(start + count) * dim * w].to_vec()
        };
        buffers.push(data);
        chunks.push(ValueChunk { buffers, num_values: count as u64 });
        start += count;
    }
    Ok(MiniBlockPlan {
        compression: Compression::FixedSizeList {
            dim: l.dimension,
            has_validity: l.item_validity.is_some(),
            values: Box::new(Compression::Flat { bits: items.bits_per_value, data: None }),
        },
        chunks,
        dictionary: None,
    })
}

fn bss_general(f: &FixedWidthBlock, scheme: GeneralScheme) -> Result<MiniBlockPlan> {
    let mut plan = plain_fixed(f);
    let w = f.bytes_per_value();
    for c in &mut plan.chunks {
        c.buffers[0] = bss::encode(&c.buffers[0], w);
    }
    plan.compression = Compression::ByteStreamSplit { bits: f.bits_per_value };
    wrap_general(plan, scheme)
}

/// Compresses the first value buffer of every chunk.
fn wrap_general(mut plan: MiniBlockPlan, scheme: GeneralScheme) -> Result<MiniBlockPlan> {
    for c in &mut plan.chunks {
        let mut out = Vec::new();
        scheme.compress_into(&c.buffers[0], &mut out)?;
        c.buffers[0] = out;
    }
    plan.compression = Compression::General { scheme, values: Box::new(plan.compression) };
    Ok(plan)
}
