//! Writing Lance files.
//!
//! Batches are split into columns (one per leaf in 2.1+, one per field in 2.0) and buffered
//! per column until about `max_page_bytes` (default 8 MiB) have accumulated; the column then
//! becomes a page: its encoding is chosen from the data ([`super::strategy`]), pages of
//! several columns are encoded in parallel, and their buffers are appended to the file,
//! each 64-byte aligned. `finish` writes the schema, the column metadata, the offset tables
//! and the footer.

use arrow_array::{make_array, Array, ArrayRef, RecordBatch};
use arrow_data::transform::MutableArrayData;
use arrow_schema::{DataType, Schema, SchemaRef};
use prost::Message;

use super::container::{pad_len, FileVersion, Footer, BUFFER_ALIGNMENT, PAD_BYTE};
use crate::error::{Error, Result};
use crate::format::{enc20, file2, filepb, TYPE_URL_COLUMN_ENCODING};
use crate::io::{open_writer_with, StorageOptions, Writer};
use crate::schema::{LanceField, LanceSchema};
use crate::structural::blob::{blob_page, legacy_descriptions, legacy_null_rows};
use crate::structural::page::EncodedPage;
use crate::structural::shred::{leaf_paths, shred};
use crate::structural::strategy::{encode_leaf_page, encode_page};
use crate::structural::v2_0_nested::{self, ColumnPiece};

/// Default bytes buffered per column before a page is written.
pub const DEFAULT_MAX_PAGE_BYTES: u64 = 8 * 1024 * 1024;

/// Options of a [`FileWriter`].
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// Format version to write.
    pub version: FileVersion,
    /// Bytes buffered per column before a page is cut.
    pub max_page_bytes: u64,
    /// Options of the object store the file goes to (credentials, endpoint, ...).
    pub storage_options: StorageOptions,
}

impl Default for WriterOptions {
    fn default() -> Self {
        Self { version: FileVersion::DEFAULT, max_page_bytes: DEFAULT_MAX_PAGE_BYTES, storage_options: StorageOptions::new() }
    }
}

/// Buffered arrays of one top-level field, and the file columns it writes.
struct FieldBuffer {
    field: LanceField,
    /// Leaf fields (2.1+; the field itself when flat or in 2.0), one per column.
    leaves: Vec<LanceField>,
    first_column: usize,
    arrays: Vec<ArrayRef>,
    bytes: u64,
    rows: u64,
    /// A legacy blob column (2.0 / 2.1): the packed struct of descriptions its pages hold
    /// (its values are written out of line as they arrive; `arrays` buffers descriptions).
    blob: Option<LanceField>,
}

/// Pages written so far for one file column.
#[derive(Default)]
struct ColumnState {
    pages: Vec<file2::column_metadata::Page>,
    written_rows: u64,
    /// Rows of a 2.0 struct column, whose one page is written by `finish`.
    struct_rows: Option<u64>,
    /// A 2.0 blob column (its column encoding says so).
    blob: bool,
}

/// Statistics of a finished file.
#[derive(Debug, Clone, Copy)]
pub struct WrittenFile {
    /// Rows written.
    pub num_rows: u64,
    /// Size of the file in bytes.
    pub size: u64,
}

/// Writes one Lance file.
pub struct FileWriter {
    out: Option<Box<dyn Writer>>,
    /// Set when flushing failed (or was interrupted) part-way: buffered data is gone and
    /// pages may be missing, so the file can only be abandoned.
    broken: bool,
    path: String,
    options: WriterOptions,
    schema: LanceSchema,
    arrow_schema: SchemaRef,
    fields: Vec<FieldBuffer>,
    columns: Vec<ColumnState>,
    num_rows: u64,
    /// Global buffers after the schema's (buffer 0), written by `finish` in this order.
    extra_buffers: Vec<Vec<u8>>,
}

fn any_bytes(type_url: &str, value: Vec<u8>) -> file2::Encoding {
    let any = prost_types::Any { type_url: type_url.to_string(), value };
    file2::Encoding {
        location: Some(file2::encoding::Location::Direct(file2::DirectEncoding { encoding: any.encode_to_vec().into() })),
    }
}

impl FileWriter {
    /// Creates a file at `uri` for batches of `schema` (field ids numbered from 0).
    pub fn try_new(uri: &str, schema: &Schema, options: WriterOptions) -> Result<Self> {
        let lance = LanceSchema::from_arrow(schema)?;
        Self::try_new_with_lance_schema(uri, lance, options)
    }

    /// Creates a file whose schema (with its field ids) is given.
    pub fn try_new_with_lance_schema(uri: &str, schema: LanceSchema, options: WriterOptions) -> Result<Self> {
        let arrow_schema = schema.to_arrow();
        if options.version == FileVersion::Legacy {
            return Err(Error::not_supported(
                "the file writer writes file versions 2.0, 2.1 and 2.2; legacy (v1) files are written for datasets only \
                 (write_dataset(..., data_storage_version=\"legacy\"))",
            ));
        }
        if options.version < FileVersion::V2_2 {
            if let Some(f) = schema
                .all_fields()
                .into_iter()
                .find(|f| matches!(f.data_type, DataType::FixedSizeList(_, _)) && !f.children.is_empty())
            {
                return Err(Error::not_supported(format!(
                    "fixed-size list of structs {:?} needs file version 2.2 (\"stable\")",
                    f.name
                )));
            }
            if let Some(m) = schema.all_fields().into_iter().find(|f| matches!(f.data_type, DataType::Map(_, _))) {
                return Err(Error::not_supported(format!(
                    "map column {:?} needs file version 2.2 (\"stable\"); version {} cannot store maps",
                    m.name, options.version
                )));
            }
        }
        let mut fields = Vec::new();
        let mut num_columns = 0;
        for f in &schema.fields {
            let leaves = column_fields(f, options.version)?;
            let blob = f.is_legacy_blob().then(|| LanceField {
                nullable: false, // null values are described, not null descriptions
                ..f.legacy_blob_file_field()
            });
            fields.push(FieldBuffer {
                blob,
                field: f.clone(),
                first_column: num_columns,
                leaves: leaves.clone(),
                arrays: vec![],
                bytes: 0,
                rows: 0,
            });
            num_columns += leaves.len();
        }
        let columns = fields
            .iter()
            .flat_map(|f| f.leaves.iter().map(move |c| (f, c)))
            .map(|(f, c)| ColumnState {
                struct_rows: (!options.version.is_structural() && v2_0_nested::is_struct_column(c)).then_some(0),
                blob: !options.version.is_structural() && f.blob.is_some(),
                ..ColumnState::default()
            })
            .collect();
        let out = open_writer_with(uri, &options.storage_options)?;
        Ok(Self {
            out: Some(out),
            broken: false,
            path: uri.to_string(),
            options,
            schema,
            arrow_schema,
            fields,
            columns,
            num_rows: 0,
            extra_buffers: Vec::new(),
        })
    }

    /// The Arrow schema of the file.
    pub fn schema(&self) -> SchemaRef {
        self.arrow_schema.clone()
    }

    /// The Lance schema (with field ids) of the file.
    pub fn lance_schema(&self) -> &LanceSchema {
        &self.schema
    }

    /// Rows written so far.
    pub fn num_rows(&self) -> u64 {
        self.num_rows
    }

    /// Bytes written out so far (pages flushed; what is still buffered not counted).
    pub fn written_size(&self) -> u64 {
        self.out.as_ref().map_or(0, |o| o.position())
    }

    /// About the size the file would have if finished now: the pages written so far plus the
    /// in-memory size of what is still buffered (an upper bound of its encoded size).
    pub fn estimated_size(&self) -> u64 {
        self.out.as_ref().map_or(0, |o| o.position()) + self.fields.iter().map(|f| f.bytes).sum::<u64>()
    }

    /// The version being written.
    pub fn version(&self) -> FileVersion {
        self.options.version
    }

    /// `batch` with JSON text (`arrow.json`, or strings) in the file's JSON columns
    /// (`lance.json`) stored as JSONB, as pylance's file writer stores it; `None` when the
    /// file has no JSON column or the batch's columns are stored already.
    fn stored_json(&self, batch: &RecordBatch) -> Result<Option<RecordBatch>> {
        use crate::jsonb::arrow::{has_lance_json, to_stored_array};
        let want = &self.arrow_schema;
        if !want.fields().iter().any(|f| has_lance_json(f)) || batch.num_columns() != want.fields().len() {
            return Ok(None); // (a batch of another shape is refused by check_batch)
        }
        let mut changed = false;
        let mut fields = batch.schema().fields().to_vec();
        let mut columns = batch.columns().to_vec();
        for (i, w) in want.fields().iter().enumerate() {
            if has_lance_json(w) && fields[i].data_type() != w.data_type() {
                columns[i] = to_stored_array(&columns[i], w)?;
                fields[i] = w.clone();
                changed = true;
            }
        }
        if !changed {
            return Ok(None);
        }
        let schema = std::sync::Arc::new(Schema::new_with_metadata(fields, batch.schema().metadata().clone()));
        Ok(Some(RecordBatch::try_new(schema, columns)?))
    }

    /// Checks that `batch` matches the file's schema.
    fn check_batch(&self, batch: &RecordBatch) -> Result<()> {
        let want = &self.arrow_schema;
        let got = batch.schema();
        let names = |s: &Schema| s.fields().iter().map(|f| format!("{}: {}", f.name(), f.data_type())).collect::<Vec<_>>();
        let mismatch =
            || Error::SchemaMismatch(format!("batch schema {:?} does not match the file schema {:?}", names(&got), names(want)));
        if got.fields().len() != want.fields().len() {
            return Err(mismatch());
        }
        for (g, w) in got.fields().iter().zip(want.fields()) {
            if g.name() != w.name() || !types_compatible(g.data_type(), w.data_type()) {
                return Err(mismatch());
            }
        }
        if !self.options.version.is_structural() {
            for (f, a) in self.fields.iter().zip(batch.columns()) {
                v2_0_nested::check_struct_validity(a, &f.field)?;
            }
        }
        for (i, w) in want.fields().iter().enumerate() {
            if !w.is_nullable() && batch.column(i).null_count() > 0 {
                return Err(Error::SchemaMismatch(format!(
                    "column {:?} is not nullable but the batch has {} nulls in it",
                    w.name(),
                    batch.column(i).null_count()
                )));
            }
        }
        Ok(())
    }

    /// Appends a batch.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.out.is_none() {
            return Err(Error::invalid_input("the writer is already closed"));
        }
        self.check_not_broken()?;
        let stored;
        let batch = match self.stored_json(batch)? {
            Some(b) => {
                stored = b;
                &stored
            }
            None => batch,
        };
        self.check_batch(batch)?;
        if batch.num_rows() == 0 {
            return Ok(());
        }
        // Before anything is buffered: an interrupt here leaves the writer as it was.
        crate::interrupt::check()?;
        let mut columns = batch.columns().to_vec();
        for fi in 0..self.fields.len() {
            if self.fields[fi].blob.is_some() {
                // Legacy blob values go into the file now; their descriptions are buffered.
                let structural = self.options.version.is_structural();
                let r = legacy_descriptions(columns[fi].as_ref(), structural, |b| self.write_inline_bytes(b));
                self.broken |= r.is_err();
                columns[fi] = r?;
            }
        }
        for (f, a) in self.fields.iter_mut().zip(columns) {
            f.bytes += a.to_data().get_slice_memory_size().unwrap_or(a.get_array_memory_size()) as u64;
            f.rows += a.len() as u64;
            f.arrays.push(a);
        }
        self.num_rows += batch.num_rows() as u64;
        let full: Vec<usize> = (0..self.fields.len()).filter(|&i| self.fields[i].bytes >= self.options.max_page_bytes).collect();
        self.flush_or_break(&full)?;
        // What stays buffered is copied out of the caller's batch. An imported batch (Arrow C
        // Data) frees all its columns together, so a narrow column's slice waiting for its page
        // to fill would otherwise pin every wide column of every batch it came from: a stream
        // of embeddings then held the whole input in memory. The copy is bounded by a page.
        for f in &mut self.fields {
            if let Some(last) = f.arrays.last_mut() {
                *last = owned_copy(last)?;
            }
        }
        Ok(())
    }

    fn check_not_broken(&self) -> Result<()> {
        if self.broken {
            return Err(Error::invalid_input(format!(
                "an earlier write to {} failed or was interrupted; the file is incomplete and cannot be finished",
                self.path
            )));
        }
        Ok(())
    }

    /// [`Self::flush`], marking the writer broken if it fails.
    fn flush_or_break(&mut self, fields: &[usize]) -> Result<()> {
        let r = self.flush(fields);
        self.broken |= r.is_err();
        r
    }

    /// Encodes the buffered data of `fields` into pages (fields in parallel) and writes them.
    fn flush(&mut self, fields: &[usize]) -> Result<()> {
        let version = self.options.version;
        let max_page_bytes = self.options.max_page_bytes;
        let nonempty: Vec<usize> = fields.iter().copied().filter(|&i| self.fields[i].rows > 0).collect();
        let jobs: Vec<(usize, LanceField, Vec<LanceField>, Vec<ArrayRef>, bool)> = nonempty
            .iter()
            .map(|&i| {
                let f = &mut self.fields[i];
                f.bytes = 0;
                f.rows = 0;
                let arrays = std::mem::take(&mut f.arrays);
                match &f.blob {
                    Some(d) => (f.first_column, d.clone(), vec![d.clone()], arrays, true),
                    None => (f.first_column, f.field.clone(), f.leaves.clone(), arrays, false),
                }
            })
            .collect();
        let parallel = jobs.len() > 1;
        let encoded = crate::parallel::map(jobs, parallel, |(first_column, field, leaves, arrays, blob)| {
            let pages = encode_field_pages(&field, &leaves, &arrays, version, max_page_bytes)?;
            if !(blob && version.is_structural()) {
                return Ok::<_, Error>((first_column, pages));
            }
            // Blob pages: their outer layer says whether the page has null rows (as pylance).
            let nulls = legacy_null_rows(&arrays)?;
            let mut row = 0usize;
            let pages = pages
                .into_iter()
                .map(|p| match p {
                    ColumnPiece::Page(c, page) => {
                        let n = page.num_rows as usize;
                        let has_nulls = nulls.get(row..row + n).is_some_and(|r| r.iter().any(|&x| x));
                        row += n;
                        Ok(ColumnPiece::Page(c, blob_page(page, has_nulls)?))
                    }
                    p => Ok(p),
                })
                .collect::<Result<Vec<_>>>()?;
            Ok::<_, Error>((first_column, pages))
        });
        for r in encoded {
            let (first_column, pieces) = r?;
            for piece in pieces {
                match piece {
                    ColumnPiece::Page(col, page) => self.write_page(first_column + col, page)?,
                    ColumnPiece::StructRows(col, rows) => {
                        let c = &mut self.columns[first_column + col];
                        c.struct_rows = Some(c.struct_rows.unwrap_or(0) + rows);
                    }
                }
            }
        }
        Ok(())
    }

    fn write_page(&mut self, col: usize, page: EncodedPage) -> Result<()> {
        let out = self.out.as_mut().expect("writer open");
        let mut offsets = Vec::with_capacity(page.buffers.len());
        let mut sizes = Vec::with_capacity(page.buffers.len());
        for buf in &page.buffers {
            let pos = out.position();
            debug_assert_eq!(pos % BUFFER_ALIGNMENT, 0);
            out.write_all(buf)?;
            offsets.push(pos);
            sizes.push(buf.len() as u64);
            let pad = pad_len(out.position(), BUFFER_ALIGNMENT) as usize;
            out.write_all(&[PAD_BYTE; 64][..pad])?;
        }
        let c = &mut self.columns[col];
        let priority = if self.options.version.is_structural() { c.written_rows } else { 0 };
        c.pages.push(file2::column_metadata::Page {
            buffer_offsets: offsets,
            buffer_sizes: sizes,
            length: page.num_rows,
            encoding: Some(any_bytes(&page.type_url, page.encoding)),
            priority,
        });
        c.written_rows += page.num_rows;
        Ok(())
    }

    /// Adds a global buffer (written with the footer) and returns its number: 1 for the first
    /// (buffer 0 is the schema), then 2, 3, ...
    pub fn add_global_buffer(&mut self, bytes: Vec<u8>) -> Result<u32> {
        if self.out.is_none() {
            return Err(Error::invalid_input("the writer is already closed"));
        }
        self.extra_buffers.push(bytes);
        Ok(self.extra_buffers.len() as u32)
    }

    /// Writes `bytes` into the file now, 64-byte aligned, outside any page (a blob-v2
    /// column's inline values); returns their absolute position.
    pub fn write_inline_bytes(&mut self, bytes: &[u8]) -> Result<u64> {
        self.check_not_broken()?;
        let out = self.out.as_mut().ok_or_else(|| Error::invalid_input("the writer is already closed"))?;
        let pad = pad_len(out.position(), BUFFER_ALIGNMENT) as usize;
        out.write_all(&[PAD_BYTE; 64][..pad])?;
        let pos = out.position();
        out.write_all(bytes)?;
        let pad = pad_len(out.position(), BUFFER_ALIGNMENT) as usize;
        out.write_all(&[PAD_BYTE; 64][..pad])?;
        Ok(pos)
    }

    /// Sets a schema-level metadata entry (stored with the schema when the file is finished).
    pub fn add_schema_metadata(&mut self, key: &str, value: &str) -> Result<()> {
        if self.out.is_none() {
            return Err(Error::invalid_input("the writer is already closed"));
        }
        self.schema.metadata.insert(key.to_string(), value.to_string());
        Ok(())
    }

    /// Flushes everything and writes the footer. Returns what was written.
    pub fn finish(&mut self) -> Result<WrittenFile> {
        if self.out.is_none() {
            return Err(Error::invalid_input("the writer is already closed"));
        }
        self.check_not_broken()?;
        let all: Vec<usize> = (0..self.fields.len()).collect();
        self.flush_or_break(&all)?;
        // 2.0 struct columns: one page with all their rows (as pylance writes them).
        for col in 0..self.columns.len() {
            if let Some(rows) = self.columns[col].struct_rows.take() {
                self.write_page(col, v2_0_nested::struct_page(rows))?;
            }
        }
        let mut out = self.out.take().expect("writer open");
        let descriptor = filepb::FileDescriptor {
            schema: Some(filepb::Schema { fields: self.schema.to_pb_fields()?, metadata: self.schema.pb_metadata() }),
            length: self.num_rows,
        };
        let gb0_pos = out.position();
        let gb0 = descriptor.encode_to_vec();
        out.write_all(&gb0)?;
        let mut buffers = vec![(gb0_pos, gb0.len() as u64)];
        for b in std::mem::take(&mut self.extra_buffers) {
            // Global buffers start 64-byte aligned (pylance's reader insists on it).
            let pad = pad_len(out.position(), BUFFER_ALIGNMENT) as usize;
            out.write_all(&[PAD_BYTE; 64][..pad])?;
            buffers.push((out.position(), b.len() as u64));
            out.write_all(&b)?;
        }
        let column_meta_start = out.position();
        use enc20::column_encoding::ColumnEncoding as Ce;
        let values = enc20::ColumnEncoding { column_encoding: Some(Ce::Values(())) };
        let column_encoding = any_bytes(TYPE_URL_COLUMN_ENCODING, values.encode_to_vec());
        // A 2.0 blob column: `blob{inner: values}`.
        let blob_encoding = any_bytes(
            TYPE_URL_COLUMN_ENCODING,
            enc20::ColumnEncoding { column_encoding: Some(Ce::Blob(Box::new(enc20::Blob { inner: Some(Box::new(values)) }))) }
                .encode_to_vec(),
        );
        let mut cmo = Vec::with_capacity(self.columns.len());
        for c in &mut self.columns {
            let meta = file2::ColumnMetadata {
                encoding: Some(if c.blob { blob_encoding.clone() } else { column_encoding.clone() }),
                pages: std::mem::take(&mut c.pages),
                buffer_offsets: vec![],
                buffer_sizes: vec![],
            };
            let bytes = meta.encode_to_vec();
            cmo.push((out.position(), bytes.len() as u64));
            out.write_all(&bytes)?;
        }
        let cmo_table_pos = out.position();
        for (pos, len) in &cmo {
            out.write_all(&pos.to_le_bytes())?;
            out.write_all(&len.to_le_bytes())?;
        }
        let gbo_table_pos = out.position();
        for (pos, len) in &buffers {
            out.write_all(&pos.to_le_bytes())?;
            out.write_all(&len.to_le_bytes())?;
        }
        let (major, minor) = self.options.version.footer_version();
        let footer = Footer {
            column_meta_start,
            cmo_table_pos,
            gbo_table_pos,
            num_global_buffers: buffers.len() as u32,
            num_columns: cmo.len() as u32,
            major,
            minor,
        };
        out.write_all(&footer.to_bytes())?;
        let size = out.finish()?;
        Ok(WrittenFile { num_rows: self.num_rows, size })
    }

    /// Where the file is being written.
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// Whether a batch column of type `got` may be written to a field of type `want`.
fn types_compatible(got: &DataType, want: &DataType) -> bool {
    match (got, want) {
        // Fixed-size lists read back with a nullable child named "item"; accept any child
        // name/nullability with the same item type and size.
        (DataType::FixedSizeList(a, n), DataType::FixedSizeList(b, m)) => {
            n == m && types_compatible(a.data_type(), b.data_type())
        }
        (DataType::List(a), DataType::List(b)) | (DataType::LargeList(a), DataType::LargeList(b)) => {
            a.name() == b.name() && types_compatible(a.data_type(), b.data_type())
        }
        (DataType::Struct(a), DataType::Struct(b)) => {
            a.len() == b.len()
                && a.iter().zip(b.iter()).all(|(x, y)| x.name() == y.name() && types_compatible(x.data_type(), y.data_type()))
        }
        _ => got == want,
    }
}

/// The fields that become file columns for top-level field `f`: its leaves in 2.1+ (the
/// field itself when flat), every field in pre-order in 2.0 (except the children of packed
/// structs and fixed-size lists; see [`v2_0_nested::column_fields`]).
fn column_fields(f: &LanceField, version: FileVersion) -> Result<Vec<LanceField>> {
    if !version.is_structural() {
        v2_0_nested::check_writable(f)?;
        return Ok(v2_0_nested::column_fields(f).into_iter().cloned().collect());
    }
    let mut all = Vec::new();
    f.walk(&mut all);
    if all.len() == 1 || f.is_packed_struct() {
        return Ok(vec![f.clone()]);
    }
    leaf_paths(f)?; // rejects structures that cannot be written
    Ok(f.leaf_fields().into_iter().cloned().collect())
}

/// Encodes the buffered arrays of one top-level field into pages of about `max_page_bytes`
/// each: pages (by column index within the field) in write order.
fn encode_field_pages(
    field: &LanceField,
    leaves: &[LanceField],
    arrays: &[ArrayRef],
    version: FileVersion,
    max_page_bytes: u64,
) -> Result<Vec<ColumnPiece>> {
    let array = concat(arrays)?;
    if !version.is_structural() {
        return v2_0_nested::encode_field(&array, field, max_page_bytes);
    }
    let bytes = array.to_data().get_slice_memory_size().unwrap_or(array.get_array_memory_size()) as u64;
    let pages = bytes.div_ceil(max_page_bytes).max(1) as usize;
    let rows_per_page = array.len().div_ceil(pages).max(1);
    let flat = leaves.len() == 1 && field.children.is_empty();
    let bounds: Vec<(usize, usize)> =
        (0..array.len()).step_by(rows_per_page).map(|s| (s, rows_per_page.min(array.len() - s))).collect();
    // Pages are encoded in parallel; their order in the file is kept.
    let parallel = bounds.len() > 1;
    if flat {
        let pages = crate::parallel::map(bounds, parallel, |(s, len)| {
            crate::interrupt::check()?;
            encode_page(&array.slice(s, len), field, version)
        });
        return pages.into_iter().map(|p| Ok(ColumnPiece::Page(0, p?))).collect();
    }
    // Nested columns are shredded once; every page of a leaf uses the same rep/def layers
    // (as pylance does), derived from all of the buffered data.
    let shredded = shred(&array, field)?;
    let layers: Vec<_> = shredded.iter().map(|l| l.path.page_layers(l.def.as_deref())).collect();
    let jobs: Vec<(usize, usize, usize)> =
        bounds.iter().flat_map(|&(s, len)| (0..shredded.len()).map(move |leaf| (leaf, s, len))).collect();
    let pages = crate::parallel::map(jobs, parallel || shredded.len() > 1, |(leaf, s, len)| {
        crate::interrupt::check()?;
        let page = shredded[leaf].slice_rows(s, len)?;
        encode_leaf_page(&page, &leaves[leaf], version, Some(&layers[leaf])).map(|p| ColumnPiece::Page(leaf, p))
    });
    // Write order: page by page, leaves in column order within a page.
    pages.into_iter().collect()
}

/// A copy of `array` in buffers of its own (sized to its slice), sharing no memory with it.
fn owned_copy(array: &ArrayRef) -> Result<ArrayRef> {
    let data = array.to_data();
    let mut copy = MutableArrayData::new(vec![&data], false, data.len());
    copy.try_extend(0, 0, data.len())?;
    Ok(make_array(copy.freeze()))
}

fn concat(arrays: &[ArrayRef]) -> Result<ArrayRef> {
    if arrays.len() == 1 {
        return Ok(arrays[0].clone());
    }
    let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
    Ok(arrow_select::concat::concat(&refs)?)
}
