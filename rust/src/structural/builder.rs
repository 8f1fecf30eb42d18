//! Accumulates decoded values and levels of one leaf column and builds the Arrow array.
//!
//! Decoders hand over [`DataBlock`]s (a whole chunk, a range of it, or selected values);
//! the builder copies exactly the selected values into Arrow-layout buffers (one copy), and
//! [`LeafBuilder::finish`] wraps them in an Arrow array without copying again.

use std::sync::Arc;

use arrow_array::{make_array, new_null_array, ArrayRef};
use arrow_buffer::{bit_util, BooleanBufferBuilder, Buffer, MutableBuffer, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;

use super::assemble::{is_simple, LeafData, SimpleWalk};
use super::repdef::LeafPath;
use super::LeafKind;
use crate::encodings::{DataBlock, FixedWidthBlock, VariableWidthBlock};
use crate::error::{Error, Result};

/// Which values of a block to append.
#[derive(Debug, Clone, Copy)]
pub enum Selection<'a> {
    /// All of them.
    All,
    /// `start..start + len`.
    Range(usize, usize),
    /// These indices (any order, repeats allowed).
    Indices(&'a [u32]),
}

impl Selection<'_> {
    fn len(&self, total: usize) -> usize {
        match self {
            Selection::All => total,
            Selection::Range(_, n) => *n,
            Selection::Indices(i) => i.len(),
        }
    }

    fn check(&self, total: usize) -> Result<()> {
        let ok = match self {
            Selection::All => true,
            Selection::Range(s, n) => s.checked_add(*n).is_some_and(|e| e <= total),
            Selection::Indices(i) => i.iter().all(|&x| (x as usize) < total),
        };
        if ok {
            Ok(())
        } else {
            Err(Error::corrupt(format!("selection outside a block of {total} values")))
        }
    }

    fn for_each(&self, total: usize, mut f: impl FnMut(usize)) {
        match self {
            Selection::All => (0..total).for_each(f),
            Selection::Range(s, n) => (*s..*s + *n).for_each(f),
            Selection::Indices(i) => i.iter().for_each(|&x| f(x as usize)),
        }
    }
}

enum Values {
    Null,
    Bool(BooleanBufferBuilder),
    Fixed { width: usize, buf: MutableBuffer },
    Variable { offsets: Offsets, data: MutableBuffer },
    Fsl { dim: usize, child: Box<Values>, validity: Option<BooleanBufferBuilder> },
}

impl Values {
    fn new(kind: &LeafKind, capacity: usize) -> Self {
        match kind {
            LeafKind::Null => Values::Null,
            LeafKind::Bool => Values::Bool(BooleanBufferBuilder::new(capacity)),
            LeafKind::Fixed { bytes } => Values::Fixed { width: *bytes, buf: MutableBuffer::new(capacity * bytes) },
            LeafKind::Packed { widths } => {
                let w: usize = widths.iter().sum();
                Values::Fixed { width: w, buf: MutableBuffer::new(capacity * w) }
            }
            // Rows of a variable packed struct, split into children when built.
            LeafKind::VarPacked { .. } => Values::Variable { offsets: Offsets::Large(vec![0]), data: MutableBuffer::new(0) },
            LeafKind::Variable { large } => {
                let offsets = if *large { Offsets::Large(vec![0]) } else { Offsets::Small(vec![0]) };
                let mut v = Values::Variable { offsets, data: MutableBuffer::new(0) };
                v.reserve(capacity);
                v
            }
            LeafKind::Fsl { dim, item } => {
                Values::Fsl { dim: *dim, child: Box::new(Values::new(item, capacity * dim)), validity: None }
            }
        }
    }

    /// Reserves room for `n` more values (for variable-width values, their offsets).
    fn reserve(&mut self, n: usize) {
        match self {
            Values::Null => {}
            Values::Bool(b) => b.reserve(n),
            Values::Fixed { width, buf } => buf.reserve(n * *width),
            Values::Variable { offsets: Offsets::Small(o), .. } => o.reserve(n),
            Values::Variable { offsets: Offsets::Large(o), .. } => o.reserve(n),
            Values::Fsl { dim, child, .. } => child.reserve(n * *dim),
        }
    }

    /// Number of child items appended so far (used to backfill FSL item validity).
    fn len(&self) -> usize {
        match self {
            Values::Null => 0,
            Values::Bool(b) => b.len(),
            Values::Fixed { width, buf } => buf.len() / width.max(&1),
            Values::Variable { offsets: Offsets::Small(o), .. } => o.len() - 1,
            Values::Variable { offsets: Offsets::Large(o), .. } => o.len() - 1,
            Values::Fsl { dim, child, .. } => child.len() / dim.max(&1),
        }
    }

    fn append_empty(&mut self, n: usize) {
        match self {
            Values::Null => {}
            Values::Bool(b) => b.append_n(n, false),
            Values::Fixed { width, buf } => buf.extend_zeros(n * *width),
            Values::Variable { offsets: Offsets::Small(o), .. } => o.extend(std::iter::repeat_n(*o.last().unwrap(), n)),
            Values::Variable { offsets: Offsets::Large(o), .. } => o.extend(std::iter::repeat_n(*o.last().unwrap(), n)),
            Values::Fsl { dim, child, validity } => {
                child.append_empty(n * *dim);
                if let Some(v) = validity {
                    v.append_n(n * *dim, true);
                }
            }
        }
    }

    fn append(&mut self, block: &DataBlock, sel: Selection) -> Result<()> {
        let total = block.num_values() as usize;
        sel.check(total)?;
        if let DataBlock::Empty { .. } = block {
            self.append_empty(sel.len(total));
            return Ok(());
        }
        if let DataBlock::Dictionary { indices, items } = block {
            // Only the selected values are looked up in the dictionary.
            let w = indices.bytes_per_value();
            if !matches!(w, 1 | 2 | 4 | 8) || indices.data.len() < total * w {
                return Err(Error::corrupt("malformed dictionary indices"));
            }
            let num_items = items.num_values();
            let raw = &indices.data.as_slice()[..total * w];
            let picked = pick_dictionary_indices(raw, w, sel, total);
            if let Some(&idx) = picked.iter().find(|&&i| i as u64 >= num_items) {
                return Err(Error::corrupt(format!("dictionary index {idx} out of {num_items} items")));
            }
            return self.append(items, Selection::Indices(&picked));
        }
        match (self, block) {
            (Values::Null, _) => Ok(()),
            (Values::Bool(b), DataBlock::Fixed(f)) if f.bits_per_value == 1 => {
                f.validate("boolean values")?;
                let bits = f.data.as_slice();
                match sel {
                    Selection::All => b.append_packed_range(0..total, bits),
                    Selection::Range(s, n) => b.append_packed_range(s..s + n, bits),
                    Selection::Indices(idx) => idx.iter().for_each(|&i| b.append(bit_util::get_bit(bits, i as usize))),
                }
                Ok(())
            }
            (Values::Fixed { width, buf }, DataBlock::Fixed(f)) if f.bits_per_value == 8 * *width as u64 => {
                f.validate("values")?;
                append_fixed(buf, *width, f, sel);
                Ok(())
            }
            (Values::Variable { offsets: Offsets::Small(o), data }, DataBlock::Variable(v)) => append_variable(o, data, v, sel),
            (Values::Variable { offsets: Offsets::Large(o), data }, DataBlock::Variable(v)) => append_variable(o, data, v, sel),
            (Values::Fsl { dim, child, validity }, DataBlock::FixedSizeList(l)) if l.dimension as usize == *dim => {
                let d = *dim;
                let before = child.len();
                let scaled: Vec<u32>;
                let child_sel = match sel {
                    Selection::All => Selection::All,
                    Selection::Range(s, n) => Selection::Range(s * d, n * d),
                    Selection::Indices(idx) => {
                        scaled = idx.iter().flat_map(|&i| (i as usize * d..(i as usize + 1) * d).map(|x| x as u32)).collect();
                        Selection::Indices(&scaled)
                    }
                };
                child.append(&l.child, child_sel)?;
                if let Some(bits) = &l.item_validity {
                    let v = validity.get_or_insert_with(|| {
                        let mut v = BooleanBufferBuilder::new(before);
                        v.append_n(before, true);
                        v
                    });
                    child_sel.for_each(total * d, |i| v.append(bit_util::get_bit(bits.as_slice(), i)));
                } else if let Some(v) = validity {
                    v.append_n(child.len() - before, true);
                }
                Ok(())
            }
            (Values::Fsl { dim, child, .. }, DataBlock::Fixed(f)) => {
                // A fixed-size list stored as one fixed-width value per row.
                let d = *dim as u64;
                let items = DataBlock::Fixed(FixedWidthBlock {
                    data: f.data.clone(),
                    bits_per_value: f.bits_per_value / d,
                    num_values: f.num_values * d,
                });
                let l = crate::encodings::FixedSizeListBlock { child: Box::new(items), dimension: d, item_validity: None };
                let mut tmp = Values::Fsl { dim: *dim, child: std::mem::replace(child, Box::new(Values::Null)), validity: None };
                let r = tmp.append(&DataBlock::FixedSizeList(l), sel);
                if let Values::Fsl { child: c, .. } = tmp {
                    *child = c;
                }
                r
            }
            (_, other) => Err(Error::corrupt(format!("decoded {} values do not match the column type", other.kind()))),
        }
    }
}

fn append_fixed(buf: &mut MutableBuffer, width: usize, f: &FixedWidthBlock, sel: Selection) {
    let src = f.data.as_slice();
    match sel {
        Selection::All => buf.extend_from_slice(&src[..f.num_values as usize * width]),
        Selection::Range(s, n) => buf.extend_from_slice(&src[s * width..(s + n) * width]),
        Selection::Indices(idx) => {
            buf.reserve(idx.len() * width);
            match width {
                4 => idx.iter().for_each(|&i| buf.extend_from_slice(&src[i as usize * 4..i as usize * 4 + 4])),
                8 => idx.iter().for_each(|&i| buf.extend_from_slice(&src[i as usize * 8..i as usize * 8 + 8])),
                _ => idx.iter().for_each(|&i| buf.extend_from_slice(&src[i as usize * width..(i as usize + 1) * width])),
            }
        }
    }
}

/// Offsets of variable-width values, in the width of the Arrow type being built.
enum Offsets {
    Small(Vec<i32>),
    Large(Vec<i64>),
}

/// An Arrow offset type.
trait Offset: Copy {
    /// Largest byte count the type can address.
    const MAX: usize;
    /// `x` (at most [`Self::MAX`]) as an offset.
    fn of(x: usize) -> Self;
}

impl Offset for i32 {
    const MAX: usize = i32::MAX as usize;
    #[inline(always)]
    fn of(x: usize) -> Self {
        x as i32
    }
}

impl Offset for i64 {
    const MAX: usize = i64::MAX as usize;
    #[inline(always)]
    fn of(x: usize) -> Self {
        x as i64
    }
}

fn too_many_bytes(bytes: usize) -> Error {
    Error::invalid_input(format!(
        "{bytes} bytes of values do not fit a string/binary array with 32-bit offsets (2 GiB limit); read fewer rows at once"
    ))
}

fn append_variable<O: Offset>(
    offsets: &mut Vec<O>,
    data: &mut MutableBuffer,
    v: &VariableWidthBlock,
    sel: Selection,
) -> Result<()> {
    let total = v.num_values as usize;
    match sel {
        Selection::All | Selection::Range(..) => {
            let (s, n) = if let Selection::Range(s, n) = sel { (s, n) } else { (0, total) };
            // Contiguous: one copy of the bytes, offsets rebased.
            let start = v.offset(s) as usize;
            let end = v.offset(s + n) as usize;
            let bytes = v.data.as_slice().get(start..end).ok_or_else(|| Error::corrupt("value offsets outside the data"))?;
            if data.len() + bytes.len() > O::MAX {
                return Err(too_many_bytes(data.len() + bytes.len()));
            }
            let base = data.len().wrapping_sub(start);
            data.extend_from_slice(bytes);
            offsets.extend((s + 1..=s + n).map(|i| O::of((v.offset(i) as usize).wrapping_add(base))));
            Ok(())
        }
        Selection::Indices(idx) => gather_variable(offsets, data, v, idx),
    }
}

/// Appends the values `idx` of `v` (e.g. looked up in a dictionary): one pass computes the
/// offsets and checks the source ranges, the second copies, moving short values as one
/// 16-byte block (no `memcpy` call per value).
fn gather_variable<O: Offset>(offsets: &mut Vec<O>, data: &mut MutableBuffer, v: &VariableWidthBlock, idx: &[u32]) -> Result<()> {
    const SHORT: usize = 16;
    let src = v.data.as_slice();
    let mut ranges: Vec<(usize, usize)> = Vec::with_capacity(idx.len());
    let base = data.len();
    let mut end = base;
    offsets.reserve(idx.len());
    for &i in idx {
        let (s, e) = (v.offset(i as usize) as usize, v.offset(i as usize + 1) as usize);
        if s > e || e > src.len() {
            return Err(Error::corrupt(format!("value {i} has offsets {s}..{e} outside {} bytes", src.len())));
        }
        ranges.push((s, e - s));
        end += e - s;
        offsets.push(O::of(end));
    }
    if end > O::MAX {
        return Err(too_many_bytes(end));
    }
    // SHORT bytes of slack so a short value may be moved as a whole block and cut back.
    data.reserve(end - base + SHORT);
    for &(s, len) in &ranges {
        if len <= SHORT && s + SHORT <= src.len() {
            let at = data.len();
            data.extend_from_slice(&src[s..s + SHORT]);
            data.truncate(at + len);
        } else {
            data.extend_from_slice(&src[s..s + len]);
        }
    }
    Ok(())
}

/// Reads the dictionary indices (`w` bytes each) of the selected values.
fn pick_dictionary_indices(raw: &[u8], w: usize, sel: Selection, total: usize) -> Vec<u32> {
    fn pick<const W: usize>(raw: &[u8], sel: Selection, total: usize) -> Vec<u32> {
        let at = |i: usize| {
            let mut b = [0u8; 8];
            b[..W].copy_from_slice(&raw[i * W..i * W + W]);
            u64::from_le_bytes(b).min(u32::MAX as u64) as u32
        };
        match sel {
            Selection::All => (0..total).map(at).collect(),
            Selection::Range(s, n) => (s..s + n).map(at).collect(),
            Selection::Indices(idx) => idx.iter().map(|&i| at(i as usize)).collect(),
        }
    }
    match w {
        1 => pick::<1>(raw, sel, total),
        2 => pick::<2>(raw, sel, total),
        4 => pick::<4>(raw, sel, total),
        _ => pick::<8>(raw, sel, total),
    }
}

/// Builds one leaf column from decoded pieces: values of visible items, plus repetition
/// and canonical definition levels.
pub struct LeafBuilder {
    kind: LeafKind,
    path: LeafPath,
    values: Values,
    num_values: usize,
    /// Levels, materialised once the first non-trivial levels arrive.
    rep: Option<Vec<u16>>,
    def: Option<Vec<u16>>,
    num_levels: usize,
    num_rows: usize,
    /// Expected number of levels (room reserved for them once they materialise).
    level_hint: usize,
    /// For nested leaves with a simple path, the levels are walked as they arrive instead
    /// of being stored.
    walk: Option<SimpleWalk>,
}

impl LeafBuilder {
    /// A builder for a flat leaf of `kind`, expecting about `capacity` values.
    pub fn new(kind: LeafKind, capacity: usize) -> Self {
        Self::with_path(kind, LeafPath::flat(), capacity)
    }

    /// A builder for a leaf with structure `path`.
    pub fn with_path(kind: LeafKind, path: LeafPath, capacity: usize) -> Self {
        let walk = (path.kinds.len() > 1 && is_simple(&path)).then(|| SimpleWalk::new(&path));
        Self {
            walk,
            values: Values::new(&kind, capacity),
            kind,
            path,
            num_values: 0,
            rep: None,
            def: None,
            num_levels: 0,
            num_rows: 0,
            level_hint: 0,
        }
    }

    /// Reserves room for about `levels` more levels and values.
    pub fn reserve(&mut self, levels: usize) {
        self.level_hint = levels;
        self.values.reserve(levels);
        if let Some(w) = &mut self.walk {
            w.reserve(levels);
        }
        for l in [&mut self.rep, &mut self.def].into_iter().flatten() {
            l.reserve(levels);
        }
    }

    /// Reserves room for `bytes` more bytes of variable-width values.
    pub fn reserve_bytes(&mut self, bytes: usize) {
        if let Values::Variable { data, .. } = &mut self.values {
            data.reserve(bytes);
        }
    }

    /// Number of values appended.
    pub fn len(&self) -> usize {
        self.num_values
    }

    /// Whether nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.num_values == 0 && self.num_levels == 0
    }

    /// Appends the selected values of `block`.
    pub fn append_values(&mut self, block: &DataBlock, sel: Selection) -> Result<()> {
        let n = sel.len(block.num_values() as usize);
        self.values.append(block, sel)?;
        if self.num_values == 0 && n > 0 && self.level_hint > n {
            // The first values tell how many bytes the expected rest will need.
            if let Values::Variable { data, .. } = &mut self.values {
                let per_value = data.len() / n + 1;
                data.reserve(per_value.saturating_mul(self.level_hint - n));
            }
        }
        self.num_values += n;
        Ok(())
    }

    /// Appends levels (`None` = the trivial levels: every level starts a row / is valid) for
    /// `num_levels` levels making up `num_rows` rows.
    pub fn append_levels(&mut self, rep: Option<&[u16]>, def: Option<&[u16]>, num_levels: usize, num_rows: usize) -> Result<()> {
        if let Some(w) = &mut self.walk {
            for l in [rep, def].into_iter().flatten() {
                if l.len() != num_levels {
                    return Err(Error::corrupt(format!("{} levels where {num_levels} were expected", l.len())));
                }
            }
            w.extend(rep, def, num_levels)?;
            self.num_levels += num_levels;
            self.num_rows += num_rows;
            return Ok(());
        }
        for (given, stored, trivial) in [(rep, &mut self.rep, self.path.max_rep), (def, &mut self.def, 0)] {
            match (given, stored.as_mut()) {
                (None, None) => {}
                (None, Some(s)) => s.extend(std::iter::repeat_n(trivial, num_levels)),
                (Some(g), s) => {
                    if g.len() != num_levels {
                        return Err(Error::corrupt(format!("{} levels where {num_levels} were expected", g.len())));
                    }
                    let s = match s {
                        Some(s) => s,
                        None => {
                            let mut v = Vec::with_capacity(self.level_hint.max(self.num_levels + g.len()));
                            v.resize(self.num_levels, trivial);
                            stored.insert(v)
                        }
                    };
                    s.extend_from_slice(g);
                }
            }
        }
        self.num_levels += num_levels;
        self.num_rows += num_rows;
        Ok(())
    }

    /// Appends the selected values of a flat column and their canonical definition levels
    /// (one per value of `block`; `None` = all valid).
    pub fn append(&mut self, block: &DataBlock, def: Option<&[u16]>, sel: Selection) -> Result<()> {
        let total = block.num_values() as usize;
        let n = sel.len(total);
        self.append_values(block, sel)?;
        match def {
            None => self.append_levels(None, None, n, n),
            Some(levels) => {
                if levels.len() != total {
                    return Err(Error::corrupt(format!("{} definition levels for {total} values", levels.len())));
                }
                match sel {
                    Selection::All => self.append_levels(None, Some(levels), n, n),
                    Selection::Range(s, k) => self.append_levels(None, Some(&levels[s..s + k]), n, n),
                    Selection::Indices(idx) => {
                        let picked: Vec<u16> = idx.iter().map(|&i| levels[i as usize]).collect();
                        self.append_levels(None, Some(&picked), n, n)
                    }
                }
            }
        }
    }

    /// Builds the leaf's data: the values as an Arrow array of `data_type` (without
    /// validity; the levels carry it) and the levels.
    pub fn finish(self, data_type: &DataType) -> Result<LeafData> {
        let values = build_array(self.values, self.num_values, data_type, None, &self.kind)?;
        let walked = self.walk.map(SimpleWalk::finish);
        Ok(LeafData { path: self.path, rep: self.rep, def: self.def, values, num_rows: self.num_rows, walked })
    }
}

fn build_array(values: Values, len: usize, data_type: &DataType, nulls: Option<NullBuffer>, kind: &LeafKind) -> Result<ArrayRef> {
    if let DataType::Dictionary(key, value) = data_type {
        let plain = build_array(values, len, value, nulls, kind)?;
        return crate::structural::dictionary_encode(&plain, key);
    }
    if let (
        LeafKind::VarPacked { fields: layout },
        Values::Variable { offsets: Offsets::Large(o), data },
        DataType::Struct(fields),
    ) = (kind, &values, data_type)
    {
        return split_packed_rows(o, data.as_slice(), layout, fields, nulls, len);
    }
    if let (LeafKind::Packed { widths }, Values::Fixed { buf, width }, DataType::Struct(fields)) = (kind, &values, data_type) {
        // Split the row-major rows into one buffer per child.
        let rows = buf.as_slice();
        let mut children = Vec::with_capacity(widths.len());
        let mut at = 0usize;
        for (w, f) in widths.iter().zip(fields.iter()) {
            let mut child = MutableBuffer::new(len * w);
            for r in 0..len {
                child.extend_from_slice(&rows[r * width + at..r * width + at + w]);
            }
            at += w;
            let d = ArrayDataBuilder::new(f.data_type().clone()).len(len).add_buffer(child.into()).build()?;
            children.push(d);
        }
        let d = ArrayDataBuilder::new(data_type.clone()).len(len).nulls(nulls).child_data(children).build()?;
        return Ok(make_array(d));
    }
    let nulls_len_ok = nulls.as_ref().is_none_or(|n| n.len() == len);
    let builder = ArrayDataBuilder::new(data_type.clone()).len(len).nulls(nulls);
    let data = match values {
        Values::Null if matches!(data_type, DataType::Struct(f) if f.is_empty()) => {
            return Ok(Arc::new(arrow_array::StructArray::new_empty_fields(len, None)))
        }
        Values::Null => return Ok(new_null_array(data_type, len)),
        Values::Bool(mut b) => builder.add_buffer(b.finish().into_inner()),
        Values::Fixed { buf, .. } => builder.add_buffer(buf.into()),
        Values::Variable { offsets, data } => {
            let (offsets_buf, valid_ascii) = match (offsets, data_type) {
                (Offsets::Small(o), DataType::Utf8 | DataType::Binary) => {
                    let ok = is_valid_ascii(&o, &data, len);
                    (Buffer::from_vec(o), ok)
                }
                (Offsets::Large(o), DataType::LargeUtf8 | DataType::LargeBinary) => {
                    let ok = is_valid_ascii(&o, &data, len);
                    (Buffer::from_vec(o), ok)
                }
                _ => return Err(Error::Internal(format!("offsets of the wrong width for {data_type}"))),
            };
            let builder = builder.add_buffer(offsets_buf).add_buffer(data.into());
            if valid_ascii && nulls_len_ok {
                // SAFETY: `is_valid_ascii` checked what validation would: `len + 1` offsets,
                // starting at 0, never decreasing, ending within the data; and all bytes are
                // ASCII, so the data is UTF-8 and every offset is a character boundary. The
                // validity bitmap, if any, has `len` bits (checked above).
                return Ok(make_array(unsafe { builder.build_unchecked() }));
            }
            builder
        }
        Values::Fsl { dim, child, validity } => {
            let DataType::FixedSizeList(item, _) = data_type else {
                return Err(Error::corrupt("fixed-size list values for a non-list column"));
            };
            let LeafKind::Fsl { item: item_kind, .. } = kind else { unreachable!() };
            let child_nulls = validity.map(|mut v| NullBuffer::new(v.finish())).filter(|n| n.null_count() > 0);
            let child = build_array(*child, len * dim, item.data_type(), child_nulls, item_kind)?;
            builder.add_child_data(child.to_data())
        }
    };
    // Full validation: the bytes come from a file we do not trust (offsets, UTF-8).
    let data = data.build().map_err(|e| Error::corrupt(format!("decoded data is not valid Arrow: {e}")))?;
    Ok(make_array(data))
}

/// Splits the rows of a variable packed struct (see [`crate::encodings::PackedField`]) into
/// its children; an empty row (a null struct) gives zeros / empty values.
fn split_packed_rows(
    offsets: &[i64],
    rows: &[u8],
    layout: &[crate::encodings::PackedField],
    fields: &arrow_schema::Fields,
    nulls: Option<NullBuffer>,
    len: usize,
) -> Result<ArrayRef> {
    use crate::encodings::PackedField;
    if offsets.len() != len + 1 || layout.len() != fields.len() {
        return Err(Error::Internal("packed struct rows do not match the schema".into()));
    }
    enum Child {
        Fixed(usize, Vec<u8>),
        Variable(bool, Vec<i64>, Vec<u8>),
    }
    let mut children: Vec<Child> = layout
        .iter()
        .map(|f| match f {
            PackedField::Fixed { bits } => Child::Fixed((*bits / 8) as usize, Vec::with_capacity(len * (*bits / 8) as usize)),
            PackedField::Variable { length_bits } => Child::Variable(*length_bits == 64, vec![0], Vec::new()),
        })
        .collect();
    let bad = |r: usize| Error::corrupt(format!("packed struct row {r} does not hold its children"));
    for r in 0..len {
        let (s, e) = (offsets[r] as usize, offsets[r + 1] as usize);
        let row = rows.get(s..e).ok_or_else(|| bad(r))?;
        let mut at = 0usize;
        for c in children.iter_mut() {
            match c {
                Child::Fixed(w, out) if row.is_empty() => out.resize(out.len() + *w, 0),
                Child::Fixed(w, out) => {
                    out.extend_from_slice(row.get(at..at + *w).ok_or_else(|| bad(r))?);
                    at += *w;
                }
                Child::Variable(_, offs, _) if row.is_empty() => offs.push(*offs.last().unwrap()),
                Child::Variable(large, offs, out) => {
                    let lw = if *large { 8 } else { 4 };
                    let mut lb = [0u8; 8];
                    lb[..lw].copy_from_slice(row.get(at..at + lw).ok_or_else(|| bad(r))?);
                    let n = u64::from_le_bytes(lb) as usize;
                    at += lw;
                    out.extend_from_slice(row.get(at..at.checked_add(n).ok_or_else(|| bad(r))?).ok_or_else(|| bad(r))?);
                    at += n;
                    offs.push(out.len() as i64);
                }
            }
        }
        if at != row.len() {
            return Err(bad(r));
        }
    }
    let mut child_data = Vec::with_capacity(children.len());
    for (c, f) in children.into_iter().zip(fields.iter()) {
        let b = ArrayDataBuilder::new(f.data_type().clone()).len(len);
        let b = match c {
            Child::Fixed(_, out) => b.add_buffer(Buffer::from_vec(out)),
            Child::Variable(true, offs, out) => b.add_buffer(Buffer::from_vec(offs)).add_buffer(Buffer::from_vec(out)),
            Child::Variable(false, offs, out) => {
                if *offs.last().unwrap_or(&0) > i32::MAX as i64 {
                    return Err(too_many_bytes(*offs.last().unwrap_or(&0) as usize));
                }
                b.add_buffer(Buffer::from_vec(offs.into_iter().map(|o| o as i32).collect::<Vec<i32>>()))
                    .add_buffer(Buffer::from_vec(out))
            }
        };
        // Full validation: the bytes come from a file we do not trust (UTF-8, lengths).
        child_data.push(b.build().map_err(|e| Error::corrupt(format!("packed struct child {:?} is not valid: {e}", f.name())))?);
    }
    let d = ArrayDataBuilder::new(DataType::Struct(fields.clone())).len(len).nulls(nulls).child_data(child_data).build()?;
    Ok(make_array(d))
}

/// Whether variable-width values are valid as Arrow data of any string or binary type
/// without further checks: `len + 1` offsets from 0, never decreasing, ending within `data`,
/// and only ASCII bytes (a fast test that replaces UTF-8 and character-boundary validation).
fn is_valid_ascii<O: Offset + Into<i64>>(offsets: &[O], data: &MutableBuffer, len: usize) -> bool {
    offsets.len() == len + 1
        && offsets.first().is_some_and(|&o| o.into() == 0)
        && offsets.last().is_some_and(|&o| o.into() as usize <= data.len())
        && offsets.windows(2).fold(true, |ok, w| ok & (w[0].into() <= w[1].into()))
        && data.as_slice().is_ascii()
}

/// Shared handle for built arrays.
pub type Built = Arc<dyn arrow_array::Array>;
