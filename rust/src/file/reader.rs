//! Reading Lance files: open (footer, schema), then plan → fetch → decode per request.
//!
//! Opening reads the file tail once (footer, offset tables, schema, column metadata bytes).
//! A column's metadata is decoded on first use, and each page's small metadata buffers
//! (mini-block chunk tables, dictionaries, full-zip repetition indexes) are fetched and cached
//! on first use, so repeated calls on one reader only read the data they need.
//!
//! A request (a row range or a set of rows, over a projection) goes: rows per page → every
//! page's plan (byte ranges, from its layout's [`PageLayout`]) → one coalescing read for
//! all of them (per round: blob pages need their descriptors before they know where their
//! blobs are) → decode on the CPU pool, fields in parallel, with no I/O. Only the
//! mini-block chunks or full-zip rows that hold requested rows are read and decoded. 2.0
//! pages are the exception: their decoder still reads its byte ranges itself.
//!
//! Fields stored row by row (vectors, images) skip all that on local files: their rows are
//! copied straight out of the mapped file ([`FileReader::direct_rows`]).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef, LargeBinaryArray, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow_buffer::{Buffer, MutableBuffer, NullBuffer, OffsetBuffer};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use prost::Message;

use super::container::{parse_offset_table, FileVersion, Footer, FOOTER_LEN};
use crate::encodings::block::read_uint;
use crate::encodings::Compression;
use crate::error::{Error, Result};
use crate::format::{enc20, enc21, file2, filepb, TYPE_URL_ARRAY_ENCODING, TYPE_URL_PAGE_LAYOUT};
use crate::io::{open_reader, open_reader_with, ReaderRef, StorageOptions};
use crate::schema::{LanceField, LanceSchema};
use crate::structural::assemble::{assemble, LeafData};
use crate::structural::blob::BlobLayout;
use crate::structural::builder::LeafBuilder;
use crate::structural::constant::{ConstantLayout, ConstantState};
use crate::structural::fullzip::{self, FullZipLayout, FullZipState, RepIndex};
use crate::structural::layout::{runs, PageInfo, PageLayout, PageRequest, PageRows};
use crate::structural::miniblock::{MiniBlockLayout, MiniBlockState};
use crate::structural::repdef::{page_to_canonical, Layer, LeafPath};
use crate::structural::shred::leaf_paths;
use crate::structural::{v2_0, v2_0_nested, LeafKind};

/// Bytes read from the end of a file when opening it.
const TAIL_READ: u64 = 64 * 1024;

/// A page's layout, parsed from its protobuf description.
#[derive(Debug)]
pub enum PageKind {
    /// 2.1+ mini-block.
    MiniBlock(MiniBlockLayout),
    /// 2.1+ full-zip.
    FullZip(FullZipLayout),
    /// 2.1+ constant / all-null.
    Constant(ConstantLayout),
    /// 2.1+ blob: (position, size) descriptors in an inner mini-block page.
    Blob(BlobLayout),
    /// 2.0 `ArrayEncoding` tree.
    V2_0(v2_0::V20Layout),
}

/// Page metadata loaded on first use.
#[derive(Debug)]
enum PageState {
    MiniBlock(MiniBlockState),
    FullZip(FullZipState),
    Constant(ConstantState),
    /// A 2.0 page's buffers (none for pages read by byte ranges).
    V2_0(v2_0::V20State),
}

/// Runs `$body` with the page's layout (`$l`, a [`PageLayout`]) and loaded state (`$s`).
macro_rules! with_layout {
    ($page:expr, |$l:ident, $s:ident| $body:expr) => {{
        let state = $page.state.get().ok_or_else(|| Error::Internal("page state not loaded".into()))?;
        match (&$page.kind, state.as_ref()) {
            (PageKind::MiniBlock($l), PageState::MiniBlock($s)) => $body,
            (PageKind::FullZip($l), PageState::FullZip($s)) => $body,
            (PageKind::Constant($l), PageState::Constant($s)) => $body,
            (PageKind::Blob($l), PageState::MiniBlock($s)) => $body,
            (PageKind::V2_0($l), PageState::V2_0($s)) => $body,
            _ => Err(Error::corrupt("page state does not match its layout")),
        }
    }};
}

/// One page of a column.
#[derive(Debug)]
pub struct Page {
    /// First row of the page within the file.
    pub first_row: u64,
    /// Rows in the page.
    pub num_rows: u64,
    /// (absolute position, size) of each page buffer.
    pub buffers: Vec<(u64, u64)>,
    /// The layout.
    pub kind: PageKind,
    state: OnceLock<Arc<PageState>>,
}

/// One column of the file.
#[derive(Debug)]
pub struct Column {
    /// Pages in row order.
    pub pages: Vec<Page>,
}

/// How a top-level field is stored.
#[derive(Debug, Clone)]
struct FieldColumns {
    /// File columns of the field's leaves (2.1+) or of its fields in pre-order (2.0; see
    /// [`v2_0_nested::column_fields`]).
    columns: Vec<usize>,
}

/// An open Lance file.
pub struct FileReader {
    io: ReaderRef,
    path: String,
    version: FileVersion,
    footer: Footer,
    num_rows: u64,
    schema: LanceSchema,
    arrow_schema: SchemaRef,
    global_buffers: Vec<(u64, u64)>,
    /// Raw ColumnMetadata bytes of each column.
    column_meta: Vec<Buffer>,
    columns: Vec<OnceLock<Arc<Column>>>,
    fields: Vec<FieldColumns>,
    /// Per top-level field, how its pages are decoded when that differs from the schema: a
    /// legacy blob column's descriptions (see [`LanceField::legacy_blob_file_field`]).
    stored: Vec<Option<LanceField>>,
    file_size: u64,
    /// Bytes of file metadata this reader keeps in memory: the metadata region read on open
    /// plus the buffers of every page state loaded since (see [`FileReader::held_bytes`]).
    held: AtomicU64,
}

impl std::fmt::Debug for FileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileReader").field("path", &self.path).field("version", &self.version).finish()
    }
}

fn unpack_any(enc: &Option<file2::Encoding>, what: &str) -> Result<(String, bytes::Bytes)> {
    match enc.as_ref().and_then(|e| e.location.as_ref()) {
        Some(file2::encoding::Location::Direct(d)) => {
            let any = prost_types::Any::decode(d.encoding.clone())?;
            Ok((any.type_url, any.value.into()))
        }
        Some(file2::encoding::Location::Indirect(_)) => {
            Err(Error::not_supported(format!("{what} with an indirect (deferred) encoding")))
        }
        Some(file2::encoding::Location::None(_)) | None => Err(Error::corrupt(format!("{what} has no encoding"))),
    }
}

impl FileReader {
    /// Opens the file at `uri` (a path, `file://` or `memory://`).
    pub fn open(uri: &str) -> Result<Self> {
        Self::open_with(open_reader(uri)?)
    }

    /// Opens the file at `uri` (a path or any supported URI) with storage options.
    pub fn open_with_options(uri: &str, options: &StorageOptions) -> Result<Self> {
        Self::open_with(open_reader_with(uri, options)?)
    }

    /// Opens a file through an existing reader.
    pub fn open_with(io: ReaderRef) -> Result<Self> {
        let path = io.path().to_string();
        // One speculative read of the tail holds the footer and, for most files, all the
        // metadata (on object storage it also tells the size: one request in all).
        let (size, tail) = io.read_tail(TAIL_READ)?;
        if size < FOOTER_LEN as u64 {
            return Err(Error::corrupt(format!(
                "{path}: {size} bytes is too small to be a Lance file (the footer alone is {FOOTER_LEN} bytes)"
            )));
        }
        let tail_start = size.saturating_sub(TAIL_READ);
        let footer = Footer::parse(&tail.as_slice()[tail.len() - FOOTER_LEN..], size, &path)?;
        let version = FileVersion::from_footer(footer.major, footer.minor)?;
        // Everything from the first metadata byte we need to the end.
        let gbo_table_len = footer.num_global_buffers as u64 * 16;
        let meta_needed = footer.column_meta_start.min(footer.gbo_table_pos);
        let read_tail = |from: u64| -> Result<(u64, Buffer)> {
            if from >= tail_start {
                Ok((tail_start, tail.clone()))
            } else {
                Ok((from, io.read_range(from..size)?))
            }
        };
        let (base, region) = read_tail(meta_needed)?;
        let slice = |r: Range<u64>| -> &[u8] { &region.as_slice()[(r.start - base) as usize..(r.end - base) as usize] };
        let global_buffers =
            parse_offset_table(slice(footer.gbo_table_pos..footer.gbo_table_pos + gbo_table_len), size, "global buffer", &path)?;
        let (gb0_pos, gb0_len) = global_buffers[0];
        let gb0 = if gb0_pos >= base {
            region.slice_with_length((gb0_pos - base) as usize, gb0_len as usize)
        } else {
            io.read_range(gb0_pos..gb0_pos + gb0_len)?
        };
        let descriptor = filepb::FileDescriptor::decode(gb0.as_slice())
            .map_err(|e| Error::corrupt(format!("{path}: schema (global buffer 0) is not a valid FileDescriptor: {e}")))?;
        let schema_pb = descriptor.schema.unwrap_or_default();
        let schema = LanceSchema::from_pb(&schema_pb.fields, &schema_pb.metadata)?;
        let cmo = parse_offset_table(
            slice(footer.cmo_table_pos..footer.cmo_table_pos + footer.num_columns as u64 * 16),
            size,
            "column metadata",
            &path,
        )?;
        let mut column_meta = Vec::with_capacity(cmo.len());
        for (i, &(pos, len)) in cmo.iter().enumerate() {
            if pos < footer.column_meta_start || pos + len > footer.cmo_table_pos {
                return Err(Error::corrupt(format!(
                    "{path}: metadata of column {i} ({pos}..+{len}) lies outside the column metadata region"
                )));
            }
            column_meta.push(region.slice_with_length((pos - base) as usize, len as usize));
        }
        let fields = map_fields_to_columns(&schema, version, column_meta.len(), &path)?;
        let arrow_schema = schema.to_arrow();
        let stored = schema.fields.iter().map(|f| f.is_legacy_blob().then(|| f.legacy_blob_file_field())).collect();
        Ok(Self {
            io,
            path,
            version,
            footer,
            num_rows: descriptor.length,
            columns: (0..column_meta.len()).map(|_| OnceLock::new()).collect(),
            schema,
            arrow_schema,
            global_buffers,
            column_meta,
            fields,
            stored,
            file_size: size,
            held: AtomicU64::new(region.len() as u64 + std::mem::size_of::<Self>() as u64),
        })
    }

    /// About how many bytes this reader keeps in memory: the metadata read on open and the
    /// page metadata (chunk tables, dictionaries, repetition indices) loaded since. It grows
    /// as pages are first read; caches of open files weigh readers by it.
    pub fn held_bytes(&self) -> u64 {
        self.held.load(Ordering::Relaxed)
    }

    /// The file's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Format version of the file.
    pub fn version(&self) -> FileVersion {
        self.version
    }

    /// Number of rows.
    pub fn num_rows(&self) -> u64 {
        self.num_rows
    }

    /// The Lance schema stored in the file.
    pub fn lance_schema(&self) -> &LanceSchema {
        &self.schema
    }

    /// The Arrow schema of the file.
    pub fn schema(&self) -> SchemaRef {
        self.arrow_schema.clone()
    }

    /// Number of columns in the file.
    pub fn num_columns(&self) -> usize {
        self.column_meta.len()
    }

    /// Size of the file in bytes.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// Positions and sizes of the global buffers.
    pub fn global_buffers(&self) -> &[(u64, u64)] {
        &self.global_buffers
    }

    /// The footer.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// Parses (once) and returns column `i`.
    pub fn column(&self, i: usize) -> Result<Arc<Column>> {
        if let Some(c) = self.columns[i].get() {
            return Ok(c.clone());
        }
        let col = Arc::new(self.parse_column(i)?);
        Ok(self.columns[i].get_or_init(|| col).clone())
    }

    /// Column `i`, parsed once, borrowed for the reader's lifetime.
    fn column_ref(&self, i: usize) -> Result<&Column> {
        let cell = self.columns.get(i).ok_or_else(|| Error::corrupt(format!("{}: column {i} does not exist", self.path)))?;
        if cell.get().is_none() {
            let col = Arc::new(self.parse_column(i)?);
            let _ = cell.set(col);
        }
        cell.get().map(|c| c.as_ref()).ok_or_else(|| Error::Internal(format!("column {i} was not cached")))
    }

    fn parse_column(&self, i: usize) -> Result<Column> {
        let ctx = format!("{}: column {i}", self.path);
        let meta = file2::ColumnMetadata::decode(self.column_meta[i].as_slice())
            .map_err(|e| Error::corrupt(format!("{ctx}: invalid ColumnMetadata: {e}")))?;
        let mut pages = Vec::with_capacity(meta.pages.len());
        let mut first_row = 0u64;
        for (pi, p) in meta.pages.iter().enumerate() {
            let pctx = format!("{ctx}, page {pi}");
            if p.buffer_offsets.len() != p.buffer_sizes.len() {
                return Err(Error::corrupt(format!(
                    "{pctx}: {} buffer offsets but {} sizes",
                    p.buffer_offsets.len(),
                    p.buffer_sizes.len()
                )));
            }
            let mut buffers = Vec::with_capacity(p.buffer_offsets.len());
            for (&o, &s) in p.buffer_offsets.iter().zip(&p.buffer_sizes) {
                if o.checked_add(s).is_none_or(|e| e > self.file_size) {
                    return Err(Error::corrupt(format!(
                        "{pctx}: buffer {o}..+{s} lies outside the file ({} bytes)",
                        self.file_size
                    )));
                }
                buffers.push((o, s));
            }
            let (url, value) = unpack_any(&p.encoding, &pctx)?;
            let kind = match (self.version.is_structural(), url.as_str()) {
                (true, TYPE_URL_PAGE_LAYOUT) => {
                    let layout = enc21::PageLayout::decode(value)
                        .map_err(|e| Error::corrupt(format!("{pctx}: invalid PageLayout: {e}")))?;
                    parse_page_layout(layout, &pctx)?
                }
                (false, TYPE_URL_ARRAY_ENCODING) => PageKind::V2_0(v2_0::V20Layout {
                    encoding: enc20::ArrayEncoding::decode(value)
                        .map_err(|e| Error::corrupt(format!("{pctx}: invalid ArrayEncoding: {e}")))?,
                }),
                (_, other) => {
                    return Err(Error::not_supported(format!(
                        "{pctx}: page encoding {other:?} in a version {} file",
                        self.version
                    )))
                }
            };
            pages.push(Page { first_row, num_rows: p.length, buffers, kind, state: OnceLock::new() });
            first_row =
                first_row.checked_add(p.length).ok_or_else(|| Error::corrupt(format!("{ctx}: page row counts overflow")))?;
        }
        Ok(Column { pages })
    }

    fn field_index(&self, name: &str) -> Result<usize> {
        self.schema.fields.iter().position(|f| f.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.schema.fields.iter().map(|f| f.name.as_str()).collect();
            Error::ColumnNotFound(format!("no column named {name:?} in {}; columns are {names:?}", self.path))
        })
    }

    /// The top-level field whose columns start at file column `col`: how a dataset's
    /// `DataFile.column_indices` (the first column of each field) point into a file.
    pub fn field_starting_at_column(&self, col: usize) -> Option<usize> {
        self.fields.iter().position(|f| f.columns.first() == Some(&col))
    }

    /// The top-level field with Lance field id `id`, if the file has one.
    pub fn field_with_id(&self, id: i32) -> Option<usize> {
        self.schema.fields.iter().position(|f| f.id == id)
    }

    /// Resolves a projection (top-level column names; `None` = all) to field indices.
    pub fn projection(&self, columns: Option<&[String]>) -> Result<Vec<usize>> {
        match columns {
            None => Ok((0..self.schema.fields.len()).collect()),
            Some(names) => names.iter().map(|n| self.field_index(n)).collect(),
        }
    }

    /// The schema of what reading `fields` returns: the file's, with the descriptions of
    /// legacy blob columns in place of their values (see [`FileReader::blob_values`]).
    fn projected_schema(&self, fields: &[usize]) -> SchemaRef {
        Arc::new(Schema::new_with_metadata(
            fields
                .iter()
                .map(|&i| match &self.stored[i] {
                    Some(_) => self.schema.fields[i].output_arrow(),
                    None => self.arrow_schema.field(i).clone(),
                })
                .collect::<Vec<_>>(),
            self.arrow_schema.metadata().clone(),
        ))
    }

    /// The field as its pages store it (a legacy blob column: its descriptions).
    fn stored_field(&self, field: usize) -> &LanceField {
        self.stored[field].as_ref().unwrap_or(&self.schema.fields[field])
    }

    /// Whether top-level field `field` is a legacy (2.0 / 2.1) blob column, which reads
    /// return as `(position, size)` descriptions.
    pub fn is_legacy_blob(&self, field: usize) -> bool {
        self.stored.get(field).is_some_and(Option::is_some)
    }

    /// `batch` (a read of `fields`) with each legacy blob column's descriptions replaced by
    /// the values they describe, fetched with one coalescing read.
    pub fn blob_values(&self, batch: RecordBatch, fields: &[usize]) -> Result<RecordBatch> {
        if !fields.iter().any(|&f| self.is_legacy_blob(f)) {
            return Ok(batch);
        }
        let mut columns = batch.columns().to_vec();
        let mut schema_fields: Vec<Field> = batch.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
        for (pos, &f) in fields.iter().enumerate() {
            if self.is_legacy_blob(f) {
                columns[pos] = self.blob_bytes(columns[pos].as_ref())?;
                schema_fields[pos] = self.arrow_schema.field(f).clone();
            }
        }
        let schema = Arc::new(Schema::new_with_metadata(schema_fields, batch.schema().metadata().clone()));
        decoded_batch(schema, columns, batch.num_rows(), &self.path)
    }

    /// The values of legacy blob descriptions (`struct<position: uint64, size: uint64>`) of
    /// this file, as large binary: null descriptions, and 2.0's null marker (size 0 at a
    /// nonzero position), are null; size 0 is an empty value.
    pub fn blob_bytes(&self, descriptions: &dyn Array) -> Result<ArrayRef> {
        let corrupt =
            || Error::corrupt(format!("{}: blob descriptions are not struct<position: uint64, size: uint64>", self.path));
        let s = descriptions.as_struct_opt().ok_or_else(corrupt)?;
        let (Some(pos), Some(size)) = (s.column_by_name("position"), s.column_by_name("size")) else { return Err(corrupt()) };
        let (pos, size) = (
            pos.as_primitive_opt::<UInt64Type>().ok_or_else(corrupt)?,
            size.as_primitive_opt::<UInt64Type>().ok_or_else(corrupt)?,
        );
        let n = s.len();
        let mut valid = Vec::with_capacity(n);
        let mut ranges = Vec::new();
        for i in 0..n {
            let (p, len) = (pos.value(i), size.value(i));
            let ok = s.is_valid(i) && pos.is_valid(i) && size.is_valid(i) && !(len == 0 && p != 0);
            valid.push(ok);
            if ok && len > 0 {
                if p.checked_add(len).is_none_or(|e| e > self.file_size) {
                    return Err(Error::corrupt(format!("{}: blob at {p}..+{len} lies outside the file", self.path)));
                }
                ranges.push(p..p + len);
            }
        }
        // Each value is stored once: descriptions that ask for more bytes than the file has
        // (ranges repeated by a hostile file) would make the output outgrow its input.
        let asked: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        if asked > self.file_size {
            return Err(Error::corrupt(format!(
                "{}: blob descriptions ask for {asked} bytes of a {}-byte file",
                self.path, self.file_size
            )));
        }
        let fetched = if ranges.is_empty() { Vec::new() } else { self.io.read_ranges(&ranges)? };
        let total: usize = fetched.iter().map(|b| b.len()).sum();
        let mut data = Vec::with_capacity(total);
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0i64);
        let mut next = fetched.iter();
        for i in 0..n {
            if valid[i] && size.value(i) > 0 {
                data.extend_from_slice(next.next().ok_or_else(|| Error::Internal("a blob was not fetched".into()))?.as_slice());
            }
            offsets.push(data.len() as i64);
        }
        let nulls = NullBuffer::from(valid);
        let out = LargeBinaryArray::try_new(
            OffsetBuffer::new(offsets.into()),
            Buffer::from_vec(data),
            (nulls.null_count() > 0).then_some(nulls),
        )?;
        Ok(Arc::new(out))
    }

    /// Reads rows `start..start + len` of the projected fields.
    pub fn read_range(&self, start: u64, len: u64, fields: &[usize]) -> Result<RecordBatch> {
        let end = start.checked_add(len).filter(|&e| e <= self.num_rows).ok_or_else(|| {
            Error::IndexOutOfRange(format!(
                "rows {start}..{} are outside {} (which has {} rows)",
                start.saturating_add(len),
                self.path,
                self.num_rows
            ))
        })?;
        let parallel = fields.len() > 1 && len > 4096;
        let arrays = self.read_fields(fields, RowSelection::Range(start..end), parallel).map_err(|e| self.as_corrupt(e))?;
        self.batch(fields, arrays, len)
    }

    /// An Arrow error while building arrays from this file's bytes (a validation failing: a
    /// struct child with nulls its non-nullable field may not have, offsets out of order)
    /// means the file is corrupt. Found by the `file_ops` fuzz target.
    fn as_corrupt(&self, e: Error) -> Error {
        match e {
            Error::Arrow(a) => Error::corrupt(format!("{}: decoded data is not valid Arrow: {a}", self.path)),
            e => e,
        }
    }

    /// Reads rows `start..start + len` as several batches decoded in parallel (each also
    /// decoding its columns in parallel), so that even a one-column scan uses every core,
    /// and none fetches more than about 32 MiB before decoding. Batches are in row order;
    /// nothing is copied to join them.
    pub fn read_range_parallel(&self, start: u64, len: u64, fields: &[usize]) -> Result<Vec<RecordBatch>> {
        const MIN_PIECE_ROWS: u64 = 64 * 1024;
        // A piece's bytes are fetched before it is decoded: pieces of at most about this
        // many bytes (estimated from the file's bytes per row) keep memory bounded and the
        // fetched bytes still in cache when they are decoded.
        const MAX_PIECE_BYTES: u64 = 32 << 20;
        let threads = crate::parallel::cpu_pool().current_num_threads() as u64;
        let est_bytes = (self.file_size as u128 * len as u128 / self.num_rows.max(1) as u128) as u64;
        let pieces = (len / MIN_PIECE_ROWS).min(threads * 2).max(est_bytes / MAX_PIECE_BYTES).min(len);
        if pieces < 2 {
            return Ok(vec![self.read_range(start, len, fields)?]);
        }
        let per = len.div_ceil(pieces);
        let bounds: Vec<(u64, u64)> =
            (0..pieces).map(|i| (start + i * per, per.min(len - (i * per).min(len)))).filter(|b| b.1 > 0).collect();
        crate::parallel::map(bounds, true, |(s, l)| self.read_range(s, l, fields)).into_iter().collect()
    }

    /// Reads the rows at `indices` (any order, repeats allowed; output follows the input).
    ///
    /// Fields stored row by row (vectors, images: see [`FileReader::direct_rows`]) are copied
    /// straight into the output in the order given; the others are read for the sorted
    /// distinct rows, then put in order.
    pub fn take(&self, indices: &[u64], fields: &[usize]) -> Result<RecordBatch> {
        if let Some(&bad) = indices.iter().find(|&&i| i >= self.num_rows) {
            return Err(Error::IndexOutOfRange(format!("row {bad} is out of range for {} ({} rows)", self.path, self.num_rows)));
        }
        let direct = fields.iter().map(|&f| self.direct_rows(f)).collect::<Result<Vec<_>>>()?;
        if direct.iter().all(Option::is_none) {
            return self.take_decoded(indices, fields).map_err(|e| self.as_corrupt(e));
        }
        let others: Vec<usize> = fields.iter().zip(&direct).filter(|(_, x)| x.is_none()).map(|(&f, _)| f).collect();
        let mut decoded = if others.is_empty() {
            Vec::new()
        } else {
            self.take_decoded(indices, &others).map_err(|e| self.as_corrupt(e))?.columns().to_vec()
        }
        .into_iter();
        let arrays = fields
            .iter()
            .zip(direct)
            .map(|(&f, x)| match x {
                Some(x) => {
                    let mut out = Gathered::new(&x, indices.len());
                    self.prefetch_rows(&x, indices);
                    self.gather_rows(&x, indices, &mut out)?;
                    out.into_array(self.arrow_schema.field(f).data_type())
                }
                None => decoded.next().ok_or_else(|| Error::Internal("a decoded column is missing".into())),
            })
            .collect::<Result<Vec<_>>>()
            .map_err(|e| self.as_corrupt(e))?;
        self.batch(fields, arrays, indices.len() as u64)
    }

    /// How a top-level field is stored if its rows can be copied straight into an output:
    /// every page full-zip, without control words (no nulls, no lists) and without per-value
    /// compression — what vectors (fixed-size lists of numbers), other wide fixed values and
    /// large binary values (images) become when no value is null. `None` for anything else,
    /// and when the storage makes many small reads expensive (object stores: there the
    /// coalescing path wins).
    ///
    /// Such rows are copied out of the mapped file, in the order asked, into the output: no
    /// read buffer, no decoding, no reordering afterwards (see [`FileReader::gather_rows`]).
    pub fn direct_rows(&self, field: usize) -> Result<Option<DirectRows>> {
        if !self.version.is_structural() || !self.io.cheap_small_reads() {
            return Ok(None);
        }
        let f = &self.schema.fields[field];
        let cols = &self.fields[field].columns;
        if !f.children.is_empty() || f.is_packed_struct() || cols.len() != 1 {
            return Ok(None);
        }
        let data_type = self.arrow_schema.field(field).data_type();
        // Fixed: (bytes per value, items per fixed-size list, bytes per item).
        let fixed = match data_type {
            DataType::Binary | DataType::LargeBinary => None,
            DataType::FixedSizeList(item, d) => match fixed_byte_width(item.data_type()) {
                Some(w) if !matches!(item.data_type(), DataType::FixedSizeList(..)) => {
                    Some((w * *d as usize, Some(*d as u64), w as u64))
                }
                _ => return Ok(None),
            },
            other => match fixed_byte_width(other) {
                Some(w) => Some((w, None, w as u64)),
                None => return Ok(None),
            },
        };
        if fixed.is_some_and(|(w, _, _)| w == 0) {
            return Ok(None);
        }
        let column = self.column_ref(cols[0])?;
        let live: Vec<&Page> = column.pages.iter().filter(|p| p.num_rows > 0).collect();
        let mut next = 0u64;
        for p in &live {
            let PageKind::FullZip(layout) = &p.kind else { return Ok(None) };
            let plain = match (&layout.kind, fixed) {
                (fullzip::ValueKind::Fixed { bits, dim: page_dim, item_bits, validity_bytes }, Some((width, dim, item))) => {
                    *bits == width as u64 * 8
                        && *page_dim == dim
                        && (dim.is_none() || *item_bits == item * 8)
                        && *validity_bytes == 0
                }
                (fullzip::ValueKind::Variable { offset_bits, per_value: fullzip::PerValue::None, packed: None }, None) => {
                    matches!(offset_bits, 8 | 16 | 32 | 64)
                }
                _ => false,
            };
            if !plain || layout.bits_rep != 0 || layout.bits_def != 0 || p.first_row != next || p.buffers.is_empty() {
                return Ok(None);
            }
            next = p.first_row + p.num_rows;
        }
        if next != self.num_rows {
            return Ok(None);
        }
        if fixed.is_none() {
            // Variable rows are found through each page's repetition index.
            let kind = LeafKind::of_field(f)?;
            self.load_states(&live.iter().map(|&p| (p, &kind)).collect::<Vec<_>>())?;
        }
        let mut pages = Vec::with_capacity(live.len());
        for p in live {
            let (position, len) = p.buffers[0];
            let rows = match fixed {
                Some((width, _, _)) => {
                    if p.num_rows.checked_mul(width as u64).is_none_or(|bytes| bytes > len) {
                        return Err(Error::corrupt(format!("{}: full-zip rows lie beyond the page's data buffer", self.path)));
                    }
                    None
                }
                None => match (&p.kind, p.state.get().map(|s| s.as_ref())) {
                    (PageKind::FullZip(l), Some(PageState::FullZip(FullZipState { rep_index: Some(idx) })))
                        if idx.rows() == p.num_rows =>
                    {
                        let fullzip::ValueKind::Variable { offset_bits, .. } = l.kind else { return Ok(None) };
                        Some((idx.clone(), offset_bits as usize / 8))
                    }
                    _ => return Err(Error::corrupt(format!("{}: variable full-zip page without a repetition index", self.path))),
                },
            };
            pages.push(DirectPage { first_row: p.first_row, num_rows: p.num_rows, position, rows });
        }
        Ok(Some(DirectRows { width: fixed.map(|(w, _, _)| w), pages }))
    }

    /// Tells the storage that the values of `rows` (any order) of a field laid out as `plan`
    /// are about to be gathered ([`FileReader::gather_rows`], [`FileReader::visit_values`]):
    /// when they are not in memory, their reads start now, all together (see
    /// [`crate::io::Reader::prefetch`]). Call it once for all the rows of a take, not per run.
    pub fn prefetch_rows(&self, plan: &DirectRows, rows: &[u64]) {
        let range = |k: usize| -> Option<Range<u64>> {
            let r = rows[k];
            let p = self.direct_page(plan, r).ok()?;
            match (plan.width, &p.rows) {
                (Some(w), _) => {
                    let start = p.position + (r - p.first_row) * w as u64;
                    Some(start..start + w as u64)
                }
                (None, Some((idx, _))) => {
                    Some(p.position + idx.offset(r - p.first_row)..p.position + idx.offset(r - p.first_row + 1))
                }
                (None, None) => None,
            }
        };
        self.io.prefetch(rows.len(), &range);
    }

    /// Appends the values of `rows` (any order, repeats allowed) of a field laid out as
    /// `plan` to `out`: one copy out of the mapped file per value, or per run of consecutive
    /// fixed-width values (one read each if the file cannot be mapped).
    pub fn gather_rows(&self, plan: &DirectRows, rows: &[u64], out: &mut Gathered) -> Result<()> {
        let map = self.io.mapped();
        let data_before = out.data.len();
        let page_of = |r: u64| self.direct_page(plan, r);
        let mut scratch = Vec::new();
        match (plan.width, &mut out.offsets) {
            (Some(w), None) => {
                out.data.reserve(rows.len() * w);
                let mut k = 0;
                while k < rows.len() {
                    if k % 4096 == 0 {
                        crate::interrupt::check()?;
                    }
                    let r = rows[k];
                    let p = page_of(r)?;
                    let end = p.first_row + p.num_rows;
                    let mut run = 1;
                    while k + run < rows.len() && rows[k + run] == r + run as u64 && r + (run as u64) < end {
                        run += 1;
                    }
                    out.data.extend_from_slice(self.bytes_at(
                        map,
                        &mut scratch,
                        p.position + (r - p.first_row) * w as u64,
                        run * w,
                    )?);
                    k += run;
                }
            }
            (None, Some(offsets)) => {
                // Where each value is, then room for all of them at once.
                let spans = self.value_spans(plan, rows)?;
                out.data.reserve(spans.iter().map(|s| s.1 - s.2).sum());
                offsets.reserve(rows.len());
                for (i, span) in spans.into_iter().enumerate() {
                    if i % 1024 == 0 {
                        crate::interrupt::check()?;
                    }
                    out.data.extend_from_slice(self.span_value(map, &mut scratch, span)?);
                    offsets.push(out.data.len() as i64);
                }
            }
            _ => return Err(Error::Internal("gathering into an output of another layout".into())),
        }
        if map.is_some() {
            crate::io::count_mapped((out.data.len() - data_before) as u64);
        }
        out.rows += rows.len();
        Ok(())
    }

    /// Gathers fixed-width values of rows spread over several files, in request order, in
    /// one pass: `files[i]` is the reader and plan of file `i`, each request names (file
    /// index, row). Rows in random order make runs a row long, where one
    /// [`FileReader::gather_rows`] call per run cost more than the copy; consecutive rows of a
    /// file are still copied as one run. Returns `false`, having gathered nothing, when a file
    /// is not mapped or its values are not of one width: the caller then goes run by run.
    pub fn gather_fixed_across(
        files: &[(&FileReader, &DirectRows)],
        requests: &[(usize, u64)],
        out: &mut Gathered,
    ) -> Result<bool> {
        let Some(w) = files.first().and_then(|f| f.1.width) else { return Ok(false) };
        let mut maps = Vec::with_capacity(files.len());
        for (reader, plan) in files {
            match (reader.io.mapped(), plan.width) {
                (Some(m), Some(width)) if width == w => maps.push(m),
                _ => return Ok(false),
            }
        }
        if out.offsets.is_some() {
            return Err(Error::Internal("gathering fixed-width values into a variable-width output".into()));
        }
        out.data.reserve(requests.len() * w);
        // The run being copied: (file, first byte, end byte).
        let mut run: Option<(usize, usize, usize)> = None;
        let flush = |run: Option<(usize, usize, usize)>, data: &mut MutableBuffer| -> Result<()> {
            if let Some((i, start, end)) = run {
                let bytes = maps[i]
                    .get(start..end)
                    .ok_or_else(|| Error::corrupt(format!("{}: rows at byte {start} lie outside the file", files[i].0.path)))?;
                data.extend_from_slice(bytes);
            }
            Ok(())
        };
        for (k, &(i, r)) in requests.iter().enumerate() {
            if k % 4096 == 0 {
                crate::interrupt::check()?;
            }
            let (reader, plan) = files.get(i).ok_or_else(|| Error::Internal(format!("file {i} was not planned")))?;
            let p = reader.direct_page(plan, r)?;
            let start = usize::try_from(p.position + (r - p.first_row) * w as u64)
                .map_err(|_| Error::corrupt(format!("{}: rows lie beyond the address space", reader.path)))?;
            run = match run {
                Some((ri, rs, re)) if ri == i && re == start => Some((ri, rs, re + w)),
                other => {
                    flush(other, &mut out.data)?;
                    Some((i, start, start + w))
                }
            };
        }
        flush(run, &mut out.data)?;
        crate::io::count_mapped((requests.len() * w) as u64);
        out.rows += requests.len();
        Ok(true)
    }

    /// Hands each variable-width value of `rows` (any order, repeats allowed) of a field laid
    /// out as `plan` to `f`, in order, as a slice of the mapped file (or of a read buffer):
    /// for callers that copy each value once into its own object.
    pub fn visit_values(&self, plan: &DirectRows, rows: &[u64], mut f: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        if plan.width.is_some() {
            return Err(Error::Internal("visiting the values of a fixed-width column".into()));
        }
        let map = self.io.mapped();
        let mut scratch = Vec::new();
        let mut copied = 0u64;
        for (i, span) in self.value_spans(plan, rows)?.into_iter().enumerate() {
            if i % 1024 == 0 {
                crate::interrupt::check()?;
            }
            copied += span.1 as u64;
            f(self.span_value(map, &mut scratch, span)?)?;
        }
        if map.is_some() {
            crate::io::count_mapped(copied);
        }
        Ok(())
    }

    /// The page of `plan` holding row `r`.
    fn direct_page<'p>(&self, plan: &'p DirectRows, r: u64) -> Result<&'p DirectPage> {
        let page = plan.pages.partition_point(|p| p.first_row + p.num_rows <= r);
        plan.pages
            .get(page)
            .ok_or_else(|| Error::IndexOutOfRange(format!("row {r} is out of range for {} ({} rows)", self.path, self.num_rows)))
    }

    /// Where each variable-width value of `rows` lies: (file position, bytes including the
    /// length prefix, bytes of the prefix).
    fn value_spans(&self, plan: &DirectRows, rows: &[u64]) -> Result<Vec<(u64, usize, usize)>> {
        let mut spans = Vec::with_capacity(rows.len());
        for &r in rows {
            let p = self.direct_page(plan, r)?;
            let (idx, len_bytes) = p.rows.as_ref().ok_or_else(|| Error::Internal("variable rows without an index".into()))?;
            let (s, e) = (idx.offset(r - p.first_row), idx.offset(r - p.first_row + 1));
            let span = usize::try_from(e.saturating_sub(s))
                .map_err(|_| Error::corrupt(format!("{}: a full-zip value is too large", self.path)))?;
            if e < s || span < *len_bytes {
                return Err(Error::corrupt(format!("{}: a full-zip value is shorter than its length", self.path)));
            }
            spans.push((p.position + s, span, *len_bytes));
        }
        Ok(spans)
    }

    /// The value of one span (see [`FileReader::value_spans`]), its length prefix checked.
    fn span_value<'a>(
        &self,
        map: Option<&'a [u8]>,
        scratch: &'a mut Vec<u8>,
        (pos, span, len_bytes): (u64, usize, usize),
    ) -> Result<&'a [u8]> {
        let bytes = self.bytes_at(map, scratch, pos, span)?;
        if read_uint(bytes, 0, len_bytes) != (span - len_bytes) as u64 {
            return Err(Error::corrupt(format!("{}: a full-zip value's length does not match its row", self.path)));
        }
        Ok(&bytes[len_bytes..])
    }

    /// `len` bytes at `pos`: a slice of the mapped file, or read into `scratch`.
    fn bytes_at<'a>(&self, map: Option<&'a [u8]>, scratch: &'a mut Vec<u8>, pos: u64, len: usize) -> Result<&'a [u8]> {
        match map {
            Some(map) => usize::try_from(pos)
                .ok()
                .and_then(|s| map.get(s..s.checked_add(len)?))
                .ok_or_else(|| Error::corrupt(format!("{}: rows at byte {pos} lie outside the file", self.path))),
            None => {
                scratch.resize(len, 0);
                self.io.read_into(pos, scratch)?;
                Ok(&scratch[..])
            }
        }
    }

    /// [`FileReader::take`] by decoding: the sorted distinct rows, then put in order.
    fn take_decoded(&self, indices: &[u64], fields: &[usize]) -> Result<RecordBatch> {
        let sorted_unique = indices.windows(2).all(|w| w[0] < w[1]);
        let (rows, permutation) = if sorted_unique {
            (indices.to_vec(), None)
        } else {
            let mut rows = indices.to_vec();
            rows.sort_unstable();
            rows.dedup();
            let perm: Vec<u32> = indices.iter().map(|i| rows.binary_search(i).unwrap() as u32).collect();
            (rows, Some(UInt32Array::from(perm)))
        };
        let parallel = fields.len() > 1 && rows.len() > 64;
        let mut arrays = self.read_fields(fields, RowSelection::Rows(&rows), parallel)?;
        if let Some(a) = arrays.iter().find(|a| a.len() != rows.len()) {
            // Corrupt pages can decode to fewer rows than asked; permuting would index past them.
            return Err(Error::corrupt(format!("{}: {} rows decoded for {} asked", self.path, a.len(), rows.len())));
        }
        if let Some(p) = permutation {
            arrays = arrays
                .iter()
                .map(|a| arrow_select::take::take(a.as_ref(), &p, None).map_err(Error::from))
                .collect::<Result<Vec<_>>>()?;
        }
        self.batch(fields, arrays, indices.len() as u64)
    }

    fn batch(&self, fields: &[usize], arrays: Vec<ArrayRef>, rows: u64) -> Result<RecordBatch> {
        decoded_batch(self.projected_schema(fields), arrays, rows as usize, &self.path)
    }

    /// The leaf columns of top-level field `field`: (file column, leaf field, structure).
    fn leaves(&self, field: usize) -> Result<Vec<(usize, &LanceField, LeafPath)>> {
        let f = self.stored_field(field);
        let cols = &self.fields[field].columns;
        let paths = leaf_paths(f)?;
        if !self.version.is_structural() && (paths.len() != 1 || paths[0].1.kinds.len() != 1) {
            return Err(Error::Internal(format!("nested 2.0 column {:?} read as leaf columns", f.name)));
        }
        if cols.len() != paths.len() {
            return Err(Error::corrupt(format!("field {:?} has {} leaves but {} columns", f.name, paths.len(), cols.len())));
        }
        let leaf_fields = f.leaf_fields();
        Ok(cols.iter().zip(leaf_fields).zip(paths).map(|((&c, lf), (_, p))| (c, lf, p)).collect())
    }

    /// Reads `sel` of the projected fields: every leaf's pages planned, their bytes fetched
    /// with one coalescing read per round (see [`FileReader::fetch_leaves`]), then decoded on
    /// the CPU, fields in parallel when `parallel`.
    fn read_fields(&self, fields: &[usize], sel: RowSelection, parallel: bool) -> Result<Vec<ArrayRef>> {
        let mut leaves = Vec::new();
        let mut counts = Vec::with_capacity(fields.len());
        for &f in fields {
            if self.nested_v2_0_column(f).is_some() {
                counts.push(None);
                continue;
            }
            let before = leaves.len();
            for (col, leaf, path) in self.leaves(f)? {
                leaves.push(self.plan_leaf(col, leaf, path, sel.clone(), self.num_rows)?);
            }
            counts.push(Some(leaves.len() - before));
        }
        // Object storage: one coalesced fetch per round for every field (fewer requests).
        // Local files: each field fetches its own bytes inside its parallel job, so that the
        // copies out of the page cache run on every core (one thread reading a whole round
        // made 1,000-row takes 2x slower).
        let per_field_fetch = parallel && self.io.cheap_small_reads();
        if !per_field_fetch {
            self.fetch_leaves(&mut leaves)?;
        }
        let mut leaves = leaves.into_iter();
        let jobs: Vec<(usize, Option<Vec<LeafRead>>)> =
            fields.iter().zip(counts).map(|(&f, n)| (f, n.map(|n| leaves.by_ref().take(n).collect()))).collect();
        let arrays = crate::parallel::map(jobs, parallel, |(f, job)| {
            let field = self.stored_field(f);
            match job {
                Some(mut job) => {
                    if per_field_fetch {
                        self.fetch_leaves(&mut job)?;
                    }
                    assemble(field, job.into_iter().map(|l| self.decode_leaf(l)).collect::<Result<Vec<_>>>()?)
                }
                None => {
                    // 2.0 struct and list fields: read level by level (see `v2_0_nested`).
                    let col = self.nested_v2_0_column(f).ok_or_else(|| Error::Internal("not a nested 2.0 field".into()))?;
                    let ranges = match &sel {
                        RowSelection::Range(r) => vec![r.clone()],
                        RowSelection::Rows(r) => runs(r),
                        RowSelection::Ranges(r) => r.to_vec(),
                    };
                    v2_0_nested::read_field(self, field, col, self.num_rows, &ranges)
                }
            }
        });
        arrays.into_iter().collect()
    }

    /// The first column of top-level field `field` if it is a nested field of a 2.0 file
    /// (one with child fields: read by [`v2_0_nested`]).
    fn nested_v2_0_column(&self, field: usize) -> Option<usize> {
        let nested = !self.version.is_structural() && !self.schema.fields[field].children.is_empty();
        nested.then(|| self.fields[field].columns.first().copied()).flatten()
    }

    /// Reads the selected rows of one leaf column, which holds `column_rows` rows.
    fn read_leaf(&self, col: usize, leaf: &LanceField, path: &LeafPath, sel: RowSelection, column_rows: u64) -> Result<LeafData> {
        let mut read = [self.plan_leaf(col, leaf, path.clone(), sel, column_rows)?];
        self.fetch_leaves(&mut read)?;
        let [read] = read;
        self.decode_leaf(read)
    }

    /// Chooses the rows of each page of one leaf column (which holds `column_rows` rows).
    fn plan_leaf<'r>(
        &'r self,
        col: usize,
        leaf: &'r LanceField,
        path: LeafPath,
        sel: RowSelection,
        column_rows: u64,
    ) -> Result<LeafRead<'r>> {
        let kind = LeafKind::of_field(leaf)?;
        let column = self.column_ref(col)?;
        // Pages of columns below a fixed-size list of structs count its items, not rows.
        let scale = path.row_scale();
        let total =
            column_rows.checked_mul(scale).ok_or_else(|| Error::corrupt(format!("{}: column {col} is too long", self.path)))?;
        check_rows(column, total, &self.path, col)?;
        let (scaled_rows, scaled_ranges): (Vec<u64>, Vec<Range<u64>>);
        let sel = match sel {
            RowSelection::Range(r) if scale > 1 => RowSelection::Range(r.start * scale..r.end * scale),
            RowSelection::Rows(rows) if scale > 1 => {
                scaled_rows = rows.iter().flat_map(|&r| r * scale..(r + 1) * scale).collect();
                RowSelection::Rows(&scaled_rows)
            }
            RowSelection::Ranges(ranges) if scale > 1 => {
                scaled_ranges = ranges.iter().map(|r| r.start * scale..r.end * scale).collect();
                RowSelection::Ranges(&scaled_ranges)
            }
            other => other,
        };
        let capacity = match &sel {
            RowSelection::Range(r) => (r.end - r.start) as usize,
            RowSelection::Rows(r) => r.len(),
            RowSelection::Ranges(r) => r.iter().map(|r| (r.end - r.start) as usize).sum(),
        };
        let pages = page_groups(column, &sel)
            .into_iter()
            .map(|(page, rows)| {
                let (table, nested) = match page.layers() {
                    Some(layers) => (page_to_canonical(&path, layers)?, path.has_lists() || layers.iter().any(|l| l.is_list())),
                    None => (vec![0, path.null_def(path.kinds.len() - 1)], path.has_lists()),
                };
                Ok(PageRead { page, rows, table, nested, fetched: Vec::new(), planned: false })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(LeafRead { leaf, path, kind, scale, capacity, pages })
    }

    /// Loads the state of every page of `leaves` that has none yet (one read), then fetches
    /// the bytes their plans ask for: one coalescing read per round of plans, for all pages
    /// together.
    fn fetch_leaves(&self, leaves: &mut [LeafRead]) -> Result<()> {
        let pages: Vec<(&Page, &LeafKind)> = leaves.iter().flat_map(|l| l.pages.iter().map(move |p| (p.page, &l.kind))).collect();
        self.load_states(&pages)?;
        drop(pages);
        // A layout plans at most a few rounds (blob pages: two).
        for round in 0..4 {
            let mut ranges = Vec::new();
            let mut owners = Vec::new();
            let mut done = Vec::new();
            for (li, l) in leaves.iter().enumerate() {
                for (pi, p) in l.pages.iter().enumerate().filter(|(_, p)| !p.planned) {
                    let req = l.request(p, self.file_size);
                    match plan_page(p.page, &req, round, &p.fetched)? {
                        Some(r) => {
                            owners.push((li, pi, r.len()));
                            ranges.extend(r);
                        }
                        None => done.push((li, pi)),
                    }
                }
            }
            for (li, pi) in done {
                leaves[li].pages[pi].planned = true;
            }
            if owners.is_empty() {
                return Ok(());
            }
            let mut fetched = if ranges.is_empty() { Vec::new() } else { self.io.read_ranges(&ranges)? }.into_iter();
            for (li, pi, n) in owners {
                leaves[li].pages[pi].fetched.extend(fetched.by_ref().take(n));
            }
        }
        Err(Error::Internal("a page layout planned too many rounds of reads".into()))
    }

    /// Decodes a fetched leaf column.
    fn decode_leaf(&self, read: LeafRead) -> Result<LeafData> {
        let mut out = LeafBuilder::with_path(read.kind.clone(), read.path.clone(), read.capacity);
        if matches!(read.kind, LeafKind::Variable { .. }) {
            // Variable-width values of full-zip pages take at most the bytes of their rows:
            // room for all of them up front, so large values (images, documents) are not
            // copied again and again as the output grows.
            let bytes: u64 = read.pages.iter().map(|p| p.page.value_bytes(&p.rows)).sum();
            out.reserve_bytes(bytes as usize);
        }
        if read.path.max_rep > 0 {
            // Room for the levels and values of the selected rows (lists make them more
            // numerous than rows), estimated from the pages' item counts.
            let estimate: u64 =
                read.pages.iter().map(|p| p.page.num_levels().min(1 << 32) * p.rows.count() / p.page.num_rows.max(1)).sum();
            out.reserve(estimate as usize);
        }
        for p in &read.pages {
            crate::interrupt::check()?;
            let req = read.request(p, self.file_size);
            self.decode_page(p.page, &req, &p.fetched, &mut out)?;
        }
        let mut data = out.finish(&read.leaf.data_type)?;
        data.num_rows /= read.scale as usize;
        Ok(data)
    }

    /// Fetches and caches the metadata buffers of pages that have none yet.
    fn load_states(&self, pages: &[(&Page, &LeafKind)]) -> Result<()> {
        let mut wanted: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut ranges = Vec::new();
        for (i, (p, _)) in pages.iter().enumerate() {
            if p.state.get().is_some() {
                continue;
            }
            let idx = p.state_buffers();
            for &b in &idx {
                // The layout names buffers the page may not have (found by fuzzing).
                let &(pos, len) =
                    p.buffers.get(b).ok_or_else(|| Error::corrupt(format!("{}: a page lacks its buffer {b}", self.path)))?;
                ranges.push(pos..pos + len);
            }
            wanted.push((i, idx));
        }
        if wanted.is_empty() {
            return Ok(());
        }
        let mut fetched = self.io.read_ranges(&ranges)?.into_iter();
        for (i, idx) in wanted {
            let bufs: Vec<Buffer> = fetched.by_ref().take(idx.len()).collect();
            let bytes: u64 = bufs.iter().map(|b| b.len() as u64).sum();
            let (page, kind) = pages[i];
            let state = page.build_state(bufs, kind)?;
            if page.state.set(Arc::new(state)).is_ok() {
                self.held.fetch_add(bytes, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Decodes the rows of `req` of a page from the bytes its plan fetched.
    fn decode_page(&self, page: &Page, req: &PageRequest, fetched: &[Buffer], out: &mut LeafBuilder) -> Result<()> {
        let info = page.info();
        with_layout!(page, |l, s| l.decode(&info, s, req, fetched, out))
    }

    /// A description of every column's pages and encodings.
    pub fn describe(&self) -> Result<Vec<ColumnDescription>> {
        (0..self.num_columns())
            .map(|i| {
                let col = self.column(i)?;
                // Column-level buffers (rare: pages usually hold their own).
                let meta = file2::ColumnMetadata::decode(self.column_meta[i].as_slice())
                    .map_err(|e| Error::corrupt(format!("{}: column {i}: invalid ColumnMetadata: {e}", self.path)))?;
                Ok(ColumnDescription {
                    buffers: meta.buffer_offsets.iter().copied().zip(meta.buffer_sizes.iter().copied()).collect(),
                    pages: col
                        .pages
                        .iter()
                        .map(|p| PageDescription {
                            num_rows: p.num_rows,
                            buffers: p.buffers.clone(),
                            encoding: describe_page(&p.kind),
                        })
                        .collect(),
                })
            })
            .collect()
    }

    /// The raw bytes of global buffer `i`.
    pub fn read_global_buffer(&self, i: usize) -> Result<Buffer> {
        let (pos, len) = *self
            .global_buffers
            .get(i)
            .ok_or_else(|| Error::IndexOutOfRange(format!("global buffer {i} of {}", self.global_buffers.len())))?;
        self.io.read_range(pos..pos + len)
    }
}

/// One column's pages, for `metadata()`.
#[derive(Debug, Clone)]
pub struct ColumnDescription {
    /// (position, size) of each column-level buffer.
    pub buffers: Vec<(u64, u64)>,
    /// Its pages.
    pub pages: Vec<PageDescription>,
}

/// One page, for `metadata()`.
#[derive(Debug, Clone)]
pub struct PageDescription {
    /// Rows in the page.
    pub num_rows: u64,
    /// (position, size) of each buffer.
    pub buffers: Vec<(u64, u64)>,
    /// Human-readable layout and encodings.
    pub encoding: String,
}

fn describe_page(kind: &PageKind) -> String {
    match kind {
        PageKind::MiniBlock(l) => {
            let mut s = format!("miniblock(values={}", l.values.describe());
            if let Some(d) = &l.dictionary {
                s.push_str(&format!(", dictionary={} x{}", d.describe(), l.num_dictionary_items));
            }
            if let Some(d) = &l.def {
                s.push_str(&format!(", def={}", d.describe()));
            }
            if let Some(r) = &l.rep {
                s.push_str(&format!(", rep={}", r.describe()));
            }
            s.push(')');
            s
        }
        PageKind::FullZip(l) => {
            let v = match &l.kind {
                fullzip::ValueKind::Fixed { bits, dim, .. } => match dim {
                    Some(d) => format!("fixed_size_list({d}, {} bits)", bits / d),
                    None => format!("fixed({bits} bits)"),
                },
                fullzip::ValueKind::Variable { per_value, packed, .. } => match per_value {
                    fullzip::PerValue::None if packed.is_some() => {
                        let fields = packed.clone().unwrap_or_default();
                        let codecs = fields.iter().map(|f| f.raw_codec()).collect();
                        crate::encodings::Compression::VariablePackedStruct { fields, codecs }.describe()
                    }
                    fullzip::PerValue::None => "variable".to_string(),
                    fullzip::PerValue::Fsst(_) => "fsst".to_string(),
                    fullzip::PerValue::General(s) => format!("general({s:?})"),
                    fullzip::PerValue::PackedChildren(fields, codecs) => {
                        let v = crate::encodings::Compression::VariablePackedStruct {
                            fields: fields.clone(),
                            codecs: codecs.clone(),
                        };
                        v.describe()
                    }
                },
            };
            format!("fullzip({v})")
        }
        PageKind::Constant(l) => match &l.inline_value {
            Some(v) => format!("constant(inline {} bytes)", v.len()),
            None => "constant".to_string(),
        },
        PageKind::Blob(_) => "blob".to_string(),
        PageKind::V2_0(l) => format!("v2.0 {}", v2_0::describe(&l.encoding)),
    }
}

fn check_rows(column: &Column, num_rows: u64, path: &str, col: usize) -> Result<()> {
    let total: u64 = column.pages.iter().map(|p| p.num_rows).sum();
    if total != num_rows {
        return Err(Error::corrupt(format!("{path}: column {col} has {total} rows in its pages, the file has {num_rows}")));
    }
    Ok(())
}

/// Rows of a column to read.
#[derive(Clone)]
enum RowSelection<'a> {
    Range(Range<u64>),
    Rows(&'a [u64]),
    /// Sorted, non-overlapping ranges (the items of some lists).
    Ranges(&'a [Range<u64>]),
}

/// The pages of `column` that hold rows of `sel` (rows checked against the column's length
/// by the caller), with page-local selections, in page order.
fn page_groups<'c>(column: &'c Column, sel: &RowSelection<'_>) -> Vec<(&'c Page, PageRows)> {
    let mut groups: Vec<(&Page, PageRows)> = Vec::new();
    match sel {
        RowSelection::Range(rows) => {
            for p in column.pages.iter().filter(|p| p.first_row < rows.end && p.first_row + p.num_rows > rows.start) {
                let local = rows.start.max(p.first_row) - p.first_row..rows.end.min(p.first_row + p.num_rows) - p.first_row;
                groups.push((p, PageRows::Range(local)));
            }
        }
        RowSelection::Ranges(ranges) => {
            for p in column.pages.iter().filter(|p| p.num_rows > 0) {
                let local = v2_0_nested::page_local(ranges, p.first_row, p.first_row + p.num_rows);
                if !local.is_empty() {
                    groups.push((p, PageRows::Ranges(local)));
                }
            }
        }
        RowSelection::Rows(rows) => {
            let mut pi = 0;
            for &r in rows.iter() {
                while column.pages[pi].first_row + column.pages[pi].num_rows <= r {
                    pi += 1;
                }
                let page = &column.pages[pi];
                match groups.last_mut() {
                    Some((p, PageRows::Rows(v))) if std::ptr::eq(*p, page) => v.push(r - page.first_row),
                    _ => groups.push((page, PageRows::Rows(vec![r - page.first_row]))),
                }
            }
        }
    }
    groups
}

/// One leaf column of a read: its pages' rows, plans and fetched bytes.
struct LeafRead<'r> {
    leaf: &'r LanceField,
    path: LeafPath,
    kind: LeafKind,
    /// Page rows per row of the column (fixed-size lists of structs).
    scale: u64,
    capacity: usize,
    pages: Vec<PageRead<'r>>,
}

/// One page of a [`LeafRead`].
struct PageRead<'r> {
    page: &'r Page,
    rows: PageRows,
    table: Vec<u16>,
    nested: bool,
    /// The bytes of the plan's rounds so far, in the order planned.
    fetched: Vec<Buffer>,
    /// Whether the plan is complete.
    planned: bool,
}

impl LeafRead<'_> {
    fn request<'a>(&'a self, p: &'a PageRead, file_size: u64) -> PageRequest<'a> {
        PageRequest {
            rows: &p.rows,
            kind: &self.kind,
            data_type: &self.leaf.data_type,
            path: &self.path,
            table: &p.table,
            nested: p.nested,
            file_size,
        }
    }
}

/// Round `round` of the plan of a page (see [`PageLayout::plan`]).
fn plan_page(page: &Page, req: &PageRequest, round: usize, fetched: &[Buffer]) -> Result<Option<Vec<Range<u64>>>> {
    let info = page.info();
    with_layout!(page, |l, s| l.plan(&info, s, req, round, fetched))
}

impl Page {
    fn info(&self) -> PageInfo<'_> {
        PageInfo { num_rows: self.num_rows, buffers: &self.buffers }
    }

    /// The structural layers of a 2.1+ page.
    fn layers(&self) -> Option<&[Layer]> {
        match &self.kind {
            PageKind::MiniBlock(l) => Some(l.layers()),
            PageKind::FullZip(l) => Some(l.layers()),
            PageKind::Constant(l) => Some(l.layers()),
            PageKind::Blob(l) => Some(l.layers()),
            PageKind::V2_0(_) => None,
        }
    }

    /// Page buffers that make up the page's cached state.
    fn state_buffers(&self) -> Vec<usize> {
        let info = self.info();
        match &self.kind {
            PageKind::MiniBlock(l) => l.state_buffers(&info),
            PageKind::FullZip(l) => l.state_buffers(&info),
            PageKind::Constant(l) => l.state_buffers(&info),
            PageKind::Blob(l) => l.state_buffers(&info),
            PageKind::V2_0(l) => l.state_buffers(&info),
        }
    }

    fn build_state(&self, bufs: Vec<Buffer>, kind: &LeafKind) -> Result<PageState> {
        // Rows of a variable packed struct must be laid out as the schema's children say, and
        // only such a column may have them.
        let page_packed = match &self.kind {
            PageKind::FullZip(l) => match &l.kind {
                fullzip::ValueKind::Variable { packed, .. } => packed.as_ref(),
                _ => None,
            },
            _ => None,
        };
        match (kind, page_packed) {
            (LeafKind::VarPacked { fields }, Some(page)) if fields == page => {}
            // (an all-null page of such a column: constant layout, no packed rows at all)
            (LeafKind::VarPacked { .. }, None) if matches!(self.kind, PageKind::Constant(_)) => {}
            (LeafKind::VarPacked { .. }, _) | (_, Some(_)) => {
                return Err(Error::corrupt("the page's packed struct layout does not match the column's type"));
            }
            _ => {}
        }
        let info = self.info();
        Ok(match &self.kind {
            PageKind::MiniBlock(l) => PageState::MiniBlock(l.load_state(&info, bufs, kind)?),
            PageKind::FullZip(l) => PageState::FullZip(l.load_state(&info, bufs, kind)?),
            PageKind::Constant(l) => PageState::Constant(l.load_state(&info, bufs, kind)?),
            PageKind::Blob(l) => PageState::MiniBlock(l.load_state(&info, bufs, kind)?),
            PageKind::V2_0(l) => PageState::V2_0(l.load_state(&info, bufs, kind)?),
        })
    }

    /// Levels the page holds.
    fn num_levels(&self) -> u64 {
        let info = self.info();
        match &self.kind {
            PageKind::MiniBlock(l) => l.num_levels(&info),
            PageKind::FullZip(l) => l.num_levels(&info),
            _ => self.num_rows,
        }
    }

    /// Bytes of the values of `rows`, if the page's state tells (see [`PageLayout::value_bytes`]).
    fn value_bytes(&self, rows: &PageRows) -> u64 {
        match (&self.kind, self.state.get().map(|s| s.as_ref())) {
            (PageKind::FullZip(l), Some(PageState::FullZip(s))) => l.value_bytes(&self.info(), s, rows),
            _ => 0,
        }
    }
}

fn parse_page_layout(layout: enc21::PageLayout, ctx: &str) -> Result<PageKind> {
    use enc21::page_layout::Layout;
    Ok(match layout.layout {
        Some(Layout::MiniBlockLayout(m)) => PageKind::MiniBlock(MiniBlockLayout::from_pb(&m)?),
        Some(Layout::FullZipLayout(f)) => PageKind::FullZip(FullZipLayout::from_pb(&f)?),
        Some(Layout::ConstantLayout(c)) => PageKind::Constant(ConstantLayout::from_pb(&c)?),
        Some(Layout::BlobLayout(b)) => {
            let layers = crate::structural::repdef::Layer::parse_all(&b.layers)?;
            match b.inner_layout.and_then(|l| l.layout) {
                Some(Layout::MiniBlockLayout(m)) => {
                    let inner = MiniBlockLayout::from_pb(&m)?;
                    match &inner.values {
                        Compression::PackedStruct { bits, .. } if bits == &[64, 64] => {}
                        other => {
                            return Err(Error::not_supported(format!("{ctx}: blob descriptors encoded as {}", other.describe())))
                        }
                    }
                    PageKind::Blob(BlobLayout { inner, layers })
                }
                _ => return Err(Error::not_supported(format!("{ctx}: blob page whose descriptors are not mini-block"))),
            }
        }
        None => return Err(Error::corrupt(format!("{ctx}: page layout is empty"))),
    })
}

/// Assigns file columns to top-level fields.
fn map_fields_to_columns(
    schema: &LanceSchema,
    version: FileVersion,
    num_columns: usize,
    path: &str,
) -> Result<Vec<FieldColumns>> {
    let mut next = 0usize;
    let mut out = Vec::with_capacity(schema.fields.len());
    for f in &schema.fields {
        let count = if version.is_structural() { f.leaf_fields().len() } else { v2_0_nested::column_count(f) };
        out.push(FieldColumns { columns: (next..next + count).collect() });
        next += count;
    }
    if next != num_columns {
        return Err(Error::corrupt(format!("{path}: the schema needs {next} columns but the file has {num_columns}")));
    }
    Ok(out)
}

/// Per-field column indices, for dataset manifests (`DataFile.fields` / `column_indices`).
pub fn field_ids_and_columns(schema: &LanceSchema, version: FileVersion) -> (Vec<i32>, Vec<i32>) {
    let ids: Vec<i32> = if version.is_structural() {
        schema.fields.iter().flat_map(|f| f.leaf_fields()).map(|f| f.id).collect()
    } else {
        schema.fields.iter().flat_map(v2_0_nested::column_fields).map(|f| f.id).collect()
    };
    let cols = (0..ids.len() as i32).collect();
    (ids, cols)
}

/// A map from field name to index, for callers resolving projections repeatedly.
pub fn name_index(schema: &LanceSchema) -> HashMap<String, usize> {
    schema.fields.iter().enumerate().map(|(i, f)| (f.name.clone(), i)).collect()
}

/// 2.0 nested fields read their columns through the reader (plan → fetch → decode per
/// level; see [`v2_0_nested`]).
impl v2_0_nested::ColumnSource for FileReader {
    fn pages(&self, col: usize) -> Result<Vec<v2_0_nested::PageRef<'_>>> {
        self.column_ref(col)?
            .pages
            .iter()
            .map(|p| match &p.kind {
                PageKind::V2_0(l) => {
                    Ok(v2_0_nested::PageRef { num_rows: p.num_rows, encoding: &l.encoding, buffers: &p.buffers })
                }
                _ => Err(Error::corrupt(format!("{}: column {col} has a page that is not a 2.0 page", self.path))),
            })
            .collect()
    }

    fn fetch(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        self.io.read_ranges(ranges)
    }

    fn read_column(&self, col: usize, field: &LanceField, column_rows: u64, ranges: &[Range<u64>]) -> Result<ArrayRef> {
        let path = leaf_paths(field)?
            .into_iter()
            .next()
            .map(|(_, p)| p)
            .ok_or_else(|| Error::Internal(format!("field {:?} has no leaf", field.name)))?;
        let data = self.read_leaf(col, field, &path, RowSelection::Ranges(ranges), column_rows)?;
        assemble(field, vec![data])
    }
}

/// Where the rows of a field stored row by row live (see [`FileReader::direct_rows`]).
#[derive(Debug, Clone)]
pub struct DirectRows {
    /// Bytes of one value (fixed width), or `None` for variable-width values.
    pub width: Option<usize>,
    pages: Vec<DirectPage>,
}

#[derive(Debug, Clone)]
struct DirectPage {
    first_row: u64,
    num_rows: u64,
    /// Absolute file position of the page's values.
    position: u64,
    /// Variable width: the page's repetition index and the bytes of each value's length prefix.
    rows: Option<(RepIndex, usize)>,
}

/// Values gathered by [`FileReader::gather_rows`], possibly from several files.
#[derive(Debug)]
pub struct Gathered {
    data: MutableBuffer,
    /// End offsets of variable-width values (after a leading 0).
    offsets: Option<Vec<i64>>,
    rows: usize,
}

impl Gathered {
    /// An empty output for about `rows` rows laid out as `plan`.
    pub fn new(plan: &DirectRows, rows: usize) -> Self {
        match plan.width {
            Some(w) => Self { data: MutableBuffer::new(rows * w), offsets: None, rows: 0 },
            None => {
                let mut offsets = Vec::with_capacity(rows + 1);
                offsets.push(0);
                Self { data: MutableBuffer::new(0), offsets: Some(offsets), rows: 0 }
            }
        }
    }

    /// The gathered values as an array of `data_type` (fixed-width, or binary / large binary).
    pub fn into_array(self, data_type: &DataType) -> Result<ArrayRef> {
        let Some(offsets) = self.offsets else { return fixed_width_array(data_type, self.data.into(), self.rows) };
        let offsets = match data_type {
            DataType::LargeBinary => Buffer::from_vec(offsets),
            DataType::Binary => {
                let small: Option<Vec<i32>> = offsets.iter().map(|&o| i32::try_from(o).ok()).collect();
                Buffer::from_vec(
                    small.ok_or_else(|| Error::invalid_input("the values are too large for a binary column (2 GiB)"))?,
                )
            }
            other => return Err(Error::Internal(format!("variable-width values gathered as {other}"))),
        };
        let data = ArrayData::builder(data_type.clone())
            .len(self.rows)
            .add_buffer(offsets)
            .add_buffer(self.data.into())
            .build()
            .map_err(gathered_corrupt)?;
        Ok(arrow_array::make_array(data))
    }
}

/// Gathered rows that do not make a valid array (offsets out of order, a wrong length) came
/// from a corrupt file.
fn gathered_corrupt(e: arrow_schema::ArrowError) -> Error {
    Error::corrupt(format!("gathered rows are not valid Arrow data: {e}"))
}

/// A batch of arrays decoded from `what` (a file, a fragment): the schema came from the same
/// bytes, so arrays that do not fit it (a wrong length, nulls in a non-nullable column) are
/// a corrupt file, not a failed Arrow operation. Found by the `file_reader` fuzz target.
pub fn decoded_batch(schema: SchemaRef, arrays: Vec<ArrayRef>, rows: usize, what: &str) -> Result<RecordBatch> {
    let opts = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema, arrays, &opts)
        .map_err(|e| Error::corrupt(format!("{what}: the decoded columns do not fit the schema: {e}")))
}

/// Bytes of one value of a fixed-width type that a buffer holds back to back (primitives,
/// fixed-size binary, fixed-size lists of those); `None` for other types and booleans.
pub fn fixed_byte_width(data_type: &DataType) -> Option<usize> {
    match data_type {
        DataType::FixedSizeList(item, d) => fixed_byte_width(item.data_type())?.checked_mul(usize::try_from(*d).ok()?),
        DataType::FixedSizeBinary(w) => usize::try_from(*w).ok(),
        DataType::Boolean => None,
        d if d.is_primitive() => d.primitive_width(),
        _ => None,
    }
}

/// An array of `data_type` (see [`fixed_byte_width`]) over `len` values stored back to back
/// in `values`, without nulls.
pub fn fixed_width_array(data_type: &DataType, values: Buffer, len: usize) -> Result<ArrayRef> {
    let data = match data_type {
        DataType::FixedSizeList(item, d) => {
            let items = len.checked_mul(*d as usize).ok_or_else(|| Error::Internal("fixed-size list too long".into()))?;
            let child = fixed_width_array(item.data_type(), values, items)?;
            ArrayData::builder(data_type.clone()).len(len).add_child_data(child.to_data()).build().map_err(gathered_corrupt)?
        }
        _ => {
            let w = fixed_byte_width(data_type).ok_or_else(|| Error::Internal(format!("{data_type} is not fixed-width")))?;
            if values.len() != w * len {
                return Err(Error::Internal(format!("{} bytes for {len} values of {w} bytes", values.len())));
            }
            ArrayData::builder(data_type.clone()).len(len).add_buffer(values).build().map_err(gathered_corrupt)?
        }
    };
    Ok(arrow_array::make_array(data))
}
