//! Opening a file: the footer, offset tables, schema and column metadata read from its tail,
//! columns parsed on first use, projections resolved against the schema, and the
//! descriptions of columns and pages behind `metadata()`.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use arrow_buffer::Buffer;
use arrow_schema::{Schema, SchemaRef};
use prost::Message;

use super::page::{parse_page_layout, Column, Page, PageKind};
use super::{FieldColumns, FileReader};
use crate::error::{Error, Result};
use crate::file::container::{parse_offset_table, FileVersion, Footer, FOOTER_LEN};
use crate::format::{enc20, enc21, file2, filepb, TYPE_URL_ARRAY_ENCODING, TYPE_URL_PAGE_LAYOUT};
use crate::io::{open_reader, open_reader_with, ReaderRef, StorageOptions};
use crate::schema::LanceSchema;
use crate::structural::fullzip::{self};
use crate::structural::{v2_0, v2_0_nested};

/// Bytes read from the end of a file when opening it: where a request costs a round trip
/// (object storage), enough for most files' metadata in one request; where small reads are
/// cheap (local files), less, so a cold open of a file for a few rows does not bring 64 KiB
/// into the page cache (a second read fetches the rest of larger metadata).
const TAIL_READ: u64 = 64 * 1024;
const LOCAL_TAIL_READ: u64 = 16 * 1024;

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

    /// Opens the file at `uri` (a path or any supported URI) with storage options: a file
    /// of version 2.0 or above (the single-file API; legacy files are read through datasets,
    /// as pylance reads them).
    pub fn open_with_options(uri: &str, options: &StorageOptions) -> Result<Self> {
        Self::open_inner(open_reader_with(uri, options)?, false)
    }

    /// Opens the file at `uri` with storage options, legacy (v1) files too: the index files
    /// of older pylance (BTREE pages and lookups written before 0.21) are legacy files.
    pub fn open_any_with_options(uri: &str, options: &StorageOptions) -> Result<Self> {
        Self::open_inner(open_reader_with(uri, options)?, true)
    }

    /// Opens a file through an existing reader (legacy files too).
    pub fn open_with(io: ReaderRef) -> Result<Self> {
        Self::open_inner(io, true)
    }

    fn open_inner(io: ReaderRef, allow_legacy: bool) -> Result<Self> {
        let path = io.path().to_string();
        // One speculative read of the tail holds the footer and, for most files, all the
        // metadata (on object storage it also tells the size: one request in all).
        let tail_len = if io.cheap_small_reads() { LOCAL_TAIL_READ } else { TAIL_READ };
        let (size, tail) = io.read_tail(tail_len)?;
        if size < FOOTER_LEN as u64 {
            return Err(Error::corrupt(format!(
                "{path}: {size} bytes is too small to be a Lance file (the footer alone is {FOOTER_LEN} bytes)"
            )));
        }
        let tail_start = size.saturating_sub(tail_len);
        if crate::file::legacy::is_legacy_footer(tail.as_slice()) {
            if !allow_legacy {
                return Err(Error::not_supported(format!(
                    "{path}: a legacy (v1, version 0.1/0.2) Lance file; the file reader reads versions 2.0, 2.1 and \
                     2.2 (legacy files are read as part of a dataset)"
                )));
            }
            return Self::open_legacy(io, size, tail.as_slice(), path);
        }
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
        let two_column_strings =
            if version.is_structural() { Vec::new() } else { two_column_strings(&schema, &column_meta, &path)? };
        let fields = map_fields_to_columns(&schema, version, column_meta.len(), &two_column_strings, &path)?;
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
            two_column_strings,
            file_size: size,
            held: AtomicU64::new(region.len() as u64 + std::mem::size_of::<Self>() as u64),
            legacy: None,
        })
    }

    /// The legacy (v1) file behind this reader, if it is one.
    pub fn legacy(&self) -> Option<&crate::file::legacy::LegacyFile> {
        self.legacy.as_deref()
    }

    /// A legacy (v1) file: its schema and page table are read now; its fields have no v2
    /// columns (reads go through [`LegacyFile`](crate::file::legacy::LegacyFile)).
    fn open_legacy(io: ReaderRef, size: u64, tail: &[u8], path: String) -> Result<Self> {
        let legacy = crate::file::legacy::LegacyFile::open(io.clone(), size, tail)?;
        let schema = legacy.schema().clone();
        Ok(Self {
            io,
            path,
            version: FileVersion::Legacy,
            footer: Footer {
                column_meta_start: 0,
                cmo_table_pos: 0,
                gbo_table_pos: 0,
                num_global_buffers: 0,
                num_columns: 0,
                major: crate::file::legacy::FOOTER_VERSION.0,
                minor: crate::file::legacy::FOOTER_VERSION.1,
            },
            num_rows: legacy.num_rows(),
            columns: Vec::new(),
            arrow_schema: schema.to_arrow(),
            global_buffers: Vec::new(),
            column_meta: Vec::new(),
            fields: schema.fields.iter().map(|_| FieldColumns::new(Vec::new())).collect(),
            stored: schema.fields.iter().map(|_| None).collect(),
            two_column_strings: Vec::new(),
            schema,
            file_size: size,
            held: AtomicU64::new(std::mem::size_of::<Self>() as u64),
            legacy: Some(Arc::new(legacy)),
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
    pub(super) fn column_ref(&self, i: usize) -> Result<&Column> {
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

    /// The top-level field whose subtree holds field id `id` (a struct stored with only some
    /// of its children is found by any of theirs).
    pub fn field_containing_id(&self, id: i32) -> Option<usize> {
        self.schema.fields.iter().position(|f| {
            let mut all = Vec::new();
            f.walk(&mut all);
            all.iter().any(|c| c.id == id)
        })
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
    pub(super) fn projected_schema(&self, fields: &[usize]) -> SchemaRef {
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

/// Assigns file columns to top-level fields.
fn map_fields_to_columns(
    schema: &LanceSchema,
    version: FileVersion,
    num_columns: usize,
    two_column_strings: &[usize],
    path: &str,
) -> Result<Vec<FieldColumns>> {
    let mut next = 0usize;
    let mut out = Vec::with_capacity(schema.fields.len());
    for f in &schema.fields {
        let count = if version.is_structural() {
            f.leaf_fields().len()
        } else {
            v2_0_nested::file_column_count(f, next, &|c| two_column_strings.binary_search(&c).is_ok())
        };
        out.push(FieldColumns::new((next..next + count).collect()));
        next += count;
    }
    if next != num_columns {
        return Err(Error::corrupt(format!("{path}: the schema needs {next} columns but the file has {num_columns}")));
    }
    Ok(out)
}

/// The columns of a 2.0 file (sorted) that start a string or binary field stored in the
/// two-column layout of pylance before 0.14 (a `List` page of offsets, then a column of
/// bytes: see [`v2_0_nested::is_string_like`]); found from each such field's first page.
fn two_column_strings(schema: &LanceSchema, column_meta: &[Buffer], path: &str) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    let mut next = 0usize;
    for f in schema.fields.iter().flat_map(v2_0_nested::column_fields) {
        let col = next;
        next += 1;
        if !v2_0_nested::is_string_like(f) {
            continue;
        }
        let Some(meta) = column_meta.get(col) else { break }; // (the count is checked by the caller)
        let ctx = format!("{path}: column {col}");
        let meta = file2::ColumnMetadata::decode(meta.as_slice())
            .map_err(|e| Error::corrupt(format!("{ctx}: invalid ColumnMetadata: {e}")))?;
        let Some(page) = meta.pages.first() else { continue };
        let (url, value) = unpack_any(&page.encoding, &ctx)?;
        if url != TYPE_URL_ARRAY_ENCODING {
            continue;
        }
        let encoding =
            enc20::ArrayEncoding::decode(value).map_err(|e| Error::corrupt(format!("{ctx}: invalid ArrayEncoding: {e}")))?;
        if let Some(enc20::array_encoding::ArrayEncoding::List(_)) = encoding.array_encoding {
            out.push(col);
            next += 1; // the bytes
        }
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
