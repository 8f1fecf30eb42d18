//! Reading legacy (v1) data files (see the module documentation for the layout).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{make_array, new_empty_array, Array, ArrayRef, NullArray, UInt32Array};
use arrow_buffer::{bit_util, BooleanBufferBuilder, Buffer, MutableBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;
use prost::Message;

use super::FOOTER_LEN;
use crate::error::{Error, Result};
use crate::file::reader::{fixed_byte_width, fixed_width_array};
use crate::format::{filepb, tablepb};
use crate::io::ReaderRef;
use crate::schema::{LanceField, LanceSchema};

/// A run of rows of one page: the page's (position, number of values), the rows, and the
/// batch (for messages).
struct Seg {
    page: (u64, u64),
    rows: Range<usize>,
    batch: usize,
}

/// An open legacy data file: its schema, batches and page table (read on open).
#[derive(Debug)]
pub struct LegacyFile {
    io: ReaderRef,
    path: String,
    size: u64,
    schema: LanceSchema,
    /// Row offsets of the batches (0 first, the row count last).
    batch_offsets: Vec<u64>,
    min_id: i32,
    num_ids: usize,
    /// (position, length) per (field id − min id) × batch.
    pages: Vec<(u64, u64)>,
    /// Values of each dictionary field, by field id.
    dictionaries: HashMap<i32, ArrayRef>,
}

fn corrupt(path: &str, msg: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("{path}: legacy (v1) file: {msg}"))
}

impl LegacyFile {
    /// Opens the file behind `io` of `size` bytes whose last bytes are `tail` (which must
    /// end in a legacy footer: see [`super::is_legacy_footer`]).
    pub fn open(io: ReaderRef, size: u64, tail: &[u8]) -> Result<Self> {
        let path = io.path().to_string();
        if size < FOOTER_LEN as u64 || tail.len() < FOOTER_LEN {
            return Err(corrupt(&path, format!("{size} bytes is too small")));
        }
        let footer = &tail[tail.len() - FOOTER_LEN..];
        let meta_pos = u64::from_le_bytes(footer[..8].try_into().expect("8 bytes"));
        let meta_end = size - FOOTER_LEN as u64;
        let meta = read_prefixed(&io, &path, meta_pos, meta_end, "metadata")?;
        let meta = filepb::Metadata::decode(meta.as_slice()).map_err(|e| corrupt(&path, format!("metadata: {e}")))?;
        if meta.manifest_position == 0 {
            return Err(Error::not_supported(format!(
                "{path}: legacy (v1) file without a schema of its own (written for a dataset that keeps it)"
            )));
        }
        let manifest = read_prefixed(&io, &path, meta.manifest_position, meta_pos, "schema")?;
        let manifest = tablepb::Manifest::decode(manifest.as_slice()).map_err(|e| corrupt(&path, format!("schema: {e}")))?;
        let schema = LanceSchema::from_pb(&manifest.fields, &manifest.schema_metadata)?;
        if schema.fields.is_empty() {
            return Err(corrupt(&path, "the schema has no fields"));
        }
        let mut batch_offsets = Vec::with_capacity(meta.batch_offsets.len().max(1));
        for &o in &meta.batch_offsets {
            let o = u64::try_from(o).map_err(|_| corrupt(&path, format!("negative batch offset {o}")))?;
            if batch_offsets.last().is_some_and(|&l| o < l) || (batch_offsets.is_empty() && o != 0) {
                return Err(corrupt(&path, format!("batch offsets {:?} do not rise from 0", meta.batch_offsets)));
            }
            batch_offsets.push(o);
        }
        if batch_offsets.is_empty() {
            batch_offsets.push(0);
        }
        let num_batches = batch_offsets.len() - 1;
        let ids: Vec<i32> = schema.all_fields().iter().map(|f| f.id).collect();
        let min_id = *ids.iter().min().expect("fields");
        let max_id = *ids.iter().max().expect("fields");
        let num_ids = (max_id as i64 - min_id as i64 + 1) as usize;
        let table_len = (num_ids as u64)
            .checked_mul(num_batches as u64)
            .and_then(|n| n.checked_mul(16))
            .filter(|&n| meta.page_table_position.checked_add(n).is_some_and(|e| e <= meta_end))
            .ok_or_else(|| corrupt(&path, "the page table does not fit in the file"))?;
        let table = if table_len == 0 {
            Buffer::from(MutableBuffer::new(0))
        } else {
            io.read_range(meta.page_table_position..meta.page_table_position + table_len)?
        };
        let pages = table
            .as_slice()
            .chunks_exact(16)
            .map(|c| {
                let pos = i64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
                let len = i64::from_le_bytes(c[8..].try_into().expect("8 bytes"));
                match (u64::try_from(pos), u64::try_from(len)) {
                    (Ok(p), Ok(l)) => Ok((p, l)),
                    _ => Err(corrupt(&path, format!("page table entry ({pos}, {len}) is negative"))),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let mut file = Self { io, path, size, schema, batch_offsets, min_id, num_ids, pages, dictionaries: HashMap::new() };
        for pb in &manifest.fields {
            let Some(field) = file.schema.all_fields().into_iter().find(|f| f.id == pb.id).cloned() else { continue };
            let DataType::Dictionary(_, value_type) = &field.data_type else { continue };
            let d = pb
                .dictionary
                .as_ref()
                .ok_or_else(|| corrupt(&file.path, format!("dictionary field {:?} has no dictionary", field.name)))?;
            let (offset, length) = match (u64::try_from(d.offset), usize::try_from(d.length)) {
                (Ok(o), Ok(l)) => (o, l),
                _ => return Err(corrupt(&file.path, format!("dictionary of {:?} at ({}, {})", field.name, d.offset, d.length))),
            };
            let value_field =
                LanceField { data_type: (**value_type).clone(), nullable: false, children: vec![], ..field.clone() };
            let values = file.read_segments(&value_field, &[Seg { page: (offset, length as u64), rows: 0..length, batch: 0 }])?;
            file.dictionaries.insert(field.id, values);
        }
        Ok(file)
    }

    /// The schema stored in the file.
    pub fn schema(&self) -> &LanceSchema {
        &self.schema
    }

    /// The values of dictionary field `id`.
    pub fn dictionary(&self, id: i32) -> Option<&ArrayRef> {
        self.dictionaries.get(&id)
    }

    /// Rows in the file.
    pub fn num_rows(&self) -> u64 {
        *self.batch_offsets.last().expect("starts at 0")
    }

    /// Row offsets of the file's batches: 0 first, the row count last (older pylance's
    /// scalar indices address a page of an index file by its batch number).
    pub fn batch_offsets(&self) -> &[u64] {
        &self.batch_offsets
    }

    fn page_of(&self, field: &LanceField, batch: usize) -> Result<(u64, u64)> {
        let i = (field.id as i64 - self.min_id as i64) as usize;
        let nb = self.batch_offsets.len() - 1;
        if i >= self.num_ids || batch >= nb {
            return Err(corrupt(&self.path, format!("no page for field {} in batch {batch}", field.id)));
        }
        Ok(self.pages[i * nb + batch])
    }

    /// Rows of `field` from several batches, in order: `(batch, rows within it)` each.
    /// One array, built from one copy of the bytes (no per-batch arrays to concatenate).
    fn read_field(&self, field: &LanceField, segs: &[(usize, Range<usize>)]) -> Result<ArrayRef> {
        if let DataType::Struct(_) = &field.data_type {
            let n: usize = segs.iter().map(|(_, r)| r.len()).sum();
            let children =
                field.children.iter().map(|c| self.read_field(c, segs).map(|a| a.to_data())).collect::<Result<Vec<_>>>()?;
            return self.build(ArrayDataBuilder::new(field.data_type.clone()).len(n).child_data(children));
        }
        let segs = segs
            .iter()
            .map(|(b, rows)| Ok(Seg { page: self.page_of(field, *b)?, rows: rows.clone(), batch: *b }))
            .collect::<Result<Vec<_>>>()?;
        self.read_segments(field, &segs)
    }

    fn build(&self, data: ArrayDataBuilder) -> Result<ArrayRef> {
        data.build().map(make_array).map_err(|e| corrupt(&self.path, format!("decoded data is not valid Arrow: {e}")))
    }

    /// Bytes `range` of the file (checked against its size; as stored, unaligned).
    fn read_raw(&self, range: Range<u64>) -> Result<Buffer> {
        if range.end > self.size || range.start > range.end {
            return Err(corrupt(&self.path, format!("bytes {range:?} lie outside the file ({} bytes)", self.size)));
        }
        if range.is_empty() {
            return Ok(Buffer::from(MutableBuffer::new(0)));
        }
        self.io.read_range(range)
    }

    /// `w`-byte values of the segments, back to back in one aligned buffer.
    fn fixed_bytes(&self, segs: &[Seg], w: usize) -> Result<Buffer> {
        let n: usize = segs.iter().map(|s| s.rows.len()).sum();
        let mut out = MutableBuffer::new(n * w);
        for s in segs {
            let pos = s.page.0;
            out.extend_from_slice(self.read_raw(pos + (s.rows.start * w) as u64..pos + (s.rows.end * w) as u64)?.as_slice());
        }
        Ok(out.into())
    }

    fn read_segments(&self, field: &LanceField, segs: &[Seg]) -> Result<ArrayRef> {
        let dt = &field.data_type;
        let n: usize = segs.iter().map(|s| s.rows.len()).sum();
        for s in segs {
            let values_in_page = match dt {
                DataType::List(_) | DataType::LargeList(_) => s.page.1.saturating_sub(1),
                _ => s.page.1,
            };
            if s.rows.end as u64 > values_in_page {
                return Err(corrupt(
                    &self.path,
                    format!("rows {:?} of field {:?} in batch {}: its page holds {values_in_page}", s.rows, field.name, s.batch),
                ));
            }
        }
        match dt {
            DataType::Null => Ok(Arc::new(NullArray::new(n))),
            DataType::Dictionary(key, _) => {
                let values = self
                    .dictionaries
                    .get(&field.id)
                    .ok_or_else(|| corrupt(&self.path, format!("dictionary of {:?} is missing", field.name)))?;
                let w = fixed_byte_width(key).ok_or_else(|| corrupt(&self.path, format!("dictionary key type {key}")))?;
                let keys = self.fixed_bytes(segs, w)?;
                self.build(ArrayDataBuilder::new(dt.clone()).len(n).add_buffer(keys).add_child_data(values.to_data()))
            }
            DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary => {
                let large = matches!(dt, DataType::LargeUtf8 | DataType::LargeBinary);
                let mut data = MutableBuffer::new(0);
                let mut offsets = MutableBuffer::new((n + 1) * if large { 8 } else { 4 });
                let push = |offsets: &mut MutableBuffer, at: usize| -> Result<()> {
                    if large {
                        offsets.push(at as i64);
                    } else {
                        let at = i32::try_from(at)
                            .map_err(|_| corrupt(&self.path, format!("values of {:?} exceed 2 GiB", field.name)))?;
                        offsets.push(at);
                    }
                    Ok(())
                };
                push(&mut offsets, 0)?;
                let mut nulls = field.nullable.then(|| MutableBuffer::new_null(n));
                let mut row = 0usize;
                for s in segs {
                    let pos = s.page.0;
                    let raw = self.read_raw(pos + s.rows.start as u64 * 8..pos + (s.rows.end as u64 + 1) * 8)?;
                    let p: Vec<i64> =
                        raw.as_slice().chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
                    if p.windows(2).any(|w| w[1] < w[0]) || p[0] < 0 {
                        return Err(corrupt(&self.path, format!("positions of {:?} do not rise", field.name)));
                    }
                    let bytes = self.read_raw(p[0] as u64..p[p.len() - 1] as u64)?;
                    let base = data.len();
                    data.extend_from_slice(bytes.as_slice());
                    for (i, w) in p.windows(2).enumerate() {
                        push(&mut offsets, base + (w[1] - p[0]) as usize)?;
                        if let Some(nulls) = nulls.as_mut() {
                            if w[0] != w[1] {
                                bit_util::set_bit(nulls.as_slice_mut(), row + i);
                            }
                        }
                    }
                    row += s.rows.len();
                }
                let mut b = ArrayDataBuilder::new(dt.clone()).len(n).add_buffer(offsets.into()).add_buffer(data.into());
                if let Some(nulls) = nulls {
                    b = b.null_bit_buffer(Some(nulls.into()));
                }
                self.build(b)
            }
            DataType::List(_) | DataType::LargeList(_) => {
                let large = matches!(dt, DataType::LargeList(_));
                let w = if large { 8 } else { 4 };
                let mut offsets = MutableBuffer::new((n + 1) * w);
                let mut child_segs = Vec::with_capacity(segs.len());
                let mut total = 0i64;
                let push = |offsets: &mut MutableBuffer, at: i64| -> Result<()> {
                    if large {
                        offsets.push(at);
                    } else {
                        let at = i32::try_from(at)
                            .map_err(|_| corrupt(&self.path, format!("list {:?} holds over 2^31 items", field.name)))?;
                        offsets.push(at);
                    }
                    Ok(())
                };
                push(&mut offsets, 0)?;
                for s in segs {
                    let pos = s.page.0;
                    let raw = self.read_raw(pos + (s.rows.start * w) as u64..pos + ((s.rows.end + 1) * w) as u64)?;
                    let o: Vec<i64> = if large {
                        raw.as_slice().chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
                    } else {
                        raw.as_slice()
                            .chunks_exact(4)
                            .map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes")) as i64)
                            .collect()
                    };
                    if o[0] < 0 || o.windows(2).any(|w| w[1] < w[0]) {
                        return Err(corrupt(&self.path, format!("offsets of list {:?} do not rise from 0", field.name)));
                    }
                    for x in &o[1..] {
                        push(&mut offsets, total + (x - o[0]))?;
                    }
                    total += o[o.len() - 1] - o[0];
                    child_segs.push((s.batch, o[0] as usize..o[o.len() - 1] as usize));
                }
                let child = field
                    .children
                    .first()
                    .ok_or_else(|| corrupt(&self.path, format!("list {:?} has no item field", field.name)))?;
                let items = self.read_field(child, &child_segs)?;
                self.build(ArrayDataBuilder::new(dt.clone()).len(n).add_buffer(offsets.into()).add_child_data(items.to_data()))
            }
            DataType::Boolean => {
                let mut bits = BooleanBufferBuilder::new(n);
                for s in segs {
                    let pos = s.page.0;
                    let bytes = self.read_raw(pos + (s.rows.start / 8) as u64..pos + s.rows.end.div_ceil(8) as u64)?;
                    let first = s.rows.start % 8;
                    bits.append_packed_range(first..first + s.rows.len(), bytes.as_slice());
                }
                Ok(Arc::new(arrow_array::BooleanArray::new(bits.finish(), None)))
            }
            DataType::FixedSizeList(item, size) if item.data_type() == &DataType::Boolean => {
                let k = *size as usize;
                let bits = LanceField { data_type: DataType::Boolean, children: vec![], ..field.clone() };
                let item_segs: Vec<Seg> = segs
                    .iter()
                    .map(|s| Seg {
                        page: (s.page.0, s.page.1 * k as u64),
                        rows: s.rows.start * k..s.rows.end * k,
                        batch: s.batch,
                    })
                    .collect();
                let items = self.read_segments(&bits, &item_segs)?;
                self.build(ArrayDataBuilder::new(dt.clone()).len(n).add_child_data(items.to_data()))
            }
            dt => {
                let w = fixed_byte_width(dt)
                    .ok_or_else(|| Error::not_supported(format!("{}: type {dt} in a legacy (v1) file", self.path)))?;
                let bytes = self.fixed_bytes(segs, w)?;
                fixed_width_array(dt, bytes, n).map_err(|e| corrupt(&self.path, e))
            }
        }
    }

    /// Rows `start..start + len` of the top-level fields `fields`.
    pub fn read_range(&self, start: u64, len: u64, fields: &[usize]) -> Result<Vec<ArrayRef>> {
        let end = start + len;
        let mut segs = Vec::new();
        for b in 0..self.batch_offsets.len() - 1 {
            let (bs, be) = (self.batch_offsets[b], self.batch_offsets[b + 1]);
            let (s, e) = (start.max(bs), end.min(be));
            if s < e {
                segs.push((b, (s - bs) as usize..(e - bs) as usize));
            }
        }
        fields
            .iter()
            .map(|&fi| {
                let field = &self.schema.fields[fi];
                if segs.is_empty() {
                    Ok(new_empty_array(&field.data_type))
                } else {
                    self.read_field(field, &segs)
                }
            })
            .collect()
    }

    /// The rows at `indices` (any order, repeats allowed) of the top-level fields `fields`.
    pub fn take(&self, indices: &[u64], fields: &[usize]) -> Result<Vec<ArrayRef>> {
        if indices.is_empty() {
            return Ok(fields.iter().map(|&f| new_empty_array(&self.schema.fields[f].data_type)).collect());
        }
        if let Some(&bad) = indices.iter().find(|&&i| i >= self.num_rows()) {
            return Err(Error::IndexOutOfRange(format!(
                "row {bad} is out of range for {} ({} rows)",
                self.path,
                self.num_rows()
            )));
        }
        // Per batch, the span of rows asked for in it (read once), then the rows picked.
        let mut sorted = indices.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut spans: Vec<(usize, u64, u64, u64)> = Vec::new(); // (batch, first, end, position in the read rows)
        let mut b = 0usize;
        let mut read_rows = 0u64;
        for &i in &sorted {
            while self.batch_offsets[b + 1] <= i {
                b += 1;
            }
            match spans.last_mut() {
                Some(last) if last.0 == b => last.2 = i + 1,
                _ => {
                    if let Some(last) = spans.last() {
                        read_rows += last.2 - last.1;
                    }
                    spans.push((b, i, i + 1, read_rows));
                }
            }
        }
        let picks = indices
            .iter()
            .map(|&i| {
                let k = spans.partition_point(|s| s.1 <= i) - 1;
                let (_, s, _, at) = spans[k];
                u32::try_from(at + i - s).map_err(|_| Error::invalid_input("take of more than 2^32 rows"))
            })
            .collect::<Result<Vec<_>>>()?;
        let picks = UInt32Array::from(picks);
        let segs: Vec<(usize, Range<usize>)> = spans
            .iter()
            .map(|&(b, s, e, _)| {
                let bs = self.batch_offsets[b];
                (b, (s - bs) as usize..(e - bs) as usize)
            })
            .collect();
        fields
            .iter()
            .map(|&fi| {
                let all = self.read_field(&self.schema.fields[fi], &segs)?;
                Ok(arrow_select::take::take(all.as_ref(), &picks, None)?)
            })
            .collect()
    }
}

/// The length-prefixed message at `pos`, which must end by `limit`.
fn read_prefixed(io: &ReaderRef, path: &str, pos: u64, limit: u64, what: &str) -> Result<Buffer> {
    if pos.checked_add(4).is_none_or(|e| e > limit) {
        return Err(corrupt(path, format!("{what} position {pos} lies outside the file")));
    }
    let len = io.read_range(pos..pos + 4)?;
    let len = u32::from_le_bytes(len.as_slice().try_into().expect("4 bytes")) as u64;
    if pos + 4 + len > limit {
        return Err(corrupt(path, format!("{what} at {pos} claims {len} bytes, past its end ({limit})")));
    }
    io.read_range(pos + 4..pos + 4 + len)
}
