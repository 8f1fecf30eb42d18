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
//!
//! The reader is split by responsibility: `metadata` opens a file (footer, schema, column
//! metadata) and resolves projections, `page` holds page layouts and their lazily loaded
//! state, `read` is the plan → fetch → decode loop behind `read_range` and `take`, `blob`
//! resolves legacy blob descriptions to their bytes, and `gather` is the direct-gather
//! fast path for fields stored row by row.
//!
//! [`PageLayout`]: crate::structural::layout::PageLayout

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

use arrow_buffer::Buffer;
use arrow_schema::SchemaRef;

use crate::file::container::{FileVersion, Footer};
use crate::io::ReaderRef;
use crate::schema::{LanceField, LanceSchema};
use crate::structural::repdef::LeafPath;

mod blob;
mod gather;
mod metadata;
mod page;
mod read;

pub use gather::{fixed_byte_width, fixed_width_array, DirectRows, Gathered};
pub use metadata::{field_ids_and_columns, name_index, ColumnDescription, PageDescription};
pub use page::{Column, Page, PageKind};
pub use read::decoded_batch;

/// How a top-level field is stored.
#[derive(Debug, Clone)]
struct FieldColumns {
    /// File columns of the field's leaves (2.1+) or of its fields in pre-order (2.0; see
    /// [`v2_0_nested::column_fields`](crate::structural::v2_0_nested::column_fields)).
    columns: Vec<usize>,
    /// The structure of each leaf (2.1+), made on the field's first read: a read of a few
    /// rows (a fragment of a table scan, a take) would otherwise spend as long walking the
    /// field's type as reading them.
    leaf_paths: OnceLock<Vec<LeafPath>>,
}

impl FieldColumns {
    fn new(columns: Vec<usize>) -> Self {
        Self { columns, leaf_paths: OnceLock::new() }
    }
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
    /// 2.0 files of pylance before 0.14: the columns (sorted) of string and binary fields
    /// stored as offsets over a second column of bytes.
    two_column_strings: Vec<usize>,
    file_size: u64,
    /// Bytes of file metadata this reader keeps in memory: the metadata region read on open
    /// plus the buffers of every page state loaded since (see [`FileReader::held_bytes`]).
    held: AtomicU64,
    /// A legacy (v1) file: read through its page table instead of the v2 columns.
    legacy: Option<Arc<crate::file::legacy::LegacyFile>>,
}

impl std::fmt::Debug for FileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileReader").field("path", &self.path).field("version", &self.version).finish()
    }
}
