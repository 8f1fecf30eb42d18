//! The data path of a dataset version: scans and takes over many fragments in one call.
//!
//! A [`TableSnapshot`] is one manifest's view of the data: the schema and the fragments.
//! Reading a fragment means, for each projected field, finding the data file that holds it
//! (`DataFile.fields` / `column_indices`; the last file listing a field wins, field id −2 is
//! a tombstone), reading all such files for the requested rows, filling fields that no file
//! holds with NULLs, dropping rows of the deletion vector and appending `_rowid` /
//! `_rowaddr` on request. Fragments (and, inside the file reader, columns) are read in
//! parallel on the fork-safe CPU pool.
//!
//! Rows are addressed three ways: *physical offsets* within a fragment (deleted rows
//! included), *row addresses* `(fragment_id << 32) | offset`, and *logical indices* into
//! the dataset's scan order (deleted rows excluded).
//!
//! This module holds the snapshot itself (its fragments, schema and projections); `rows`
//! counts and addresses rows (deletions, row ids, logical indices and row addresses),
//! `read` reads fragments and plans and runs scans, `take` reads rows in any order (copying
//! bytes straight out of the files where a field is stored row by row), and `blob` resolves
//! blob columns to their values.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::file::reader::DirectRows;
use crate::file::{FileReader, LanceSchema};
use crate::format::tablepb;
use crate::io::Store;
use crate::table::bases::BasePaths;
use crate::table::deletion::DeletionVector;
use crate::table::file_cache::{self, Admission, Kept};
use crate::table::manifest::FragmentPositions;

mod blob;
mod read;
mod rows;
mod take;

/// Name of the row-id column.
pub const ROW_ID: &str = "_rowid";
/// Name of the row-address column.
pub const ROW_ADDRESS: &str = "_rowaddr";
/// Field id of a tombstoned column in `DataFile.fields`.
pub const TOMBSTONE_FIELD_ID: i32 = -2;

/// What to add to, or how to read, the rows of a scan or take.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScanOptions {
    /// Append `_rowid` (the stable row id, or the row address when the dataset has none).
    pub with_row_id: bool,
    /// Append `_rowaddr`.
    pub with_row_address: bool,
    /// Read deleted rows too (used to write new columns that cover every physical row).
    pub include_deleted: bool,
    /// Whether the readers of data files opened on a miss of the reader cache are kept
    /// (see [`TableSnapshot::admission_for`]).
    pub admission: Admission,
    /// JSON columns come as stored (JSONB `large_binary`, `lance.json`), not as JSON text:
    /// for a filter that reads them through JSON functions only, which select from JSONB
    /// directly (the text of the rows it keeps is made afterwards).
    pub json_stored: bool,
}

/// A piece of a scan: a physical row range of one fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanTask {
    /// Index of the fragment in the snapshot.
    pub fragment: usize,
    /// Physical rows to read.
    pub rows: Range<u64>,
}

/// What a snapshot learns of one fragment as it reads (its manifest entry is in the
/// snapshot's manifest).
struct Fragment {
    physical_rows: OnceLock<u64>,
    deletions: OnceLock<Option<Arc<DeletionVector>>>,
    row_ids: OnceLock<Arc<Vec<u64>>>,
    /// The reader cache's entries for the fragment's data files, by file, as last found
    /// (see [`TableSnapshot::open_file_at`]).
    readers: Mutex<Vec<Weak<Kept>>>,
}

/// Requested rows of one fragment (physical offsets).
enum Rows<'a> {
    Range(Range<u64>),
    /// Sorted, unique.
    Offsets(&'a [u64]),
}

impl Rows<'_> {
    fn len(&self) -> usize {
        match self {
            Rows::Range(r) => (r.end - r.start) as usize,
            Rows::Offsets(o) => o.len(),
        }
    }
    fn offsets(&self) -> Vec<u64> {
        match self {
            Rows::Range(r) => r.clone().collect(),
            Rows::Offsets(o) => o.to_vec(),
        }
    }
}

/// One dataset version's schema and fragments, ready to read.
pub struct TableSnapshot {
    store: Store,
    schema: LanceSchema,
    /// The version's manifest, shared with whoever opened it (not copied).
    manifest: Arc<tablepb::Manifest>,
    fragments: Vec<Fragment>,
    /// Fragment index by id, made on first use.
    by_id: OnceLock<FragmentPositions>,
    bases: BasePaths,
    stable_row_ids: bool,
    /// How each (field, fragment) is gathered by copying bytes, or `None` if it is decoded
    /// (decided on first use: data files never change).
    direct_plans: Mutex<HashMap<(usize, usize), Option<Arc<(Arc<FileReader>, DirectRows)>>>>,
    /// Small fixed-width columns decoded whole for takes (see [`super::small_columns`]).
    small: super::small_columns::SmallColumns,
    /// The output schemas of the last projections read (see [`TableSnapshot::output_schema`]).
    output_schemas: Mutex<Vec<OutputSchema>>,
}

/// A projection, whether `_rowid` / `_rowaddr` are appended, and the schema of what it reads.
type OutputSchema = (Vec<usize>, (bool, bool, bool), SchemaRef);

/// Projections whose output schema a snapshot keeps.
const OUTPUT_SCHEMAS_KEPT: usize = 8;

impl std::fmt::Debug for TableSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableSnapshot").field("uri", &self.store.uri()).field("fragments", &self.fragments.len()).finish()
    }
}

/// Flag bit of datasets with stable row ids.
const FLAG_STABLE_ROW_IDS: u64 = 2;

impl TableSnapshot {
    /// A snapshot of `manifest` for the dataset at `store` (copies the manifest; see
    /// [`TableSnapshot::from_shared`]).
    pub fn new(store: Store, manifest: &tablepb::Manifest) -> Result<Self> {
        Self::from_shared(store, Arc::new(manifest.clone()))
    }

    /// A snapshot of `manifest` for the dataset at `store`, sharing the manifest.
    pub fn from_shared(store: Store, manifest: Arc<tablepb::Manifest>) -> Result<Self> {
        let schema = LanceSchema::from_pb(&manifest.fields, &manifest.schema_metadata)?;
        let bases = BasePaths::new(store.uri(), &manifest.base_paths)?;
        bases.validate(&manifest.fragments)?;
        let fragments = manifest
            .fragments
            .iter()
            .map(|_| Fragment {
                physical_rows: OnceLock::new(),
                deletions: OnceLock::new(),
                row_ids: OnceLock::new(),
                readers: Mutex::new(Vec::new()),
            })
            .collect();
        Ok(Self {
            store,
            schema,
            stable_row_ids: manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS != 0,
            manifest,
            fragments,
            by_id: OnceLock::new(),
            bases,
            direct_plans: Mutex::new(HashMap::new()),
            small: Default::default(),
            output_schemas: Mutex::new(Vec::new()),
        })
    }

    /// The dataset's Lance schema.
    pub fn schema(&self) -> &LanceSchema {
        &self.schema
    }

    /// Number of fragments.
    pub fn num_fragments(&self) -> usize {
        self.fragments.len()
    }

    /// Id of fragment `i`.
    pub fn fragment_id(&self, i: usize) -> u64 {
        self.manifest.fragments[i].id
    }

    /// The manifest entry of fragment `i`.
    pub fn fragment_meta(&self, i: usize) -> &tablepb::DataFragment {
        &self.manifest.fragments[i]
    }

    /// Index of the fragment with id `id`.
    pub fn fragment_index(&self, id: u64) -> Result<usize> {
        // lance 0.16 could give two fragments one id: pylance opens and scans such a
        // manifest, so lancepy does too, and refuses only what needs the id to name one
        // fragment (a row address, a fragment by id).
        let fragments = &self.manifest.fragments;
        match self.by_id.get_or_init(|| FragmentPositions::new(fragments)).find(fragments, id) {
            Some((_, true)) => Err(Error::corrupt(format!(
                "{}: two fragments have id {id}, so it names no single fragment (a manifest written by lance 0.16; \
                 roll back to an earlier version or rewrite the dataset)",
                self.store.uri()
            ))),
            Some((i, false)) => Ok(i),
            None => Err(Error::IndexOutOfRange(format!("the dataset has no fragment with id {id}"))),
        }
    }

    /// Resolves top-level column names (`None` = all) to field indices.
    pub fn projection(&self, columns: Option<&[String]>) -> Result<Vec<usize>> {
        match columns {
            None => Ok((0..self.schema.fields.len()).collect()),
            Some(names) => names
                .iter()
                .map(|n| {
                    self.schema.fields.iter().position(|f| &f.name == n).ok_or_else(|| {
                        let all: Vec<&str> = self.schema.fields.iter().map(|f| f.name.as_str()).collect();
                        Error::ColumnNotFound(format!("no column named {n:?} in the dataset; columns are {all:?}"))
                    })
                })
                .collect(),
        }
    }

    /// The schema of what a read with `projection` and `opts` returns.
    pub fn output_schema(&self, projection: &[usize], opts: ScanOptions) -> SchemaRef {
        // Asked once per fragment read: the schemas of the last few projections are kept.
        let flags = (opts.with_row_id, opts.with_row_address, opts.json_stored);
        let mut memo = self.output_schemas.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, _, schema)) = memo.iter().find(|(p, f, _)| p.as_slice() == projection && *f == flags) {
            return schema.clone();
        }
        let schema = self.build_output_schema(projection, opts);
        if memo.len() >= OUTPUT_SCHEMAS_KEPT {
            memo.remove(0);
        }
        memo.push((projection.to_vec(), flags, schema.clone()));
        schema
    }

    fn build_output_schema(&self, projection: &[usize], opts: ScanOptions) -> SchemaRef {
        let mut fields: Vec<Field> = projection
            .iter()
            .map(|&i| {
                let f = &self.schema.fields[i];
                if opts.json_stored && crate::jsonb::arrow::has_lance_json(&f.to_arrow()) {
                    f.to_arrow()
                } else {
                    f.output_arrow()
                }
            })
            .collect();
        if opts.with_row_id {
            fields.push(Field::new(ROW_ID, DataType::UInt64, true));
        }
        if opts.with_row_address {
            fields.push(Field::new(ROW_ADDRESS, DataType::UInt64, true));
        }
        Arc::new(Schema::new_with_metadata(fields, self.schema.metadata.clone()))
    }

    /// Opens data file `j` of fragment `i` (under the dataset root or one of the manifest's
    /// base paths), keeping a reader opened on a cache miss as `admission` says.
    ///
    /// A scan of many small fragments opens a file per fragment: the reader cache's entry is
    /// found again through the reference kept when this snapshot last found it
    /// ([`file_cache::reuse`]: no URI built, no lock shared by every reader), and through
    /// the cache, by URI, when it was evicted since or never found.
    fn open_file_at(&self, i: usize, j: usize, admission: Admission) -> Result<Arc<FileReader>> {
        let slots = &self.fragments[i].readers;
        let lock = || slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(reader) = lock().get(j).and_then(file_cache::reuse) {
            return Ok(reader);
        }
        let file = &self.manifest.fragments[i].files[j];
        let (reader, kept) = file_cache::open_data_file_kept(&self.store, &self.bases.data_file_uri(file)?, admission)
            .map_err(|e| self.bases.explain_missing(file.base_id, self.store.options(), e))?;
        let mut s = lock();
        if s.len() <= j {
            s.resize(j + 1, Weak::new());
        }
        s[j] = kept;
        Ok(reader)
    }

    /// `opts` for running `tasks`: a scan that passes over more data files than the reader
    /// cache keeps reads each file once, so the files it opens are kept only where there is
    /// room ([`Admission::IfRoom`]); evicting readers for them would evict the readers of
    /// files used again (this scan's own next time included) for readers never used again.
    pub fn admission_for(&self, tasks: &[ScanTask], opts: ScanOptions) -> ScanOptions {
        let limit = super::file_cache::max_files();
        let mut files = 0usize;
        let mut last = None;
        for t in tasks {
            if last != Some(t.fragment) {
                files += self.manifest.fragments[t.fragment].files.len();
                last = Some(t.fragment);
            }
            if files > limit {
                return ScanOptions { admission: Admission::IfRoom, ..opts };
            }
        }
        opts
    }

    /// Whether the dataset lives on object storage (requests, not a local file system).
    pub fn is_remote(&self) -> bool {
        self.store.is_remote()
    }

    /// Reads rows of fragment `i`.
    /// The kept small columns (see [`super::small_columns`]).
    pub(super) fn small_columns(&self) -> &super::small_columns::SmallColumns {
        &self.small
    }

    /// Maps `f` over jobs that each read files of the dataset: on the CPU pool locally, on
    /// the I/O pool on object storage, where a job mostly waits for its requests (the CPU
    /// pool would keep only a core's worth of files in flight).
    fn map_files<T: Send, R: Send>(&self, items: Vec<T>, parallel: bool, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
        if self.store.is_remote() {
            crate::parallel::map_io(items, parallel, f)
        } else {
            crate::parallel::map(items, parallel, f)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(ids: &[u64]) -> TableSnapshot {
        let fragments = ids.iter().map(|&id| tablepb::DataFragment { id, physical_rows: 1, ..Default::default() }).collect();
        let store = Store::open("memory://fragment-index").unwrap();
        TableSnapshot::new(store, &tablepb::Manifest { fragments, ..Default::default() }).unwrap()
    }

    #[test]
    fn fragments_are_found_by_id_sorted_or_not() {
        let sorted = snapshot(&[1, 2, 5, 9]);
        assert_eq!([1, 2, 5, 9].map(|id| sorted.fragment_index(id).unwrap()), [0, 1, 2, 3]);
        assert!(matches!(sorted.fragment_index(3), Err(Error::IndexOutOfRange(_))));
        let unsorted = snapshot(&[7, 3, 3, 1]);
        assert_eq!(unsorted.fragment_index(7).unwrap(), 0);
        assert_eq!(unsorted.fragment_index(1).unwrap(), 3);
        assert!(matches!(unsorted.fragment_index(3), Err(Error::Corrupt(_))), "two fragments share id 3");
        assert!(matches!(unsorted.fragment_index(2), Err(Error::IndexOutOfRange(_))));
    }
}
