//! Writing legacy (v1) data files (see the module documentation for the layout).

use std::collections::{BTreeMap, HashMap};

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, OffsetSizeTrait, RecordBatch};
use arrow_buffer::BooleanBufferBuilder;
use arrow_schema::{DataType, SchemaRef};
use prost::Message;

use super::FOOTER_VERSION;
use crate::error::{Error, Result};
use crate::file::container::MAGIC;
use crate::file::writer::WrittenFile;
use crate::format::{filepb, tablepb};
use crate::io::uri::open_writer_with;
use crate::io::{StorageOptions, Writer};
use crate::schema::{LanceField, LanceSchema};

/// pylance's default number of rows per batch (`max_rows_per_group`) of a legacy file.
pub const DEFAULT_ROWS_PER_BATCH: usize = 1024;

/// Writes one legacy data file: batches of `rows_per_batch` rows (the last may be shorter).
pub struct LegacyWriter {
    out: Option<Box<dyn Writer>>,
    path: String,
    schema: LanceSchema,
    arrow_schema: SchemaRef,
    rows_per_batch: usize,
    /// Rows given but not yet written (less than one batch).
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    batch_offsets: Vec<i32>,
    /// field id → batch → (position, length).
    pages: BTreeMap<i32, BTreeMap<usize, (u64, u64)>>,
    /// Values of each dictionary field (one per file).
    dictionaries: HashMap<i32, ArrayRef>,
    num_rows: u64,
}

impl LegacyWriter {
    /// Creates the file at `uri` for batches of `schema` (whose field ids it keeps).
    pub fn try_new(uri: &str, schema: LanceSchema, rows_per_batch: usize, options: &StorageOptions) -> Result<Self> {
        if rows_per_batch == 0 {
            return Err(Error::invalid_input("max_rows_per_group must be positive"));
        }
        for f in schema.all_fields() {
            check_writable(f)?;
        }
        if schema.fields.is_empty() {
            return Err(Error::invalid_input("a legacy data file needs at least one field"));
        }
        let out = open_writer_with(uri, options)?;
        Ok(Self {
            out: Some(out),
            path: uri.to_string(),
            arrow_schema: schema.to_arrow(),
            schema,
            rows_per_batch,
            pending: Vec::new(),
            pending_rows: 0,
            batch_offsets: vec![0],
            pages: BTreeMap::new(),
            dictionaries: HashMap::new(),
            num_rows: 0,
        })
    }

    /// The Arrow schema of the file.
    pub fn schema(&self) -> SchemaRef {
        self.arrow_schema.clone()
    }

    /// Rows given so far.
    pub fn num_rows(&self) -> u64 {
        self.num_rows
    }

    /// Bytes written out so far (rows of an unfinished batch are not counted).
    pub fn written_size(&self) -> u64 {
        self.out.as_ref().map_or(0, |o| o.position())
    }

    /// Where the file is being written.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Adds rows; whole batches of `rows_per_batch` rows are written as they fill.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.out.is_none() {
            return Err(Error::invalid_input("the writer is already closed"));
        }
        if batch.num_columns() != self.schema.fields.len() {
            return Err(Error::SchemaMismatch(format!(
                "batch has {} columns, the file's schema {}",
                batch.num_columns(),
                self.schema.fields.len()
            )));
        }
        for (f, c) in self.schema.fields.iter().zip(batch.columns()) {
            if !same_type(c.data_type(), &f.data_type) {
                return Err(Error::SchemaMismatch(format!(
                    "column {:?} is {}, the file's schema says {}",
                    f.name,
                    c.data_type(),
                    f.data_type
                )));
            }
            check_nulls(f, c.as_ref())?;
        }
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.num_rows += batch.num_rows() as u64;
        self.pending.push(batch.clone());
        self.pending_rows += batch.num_rows();
        while self.pending_rows >= self.rows_per_batch {
            let group = self.take_rows(self.rows_per_batch)?;
            self.write_group(&group)?;
        }
        Ok(())
    }

    /// The first `n` pending rows (slices of the batches given; copied only where they
    /// span several of them).
    fn take_rows(&mut self, n: usize) -> Result<RecordBatch> {
        let mut parts = Vec::new();
        let mut need = n;
        while need > 0 {
            let first = self.pending.remove(0);
            if first.num_rows() > need {
                parts.push(first.slice(0, need));
                self.pending.insert(0, first.slice(need, first.num_rows() - need));
                need = 0;
            } else {
                need -= first.num_rows();
                parts.push(first);
            }
        }
        self.pending_rows -= n;
        if parts.len() == 1 {
            return Ok(parts.pop().expect("one"));
        }
        Self::concat(parts)
    }

    fn take_pending(&mut self) -> Result<RecordBatch> {
        let batches = std::mem::take(&mut self.pending);
        self.pending_rows = 0;
        if batches.len() == 1 {
            return Ok(batches.into_iter().next().expect("one"));
        }
        Self::concat(batches)
    }

    fn concat(batches: Vec<RecordBatch>) -> Result<RecordBatch> {
        let cols = (0..batches[0].num_columns())
            .map(|i| {
                let parts: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
                arrow_select::concat::concat(&parts).map_err(Error::from)
            })
            .collect::<Result<Vec<_>>>()?;
        let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(batches.iter().map(|b| b.num_rows()).sum()));
        RecordBatch::try_new_with_options(batches[0].schema(), cols, &opts).map_err(Error::from)
    }

    fn out(&mut self) -> &mut Box<dyn Writer> {
        self.out.as_mut().expect("writer open")
    }

    fn write_group(&mut self, batch: &RecordBatch) -> Result<()> {
        crate::interrupt::check()?;
        let batch_id = self.batch_offsets.len() - 1;
        let fields = self.schema.fields.clone();
        for (f, c) in fields.iter().zip(batch.columns()) {
            self.write_array(f, c, batch_id)?;
        }
        let last = *self.batch_offsets.last().expect("starts at 0");
        let next = i32::try_from(batch.num_rows() as i64 + last as i64)
            .map_err(|_| Error::invalid_input("a legacy data file holds at most 2^31 - 1 rows"))?;
        self.batch_offsets.push(next);
        Ok(())
    }

    fn page(&mut self, field: &LanceField, batch: usize, pos: u64, len: usize) {
        self.pages.entry(field.id).or_default().insert(batch, (pos, len as u64));
    }

    fn write_array(&mut self, field: &LanceField, array: &ArrayRef, batch: usize) -> Result<()> {
        let n = array.len();
        match &field.data_type {
            DataType::Null => {
                let pos = self.out().position();
                self.page(field, batch, pos, n);
            }
            DataType::Dictionary(_, _) => {
                let dict = array.as_any_dictionary();
                match self.dictionaries.get(&field.id) {
                    None => {
                        self.dictionaries.insert(field.id, dict.values().clone());
                    }
                    Some(v) if v.to_data() == dict.values().to_data() => {}
                    Some(_) => {
                        return Err(Error::not_supported(format!(
                            "dictionary column {:?}: a legacy data file holds one dictionary, and these batches \
                             have different ones (cast them to one dictionary or to the value type)",
                            field.name
                        )))
                    }
                }
                let pos = self.write_plain(dict.keys())?;
                self.page(field, batch, pos, n);
            }
            DataType::Utf8 | DataType::Binary => {
                let pos = self.write_binary::<i32>(array.as_ref())?;
                self.page(field, batch, pos, n);
            }
            DataType::LargeUtf8 | DataType::LargeBinary => {
                let pos = self.write_binary::<i64>(array.as_ref())?;
                self.page(field, batch, pos, n);
            }
            DataType::Struct(_) => {
                let s = array.as_struct();
                for (i, child) in field.children.iter().enumerate() {
                    self.write_array(child, s.column(i), batch)?;
                }
            }
            DataType::List(_) => self.write_list::<i32>(field, array.as_ref(), batch)?,
            DataType::LargeList(_) => self.write_list::<i64>(field, array.as_ref(), batch)?,
            _ => {
                let pos = self.write_plain(array.as_ref())?;
                self.page(field, batch, pos, n);
            }
        }
        Ok(())
    }

    /// Fixed-width values back to back (booleans as bits, nulls as false); returns where
    /// they start.
    fn write_plain(&mut self, array: &dyn Array) -> Result<u64> {
        let pos = self.out().position();
        self.write_plain_values(array)?;
        Ok(pos)
    }

    fn write_plain_values(&mut self, array: &dyn Array) -> Result<()> {
        match array.data_type() {
            DataType::Boolean => {
                let b = array.as_boolean();
                let mut bits = BooleanBufferBuilder::new(b.len());
                for v in b.iter() {
                    bits.append(v.unwrap_or(false));
                }
                let bits = bits.finish();
                self.out().write_all(bits.inner().as_slice())
            }
            DataType::FixedSizeList(_, size) => {
                let l = array.as_fixed_size_list();
                let size = *size as usize;
                let values = l.values().slice(l.value_offset_at(0) as usize, l.len() * size);
                self.write_plain_values(values.as_ref())
            }
            dt => {
                let w = crate::file::reader::fixed_byte_width(dt)
                    .ok_or_else(|| Error::not_supported(format!("type {dt} in a legacy data file")))?;
                let data = array.to_data();
                let bytes = &data.buffers()[0].as_slice()[data.offset() * w..(data.offset() + data.len()) * w];
                self.out().write_all(bytes)
            }
        }
    }

    /// The bytes of the values, then `n + 1` i64 absolute positions; returns where the
    /// positions start.
    fn write_binary<O: OffsetSizeTrait>(&mut self, array: &dyn Array) -> Result<u64> {
        let data = array.to_data();
        let offsets: &[O] = &data.buffer::<O>(0)[data.offset()..data.offset() + data.len() + 1];
        let (first, last) = (offsets[0].as_usize(), offsets[data.len()].as_usize());
        let start = self.out().position();
        self.out().write_all(&data.buffers()[1].as_slice()[first..last])?;
        let mut positions = Vec::with_capacity((data.len() + 1) * 8);
        for o in offsets {
            positions.extend_from_slice(&((o.as_usize() - first) as u64 + start).to_le_bytes());
        }
        let pos = self.out().position();
        self.out().write_all(&positions)?;
        Ok(pos)
    }

    /// The list's offsets (from 0; `n + 1` of them), then its items as the child field.
    fn write_list<O: OffsetSizeTrait>(&mut self, field: &LanceField, array: &dyn Array, batch: usize) -> Result<()> {
        let l = array.as_list::<O>();
        let offsets = l.value_offsets();
        let first = offsets[0].as_usize();
        let last = offsets[offsets.len() - 1].as_usize();
        let mut bytes = Vec::with_capacity(offsets.len() * O::get_byte_width());
        for o in offsets {
            let rel = o.as_usize() - first;
            if O::IS_LARGE {
                bytes.extend_from_slice(&(rel as i64).to_le_bytes());
            } else {
                bytes.extend_from_slice(&(rel as i32).to_le_bytes());
            }
        }
        let pos = self.out().position();
        self.out().write_all(&bytes)?;
        self.page(field, batch, pos, offsets.len());
        let child = field.children.first().ok_or_else(|| Error::Internal(format!("list {:?} has no item field", field.name)))?;
        self.write_array(child, &l.values().slice(first, last - first), batch)
    }

    /// Writes what is pending, the page table, dictionaries, schema, metadata and footer.
    pub fn finish(&mut self) -> Result<WrittenFile> {
        if self.out.is_none() {
            return Err(Error::invalid_input("the writer is already closed"));
        }
        if self.pending_rows > 0 {
            let all = self.take_pending()?;
            self.write_group(&all)?;
        }
        let num_batches = self.batch_offsets.len() - 1;
        let all = self.schema.all_fields();
        let min_id = all.iter().map(|f| f.id).min().unwrap_or(0);
        let max_id = all.iter().map(|f| f.id).max().unwrap_or(-1);
        let page_table_position = self.out().position();
        let mut table = Vec::new();
        for id in min_id..=max_id {
            for b in 0..num_batches {
                let (pos, len) = self.pages.get(&id).and_then(|p| p.get(&b)).copied().unwrap_or((0, 0));
                table.extend_from_slice(&pos.to_le_bytes());
                table.extend_from_slice(&len.to_le_bytes());
            }
        }
        self.out().write_all(&table)?;
        let mut pb_fields = self.schema.to_pb_fields()?;
        let mut dict_ids: Vec<i32> = self.dictionaries.keys().copied().collect();
        dict_ids.sort_unstable();
        for id in dict_ids {
            let values = self.dictionaries[&id].clone();
            let pos = match values.data_type() {
                DataType::Utf8 | DataType::Binary => self.write_binary::<i32>(values.as_ref())?,
                DataType::LargeUtf8 | DataType::LargeBinary => self.write_binary::<i64>(values.as_ref())?,
                dt if dt.is_numeric() => self.write_plain(values.as_ref())?,
                dt => return Err(Error::not_supported(format!("dictionary values of type {dt} in a legacy data file"))),
            };
            if let Some(f) = pb_fields.iter_mut().find(|f| f.id == id) {
                f.dictionary = Some(filepb::Dictionary { offset: pos as i64, length: values.len() as i64 });
            }
        }
        let manifest = tablepb::Manifest {
            fields: pb_fields,
            schema_metadata: self.schema.pb_metadata(),
            writer_version: Some(tablepb::manifest::WriterVersion {
                library: "lancepy".to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                ..Default::default()
            }),
            data_format: Some(tablepb::manifest::DataStorageFormat {
                file_format: "lance".to_string(),
                version: "0.1".to_string(),
            }),
            ..Default::default()
        };
        let manifest_position = self.write_prefixed(&manifest.encode_to_vec())?;
        let metadata = filepb::Metadata {
            manifest_position,
            batch_offsets: self.batch_offsets.clone(),
            page_table_position,
            statistics: None,
        };
        let metadata_position = self.write_prefixed(&metadata.encode_to_vec())?;
        let mut footer = Vec::with_capacity(super::FOOTER_LEN);
        footer.extend_from_slice(&metadata_position.to_le_bytes());
        footer.extend_from_slice(&FOOTER_VERSION.0.to_le_bytes());
        footer.extend_from_slice(&FOOTER_VERSION.1.to_le_bytes());
        footer.extend_from_slice(MAGIC);
        self.out().write_all(&footer)?;
        let size = self.out.take().expect("writer open").finish()?;
        Ok(WrittenFile { num_rows: self.num_rows, size })
    }

    fn write_prefixed(&mut self, msg: &[u8]) -> Result<u64> {
        let len = u32::try_from(msg.len()).map_err(|_| Error::invalid_input("legacy file metadata larger than 4 GiB"))?;
        let pos = self.out().position();
        self.out().write_all(&len.to_le_bytes())?;
        self.out().write_all(msg)?;
        Ok(pos)
    }
}

/// Appends the values of a dictionary to `out` (whose first byte lies at `base` in its
/// file) as a legacy page: plain for numbers, var-binary for strings and binaries (whose
/// positions are absolute in that file). Returns the page's position, as a field's
/// `Dictionary.offset` records it. Manifests of legacy datasets hold their dictionaries so.
pub fn encode_dictionary_values(values: &dyn Array, base: u64, out: &mut Vec<u8>) -> Result<u64> {
    fn binary<O: OffsetSizeTrait>(values: &dyn Array, base: u64, out: &mut Vec<u8>) -> u64 {
        let data = values.to_data();
        let offsets: &[O] = &data.buffer::<O>(0)[data.offset()..data.offset() + data.len() + 1];
        let (first, last) = (offsets[0].as_usize(), offsets[data.len()].as_usize());
        let start = base + out.len() as u64;
        out.extend_from_slice(&data.buffers()[1].as_slice()[first..last]);
        let pos = base + out.len() as u64;
        for o in offsets {
            out.extend_from_slice(&((o.as_usize() - first) as u64 + start).to_le_bytes());
        }
        pos
    }
    Ok(match values.data_type() {
        DataType::Utf8 | DataType::Binary => binary::<i32>(values, base, out),
        DataType::LargeUtf8 | DataType::LargeBinary => binary::<i64>(values, base, out),
        dt if dt.is_numeric() => {
            let w = crate::file::reader::fixed_byte_width(dt).expect("numbers are fixed-width");
            let data = values.to_data();
            let pos = base + out.len() as u64;
            out.extend_from_slice(&data.buffers()[0].as_slice()[data.offset() * w..(data.offset() + data.len()) * w]);
            pos
        }
        dt => return Err(Error::not_supported(format!("dictionary values of type {dt} in a legacy dataset"))),
    })
}

/// Whether the legacy format can store `field` (pylance's v1 writer's types).
fn check_writable(field: &LanceField) -> Result<()> {
    let ok = match &field.data_type {
        DataType::FixedSizeList(item, _) => {
            crate::file::reader::fixed_byte_width(item.data_type()).is_some() || item.data_type() == &DataType::Boolean
        }
        // (pylance 14 writes dictionaries of numbers too but cannot read them back)
        DataType::Dictionary(k, v) => {
            k.is_integer() && matches!(**v, DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary)
        }
        DataType::Map(_, _) | DataType::ListView(_) | DataType::LargeListView(_) | DataType::Union(_, _) => false,
        DataType::Utf8View | DataType::BinaryView | DataType::RunEndEncoded(_, _) => false,
        DataType::Null | DataType::Boolean | DataType::Struct(_) | DataType::List(_) | DataType::LargeList(_) => true,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => true,
        dt => crate::file::reader::fixed_byte_width(dt).is_some(),
    };
    if !ok {
        return Err(Error::not_supported(format!(
            "column {:?} of type {}: the legacy (v1) file format cannot store it",
            field.name, field.data_type
        )));
    }
    if crate::schema::is_blob_metadata(&field.metadata) {
        return Err(Error::not_supported(format!(
            "blob column {:?}: lancepy writes blob columns in file versions 2.0 and above only",
            field.name
        )));
    }
    Ok(())
}

/// Batch column types that fit a field (list item names and nullability aside).
fn same_type(got: &DataType, want: &DataType) -> bool {
    match (got, want) {
        (DataType::List(a), DataType::List(b)) | (DataType::LargeList(a), DataType::LargeList(b)) => {
            same_type(a.data_type(), b.data_type())
        }
        (DataType::FixedSizeList(a, n), DataType::FixedSizeList(b, m)) => n == m && same_type(a.data_type(), b.data_type()),
        (DataType::Struct(a), DataType::Struct(b)) => {
            a.len() == b.len()
                && a.iter().zip(b.iter()).all(|(x, y)| x.name() == y.name() && same_type(x.data_type(), y.data_type()))
        }
        _ => got == want,
    }
}

/// Nulls in a non-nullable field are refused (as pylance's writer refuses them).
fn check_nulls(field: &LanceField, array: &dyn Array) -> Result<()> {
    if !field.nullable && array.null_count() > 0 {
        return Err(Error::invalid_input(format!(
            "The field `{}` contained null values even though the field is marked non-null in the schema",
            field.name
        )));
    }
    match array.data_type() {
        DataType::Struct(_) => {
            let s = array.as_struct();
            for (c, a) in field.children.iter().zip(s.columns()) {
                check_nulls(c, a.as_ref())?;
            }
        }
        DataType::List(_) => {
            if let Some(c) = field.children.first() {
                check_nulls(c, array.as_list::<i32>().values().as_ref())?;
            }
        }
        DataType::LargeList(_) => {
            if let Some(c) = field.children.first() {
                check_nulls(c, array.as_list::<i64>().values().as_ref())?;
            }
        }
        _ => {}
    }
    Ok(())
}
