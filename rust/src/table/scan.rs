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

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::{new_empty_array, new_null_array, Array, ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::bases::BasePaths;
use super::deletion::{self, DeletionVector};
use super::rowids::decode_row_ids;
use crate::error::{Error, Result};
use crate::file::reader::{decoded_batch, fixed_byte_width, DirectRows, Gathered};
use crate::file::{FileReader, LanceField, LanceSchema};
use crate::format::tablepb;
use crate::io::Store;

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
}

/// A piece of a scan: a physical row range of one fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanTask {
    /// Index of the fragment in the snapshot.
    pub fragment: usize,
    /// Physical rows to read.
    pub rows: Range<u64>,
}

struct Fragment {
    meta: tablepb::DataFragment,
    physical_rows: OnceLock<u64>,
    deletions: OnceLock<Option<Arc<DeletionVector>>>,
    row_ids: OnceLock<Arc<Vec<u64>>>,
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
    fragments: Vec<Fragment>,
    by_id: HashMap<u64, usize>,
    bases: BasePaths,
    stable_row_ids: bool,
    /// How each (field, fragment) is gathered by copying bytes, or `None` if it is decoded
    /// (decided on first use: data files never change).
    direct_plans: Mutex<HashMap<(usize, usize), Option<Arc<(Arc<FileReader>, DirectRows)>>>>,
    /// Small fixed-width columns decoded whole for takes (see [`super::small_columns`]).
    small: super::small_columns::SmallColumns,
}

impl std::fmt::Debug for TableSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableSnapshot").field("uri", &self.store.uri()).field("fragments", &self.fragments.len()).finish()
    }
}

/// Flag bit of datasets with stable row ids.
const FLAG_STABLE_ROW_IDS: u64 = 2;

impl TableSnapshot {
    /// A snapshot of `manifest` for the dataset at `store`.
    pub fn new(store: Store, manifest: &tablepb::Manifest) -> Result<Self> {
        let schema = LanceSchema::from_pb(&manifest.fields, &manifest.schema_metadata)?;
        Self::with_fragments(store, schema, manifest.fragments.clone(), manifest)
    }

    /// A snapshot with the given schema and fragments (the rest taken from `manifest`).
    pub fn with_fragments(
        store: Store,
        schema: LanceSchema,
        fragments: Vec<tablepb::DataFragment>,
        manifest: &tablepb::Manifest,
    ) -> Result<Self> {
        let mut by_id = HashMap::new();
        for (i, f) in fragments.iter().enumerate() {
            if by_id.insert(f.id, i).is_some() {
                return Err(Error::corrupt(format!("{}: two fragments have id {}", store.uri(), f.id)));
            }
        }
        let bases = BasePaths::new(store.uri(), &manifest.base_paths)?;
        bases.validate(&fragments)?;
        let fragments = fragments
            .into_iter()
            .map(|meta| Fragment { meta, physical_rows: OnceLock::new(), deletions: OnceLock::new(), row_ids: OnceLock::new() })
            .collect();
        Ok(Self {
            store,
            schema,
            fragments,
            by_id,
            bases,
            stable_row_ids: manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS != 0,
            direct_plans: Mutex::new(HashMap::new()),
            small: Default::default(),
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
        self.fragments[i].meta.id
    }

    /// The manifest entry of fragment `i`.
    pub fn fragment_meta(&self, i: usize) -> &tablepb::DataFragment {
        &self.fragments[i].meta
    }

    /// Index of the fragment with id `id`.
    pub fn fragment_index(&self, id: u64) -> Result<usize> {
        self.by_id.get(&id).copied().ok_or_else(|| Error::IndexOutOfRange(format!("the dataset has no fragment with id {id}")))
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
        let mut fields: Vec<Field> = projection.iter().map(|&i| self.schema.fields[i].output_arrow()).collect();
        if opts.with_row_id {
            fields.push(Field::new(ROW_ID, DataType::UInt64, true));
        }
        if opts.with_row_address {
            fields.push(Field::new(ROW_ADDRESS, DataType::UInt64, true));
        }
        Arc::new(Schema::new_with_metadata(fields, self.schema.metadata.clone()))
    }

    /// Opens a data file (under the dataset root or one of the manifest's base paths).
    fn open_file(&self, file: &tablepb::DataFile) -> Result<Arc<FileReader>> {
        super::file_cache::open_data_file(&self.store, &self.bases.data_file_uri(file)?)
            .map_err(|e| self.bases.explain_missing(file.base_id, self.store.options(), e))
    }

    /// Physical rows of fragment `i` (deleted rows included).
    pub fn physical_rows(&self, i: usize) -> Result<u64> {
        let f = &self.fragments[i];
        if let Some(n) = f.physical_rows.get() {
            return Ok(*n);
        }
        // Hand-made datasets may omit physical_rows; the first data file knows.
        let n = match (f.meta.physical_rows, f.meta.files.first()) {
            (0, Some(file)) => self.open_file(file)?.num_rows(),
            (n, _) => n,
        };
        Ok(*f.physical_rows.get_or_init(|| n))
    }

    /// The deletion vector of fragment `i`, if it has one.
    pub fn deletions(&self, i: usize) -> Result<Option<Arc<DeletionVector>>> {
        let f = &self.fragments[i];
        if let Some(d) = f.deletions.get() {
            return Ok(d.clone());
        }
        let dv = match &f.meta.deletion_file {
            Some(d) if !(d.id == 0 && d.read_version == 0 && d.num_deleted_rows == 0) => {
                Some(Arc::new(deletion::read(&self.store, &self.bases, f.meta.id, d)?))
            }
            _ => None,
        };
        Ok(f.deletions.get_or_init(|| dv).clone())
    }

    fn deleted_count(&self, i: usize) -> Result<u64> {
        let f = &self.fragments[i];
        match &f.meta.deletion_file {
            Some(d) if d.num_deleted_rows > 0 => Ok(d.num_deleted_rows),
            Some(_) => Ok(self.deletions(i)?.map(|d| d.len()).unwrap_or(0)),
            None => Ok(0),
        }
    }

    /// Live (not deleted) rows of fragment `i`.
    pub fn live_rows(&self, i: usize) -> Result<u64> {
        Ok(self.physical_rows(i)?.saturating_sub(self.deleted_count(i)?))
    }

    /// Live rows of the whole snapshot.
    pub fn count_rows(&self) -> Result<u64> {
        (0..self.fragments.len()).map(|i| self.live_rows(i)).sum()
    }

    fn row_ids(&self, i: usize) -> Result<Arc<Vec<u64>>> {
        let f = &self.fragments[i];
        if let Some(r) = f.row_ids.get() {
            return Ok(r.clone());
        }
        let rows = self.physical_rows(i)?;
        let ids = match &f.meta.row_id_sequence {
            Some(tablepb::data_fragment::RowIdSequence::InlineRowIds(b)) => decode_row_ids(b, rows)?,
            Some(tablepb::data_fragment::RowIdSequence::ExternalRowIds(ext)) => {
                let data = self.store.read(&ext.path)?;
                let end = ext.offset.checked_add(ext.size).filter(|&e| e <= data.len() as u64).ok_or_else(|| {
                    Error::corrupt(format!("row-id sequence {}..+{} lies outside {}", ext.offset, ext.size, ext.path))
                })?;
                decode_row_ids(&data[ext.offset as usize..end as usize], rows)?
            }
            None => {
                return Err(Error::corrupt(format!(
                    "fragment {} has no row-id sequence but the dataset uses stable row ids",
                    f.meta.id
                )))
            }
        };
        if ids.len() as u64 != self.physical_rows(i)? {
            return Err(Error::corrupt(format!(
                "fragment {}: {} row ids for {} rows",
                f.meta.id,
                ids.len(),
                self.physical_rows(i)?
            )));
        }
        Ok(f.row_ids.get_or_init(|| Arc::new(ids)).clone())
    }

    /// Physical offset of live row `k` of fragment `i`.
    fn nth_live(&self, i: usize, k: u64, dv: Option<&DeletionVector>) -> Result<u64> {
        let phys = self.physical_rows(i)?;
        let Some(dv) = dv else { return Ok(k) };
        // Smallest p with (p + 1) - rank(p) == k + 1.
        let (mut lo, mut hi) = (k, phys.saturating_sub(1));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let live_through = mid + 1 - dv.rank(mid as u32);
            if live_through > k {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        if lo >= phys || dv.contains(lo as u32) {
            return Err(Error::IndexOutOfRange(format!("live row {k} is past the end of fragment {}", self.fragment_id(i))));
        }
        Ok(lo)
    }

    /// Where `field`'s data is in fragment `frag`: (data file index, the file column its
    /// first stored field starts at if recorded, that field's id).
    fn locate(&self, frag: &tablepb::DataFragment, field: &LanceField) -> Option<(usize, Option<usize>, i32)> {
        let mut ids = Vec::new();
        field.walk(&mut ids);
        for f in ids {
            for (fi, file) in frag.files.iter().enumerate().rev() {
                if let Some(pos) = file.fields.iter().position(|&id| id == f.id && id != TOMBSTONE_FIELD_ID) {
                    let col = file.column_indices.get(pos).and_then(|&c| usize::try_from(c).ok());
                    return Some((fi, col, f.id));
                }
            }
        }
        None
    }

    /// The values of blob column `column` described by `descriptions` (what a read returns
    /// for it) at row addresses `addresses`, as large binary, each file's byte ranges fetched
    /// with one coalescing read. Legacy (2.0 / 2.1) values are in the row's data file;
    /// blob-v2 values inline in it or in its sidecars. External blobs are not supported.
    pub fn blob_values(&self, column: &str, addresses: &[u64], descriptions: &dyn Array) -> Result<ArrayRef> {
        use arrow_array::cast::AsArray;
        use arrow_array::types::{UInt32Type, UInt64Type, UInt8Type};
        let fidx = self.projection(Some(&[column.to_string()]))?[0];
        let field = &self.schema.fields[fidx];
        let (legacy, v2) = (field.is_legacy_blob(), field.is_blob_v2());
        if !legacy && !v2 {
            return Err(Error::invalid_input(format!("column {column:?} is not a blob column")));
        }
        let bad = || Error::invalid_input(format!("the descriptions of blob column {column:?} do not have its description type"));
        let s = descriptions.as_struct_opt().ok_or_else(bad)?;
        if s.len() != addresses.len() {
            return Err(Error::invalid_input(format!("{} descriptions for {} row addresses", s.len(), addresses.len())));
        }
        let u64_col =
            |name: &str| s.column_by_name(name).and_then(|c| c.as_primitive_opt::<UInt64Type>().cloned()).ok_or_else(bad);
        let (pos, size) = (u64_col("position")?, u64_col("size")?);
        let kinds = if v2 {
            Some(s.column_by_name("kind").and_then(|c| c.as_primitive_opt::<UInt8Type>().cloned()).ok_or_else(bad)?)
        } else {
            None
        };
        let ids = if v2 {
            Some(s.column_by_name("blob_id").and_then(|c| c.as_primitive_opt::<UInt32Type>().cloned()).ok_or_else(bad)?)
        } else {
            None
        };
        // Where each row's bytes are: (object, range), or None for a null value.
        let blob_uris = s.column_by_name("blob_uri").and_then(|c| c.as_string_opt::<i32>().cloned());
        let mut uris: Vec<String> = Vec::new();
        let mut uri_index: HashMap<String, usize> = HashMap::new();
        let mut external_uris: std::collections::HashSet<usize> = std::collections::HashSet::new();
        // (an external blob without a slice is all of its object: its end is known once it
        // is opened, and marked `u64::MAX` until then)
        let mut wanted: Vec<Option<(usize, Range<u64>)>> = Vec::with_capacity(s.len());
        for (i, &addr) in addresses.iter().enumerate() {
            let (p, n) = (pos.value(i), size.value(i));
            let null = s.is_null(i) || pos.is_null(i) || size.is_null(i) || (legacy && n == 0 && p != 0);
            let external = kinds.as_ref().is_some_and(|k| k.value(i) == 3);
            if null || (n == 0 && !external) {
                wanted.push(if null { None } else { Some((usize::MAX, 0..0)) });
                continue;
            }
            let frag = &self.fragments[self.fragment_index(addr >> 32)?].meta;
            let (file_idx, _, _) = self.locate(frag, field).ok_or_else(|| {
                Error::invalid_input(format!("row address {addr}: its fragment holds no data for column {column:?}"))
            })?;
            let data_uri = self.bases.data_file_uri(&frag.files[file_idx])?;
            let uri = match kinds.as_ref().map(|k| k.value(i)) {
                None | Some(0) => data_uri,
                Some(1 | 2) => {
                    let stem = data_uri.strip_suffix(".lance").unwrap_or(&data_uri);
                    format!("{stem}/{}", super::blob_write::sidecar_name(ids.as_ref().expect("v2").value(i)))
                }
                Some(3) => {
                    let uri = blob_uris.as_ref().filter(|u| u.is_valid(i)).map(|u| u.value(i)).unwrap_or("");
                    if !(uri.contains("://") || uri.starts_with('/')) {
                        return Err(Error::not_supported(format!(
                            "row address {addr}: external blob {uri:?} is not an absolute URI (base-relative external \
                             blobs are not supported)"
                        )));
                    }
                    uri.to_string()
                }
                Some(k) => return Err(Error::corrupt(format!("row address {addr}: unknown blob kind {k}"))),
            };
            let end = if external && p == 0 && n == 0 {
                u64::MAX
            } else {
                p.checked_add(n).ok_or_else(|| Error::corrupt(format!("row address {addr}: blob at {p}..+{n} overflows")))?
            };
            let next = uris.len();
            let u = *uri_index.entry(uri.clone()).or_insert(next);
            if u == next {
                uris.push(uri);
            }
            if external {
                external_uris.insert(u);
            }
            wanted.push(Some((u, p..end)));
        }
        let mut fetched: Vec<std::vec::IntoIter<arrow_buffer::Buffer>> = Vec::with_capacity(uris.len());
        let mut total = 0usize;
        for (u, uri) in uris.iter().enumerate() {
            let reader = self.store.reader_for_uri(uri)?;
            let size = reader.size()?;
            let ranges: Vec<Range<u64>> = wanted
                .iter()
                .flatten()
                .filter(|(w, _)| *w == u)
                .map(|(_, r)| if r.end == u64::MAX { 0..size } else { r.clone() })
                .collect();
            // Values stored in the dataset are stored once: more bytes asked of one file than it
            // has means descriptions repeated by a hostile file (external objects may be shared).
            let asked: u64 = ranges.iter().map(|r| r.end - r.start).sum();
            if asked > size && !external_uris.contains(&u) {
                return Err(Error::corrupt(format!("{uri}: blob descriptions ask for {asked} bytes of a {size}-byte file")));
            }
            if let Some(r) = ranges.iter().find(|r| r.end > size) {
                return Err(Error::corrupt(format!(
                    "{uri}: blob at {}..{} lies outside the object ({size} bytes)",
                    r.start, r.end
                )));
            }
            let bufs = reader.read_ranges(&ranges)?;
            total += bufs.iter().map(|b| b.len()).sum::<usize>();
            fetched.push(bufs.into_iter());
        }
        let mut builder = arrow_array::builder::LargeBinaryBuilder::with_capacity(s.len(), total);
        for w in &wanted {
            match w {
                None => builder.append_null(),
                Some((usize::MAX, _)) => builder.append_value(b""),
                Some((u, _)) => {
                    let b = fetched[*u].next().ok_or_else(|| Error::Internal("a blob was not fetched".into()))?;
                    builder.append_value(b.as_slice());
                }
            }
        }
        Ok(Arc::new(builder.finish()))
    }

    /// Reads rows of fragment `i`.
    /// The kept small columns (see [`super::small_columns`]).
    pub(super) fn small_columns(&self) -> &super::small_columns::SmallColumns {
        &self.small
    }

    /// Physical rows `rows` of fragment `i` (see [`TableSnapshot::read_fragment`]).
    pub(super) fn read_fragment_range(
        &self,
        i: usize,
        projection: &[usize],
        rows: Range<u64>,
        opts: ScanOptions,
    ) -> Result<RecordBatch> {
        self.read_fragment(i, projection, Rows::Range(rows), opts)
    }

    fn read_fragment(&self, i: usize, projection: &[usize], rows: Rows<'_>, opts: ScanOptions) -> Result<RecordBatch> {
        let frag = &self.fragments[i].meta;
        let phys = self.physical_rows(i)?;
        let last = match &rows {
            Rows::Range(r) => r.end,
            Rows::Offsets(o) => o.last().map(|l| l + 1).unwrap_or(0),
        };
        if last > phys {
            return Err(Error::IndexOutOfRange(format!(
                "row {} is past the end of fragment {} ({phys} rows)",
                last - 1,
                frag.id
            )));
        }
        let n = rows.len();
        let mut columns: Vec<Option<ArrayRef>> = vec![None; projection.len()];
        // Group the projected fields by data file.
        let mut by_file: Vec<(usize, Vec<(usize, Option<usize>, i32)>)> = Vec::new();
        for (pos, &fidx) in projection.iter().enumerate() {
            if let Some((file, col, id)) = self.locate(frag, &self.schema.fields[fidx]) {
                match by_file.iter_mut().find(|(f, _)| *f == file) {
                    Some((_, v)) => v.push((pos, col, id)),
                    None => by_file.push((file, vec![(pos, col, id)])),
                }
            }
        }
        for (file_idx, wanted) in by_file {
            crate::interrupt::check()?;
            let file = &frag.files[file_idx];
            let reader = self.open_file(file)?;
            let mut file_fields = Vec::with_capacity(wanted.len());
            for &(_, col, id) in &wanted {
                let f = col.and_then(|c| reader.field_starting_at_column(c)).or_else(|| reader.field_with_id(id));
                file_fields.push(f.ok_or_else(|| {
                    Error::corrupt(format!("{}: no column for field id {id} (column index {col:?})", reader.path()))
                })?);
            }
            if reader.num_rows() < phys {
                return Err(Error::corrupt(format!(
                    "{}: has {} rows but fragment {} has {phys}",
                    reader.path(),
                    reader.num_rows(),
                    frag.id
                )));
            }
            let batch = match &rows {
                Rows::Range(r) => reader.read_range(r.start, r.end - r.start, &file_fields)?,
                Rows::Offsets(o) => reader.take(o, &file_fields)?,
            };
            for ((pos, _, _), array) in wanted.iter().zip(batch.columns()) {
                columns[*pos] = Some(array.clone());
            }
        }
        let mut arrays = Vec::with_capacity(projection.len() + 2);
        for (pos, &fidx) in projection.iter().enumerate() {
            let field = self.schema.fields[fidx].output_arrow();
            let array = match columns[pos].take() {
                Some(a) => conform(a, &field)?,
                None => {
                    if !field.is_nullable() {
                        return Err(Error::corrupt(format!(
                            "fragment {} has no data for the non-nullable column {:?}",
                            frag.id,
                            field.name()
                        )));
                    }
                    new_null_array(field.data_type(), n)
                }
            };
            arrays.push(array);
        }
        let mut offsets: Option<Vec<u64>> = None;
        // Drop deleted rows.
        if !opts.include_deleted {
            if let Some(dv) = self.deletions(i)? {
                let offs = rows.offsets();
                let keep: BooleanArray = offs.iter().map(|&o| Some(!dv.contains(o as u32))).collect();
                if keep.false_count() > 0 {
                    arrays = arrays
                        .iter()
                        .map(|a| arrow_select::filter::filter(a.as_ref(), &keep).map_err(Error::from))
                        .collect::<Result<_>>()?;
                    offsets = Some(offs.into_iter().filter(|&o| !dv.contains(o as u32)).collect());
                } else {
                    offsets = Some(offs);
                }
            }
        }
        let num_out = offsets.as_ref().map(|o| o.len()).unwrap_or(n);
        if opts.with_row_id || opts.with_row_address {
            let offs = offsets.unwrap_or_else(|| rows.offsets());
            // Deleted rows read anyway have neither a row id nor an address (null, as in pylance).
            let deleted = if opts.include_deleted { self.deletions(i)? } else { None };
            let deleted = deleted.filter(|dv| offs.iter().any(|&o| dv.contains(o as u32)));
            let unless_deleted = |a: UInt64Array| -> UInt64Array {
                match &deleted {
                    Some(dv) => a.iter().zip(&offs).map(|(v, &o)| v.filter(|_| !dv.contains(o as u32))).collect(),
                    None => a,
                }
            };
            if opts.with_row_id {
                let ids: UInt64Array = if self.stable_row_ids {
                    let seq = self.row_ids(i)?;
                    offs.iter().map(|&o| seq[o as usize]).collect()
                } else {
                    offs.iter().map(|&o| (frag.id << 32) | o).collect()
                };
                arrays.push(Arc::new(unless_deleted(ids)));
            }
            if opts.with_row_address {
                arrays.push(Arc::new(unless_deleted(offs.iter().map(|&o| (frag.id << 32) | o).collect())));
            }
        }
        decoded_batch(self.output_schema(projection, opts), arrays, num_out, &format!("fragment {}", frag.id))
    }

    /// Plans a scan of `fragments` (indices; `None` = all) skipping `offset` live rows and
    /// returning at most `limit`, in tasks of at most `batch_rows` physical rows.
    pub fn plan_scan(
        &self,
        fragments: Option<&[usize]>,
        offset: u64,
        limit: Option<u64>,
        batch_rows: u64,
        opts: ScanOptions,
    ) -> Result<Vec<ScanTask>> {
        let batch_rows = batch_rows.max(1);
        let all: Vec<usize> = (0..self.fragments.len()).collect();
        let order = fragments.unwrap_or(&all);
        let mut skip = offset;
        let mut remaining = limit.unwrap_or(u64::MAX);
        let mut tasks = Vec::new();
        for &i in order {
            if remaining == 0 {
                break;
            }
            if i >= self.fragments.len() {
                return Err(Error::IndexOutOfRange(format!("fragment index {i}")));
            }
            let phys = self.physical_rows(i)?;
            let dv = if opts.include_deleted { None } else { self.deletions(i)? };
            let live = match &dv {
                Some(d) => phys - d.range_cardinality(0..phys.min(u32::MAX as u64 + 1) as u32).min(phys),
                None => phys,
            };
            if skip >= live {
                skip -= live;
                continue;
            }
            let start = self.nth_live(i, skip, dv.as_deref())?;
            skip = 0;
            let mut pos = start;
            while pos < phys && remaining > 0 {
                let mut end = (pos + batch_rows).min(phys);
                let live_in = match &dv {
                    Some(d) => (end - pos) - d.range_cardinality(pos as u32..end as u32),
                    None => end - pos,
                };
                if live_in > remaining {
                    // Cut right after the last live row that is still wanted.
                    let before = match &dv {
                        Some(d) => pos - d.range_cardinality(0..pos as u32),
                        None => pos,
                    };
                    end = self.nth_live(i, before + remaining - 1, dv.as_deref())? + 1;
                    remaining = 0;
                } else {
                    remaining -= live_in;
                }
                tasks.push(ScanTask { fragment: i, rows: pos..end });
                pos = end;
            }
        }
        Ok(tasks)
    }

    /// Runs one scan task.
    pub fn run_task(&self, task: &ScanTask, projection: &[usize], opts: ScanOptions) -> Result<RecordBatch> {
        self.read_fragment(task.fragment, projection, Rows::Range(task.rows.clone()), opts)
    }

    /// Runs tasks in parallel; batches come back in task order.
    pub fn run_tasks(&self, tasks: Vec<ScanTask>, projection: &[usize], opts: ScanOptions) -> Result<Vec<RecordBatch>> {
        self.map_files(tasks, true, |t| self.run_task(&t, projection, opts)).into_iter().collect()
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

    /// Whether the dataset lives on object storage (requests, not a local file system).
    pub fn is_remote(&self) -> bool {
        self.store.is_remote()
    }

    /// Reads the rows at logical `indices` (scan order, deleted rows excluded). The output
    /// follows the input order; repeats are allowed.
    pub fn take(&self, indices: &[u64], projection: &[usize], opts: ScanOptions) -> Result<RecordBatch> {
        self.take_physical(&self.index_requests(indices)?, projection, opts)
    }

    /// (fragment, physical offset) of each logical row index, in order.
    pub fn index_requests(&self, indices: &[u64]) -> Result<Vec<(usize, u64)>> {
        let mut starts = Vec::with_capacity(self.fragments.len() + 1);
        let mut total = 0u64;
        for i in 0..self.fragments.len() {
            starts.push(total);
            total += self.live_rows(i)?;
        }
        let mut requests: Vec<(usize, u64)> = Vec::with_capacity(indices.len());
        for &idx in indices {
            if idx >= total {
                return Err(Error::IndexOutOfRange(format!("row index {idx} is out of range for a dataset of {total} rows")));
            }
            let fi = starts.partition_point(|&s| s <= idx) - 1;
            let dv = self.deletions(fi)?;
            requests.push((fi, self.nth_live(fi, idx - starts[fi], dv.as_deref())?));
        }
        Ok(requests)
    }

    /// Reads the rows at row `addresses` (`fragment_id << 32 | offset`). Deleted rows are
    /// skipped; the output otherwise follows the input order.
    pub fn take_addresses(&self, addresses: &[u64], projection: &[usize], opts: ScanOptions) -> Result<RecordBatch> {
        self.take_physical(&self.address_requests(addresses, opts.include_deleted)?, projection, opts)
    }

    /// (fragment, physical offset) of each row address, in order; deleted rows are skipped
    /// unless `include_deleted`.
    pub fn address_requests(&self, addresses: &[u64], include_deleted: bool) -> Result<Vec<(usize, u64)>> {
        let mut requests = Vec::with_capacity(addresses.len());
        for &a in addresses {
            let fi = self.fragment_index(a >> 32)?;
            let off = a & 0xFFFF_FFFF;
            if off >= self.physical_rows(fi)? {
                return Err(Error::IndexOutOfRange(format!("row address {a}: fragment {} has no row {off}", a >> 32)));
            }
            if !include_deleted && self.deletions(fi)?.is_some_and(|d| d.contains(off as u32)) {
                continue;
            }
            requests.push((fi, off));
        }
        Ok(requests)
    }

    /// Hands each value of binary column `fidx` at `requests` (in order) to `f` as a slice of
    /// the file, if every fragment involved stores it row by row (see
    /// [`TableSnapshot::direct_column`]); `Ok(false)`, and nothing visited, otherwise.
    pub fn visit_binary(&self, requests: &[(usize, u64)], fidx: usize, f: impl FnMut(&[u8]) -> Result<()>) -> Result<bool> {
        if !matches!(self.schema.fields[fidx].to_arrow().data_type(), DataType::Binary | DataType::LargeBinary) {
            return Ok(false);
        }
        let fragments = fragments_of(requests);
        match self.direct_column(fidx, &fragments)? {
            Some(direct) => direct.visit(requests, f).map(|()| true),
            None => Ok(false),
        }
    }

    fn take_physical(&self, requests: &[(usize, u64)], projection: &[usize], opts: ScanOptions) -> Result<RecordBatch> {
        let schema = self.output_schema(projection, opts);
        // Vectors, images and other values stored row by row: each row's bytes are copied
        // straight into its place in the output, across fragments, in request order.
        let fragments = fragments_of(requests);
        let direct = projection.iter().map(|&f| self.direct_column(f, &fragments)).collect::<Result<Vec<_>>>()?;
        // Their reads start now (when not cached), and go on while other columns decode.
        for d in direct.iter().flatten() {
            d.prefetch(requests);
        }
        // Small columns (a label next to vectors) picked out of columns decoded whole.
        let mut small = Vec::with_capacity(projection.len());
        for (&f, d) in projection.iter().zip(&direct) {
            small.push(if d.is_none() { self.take_small_column(f, requests, &fragments)? } else { None });
        }
        let rest: Vec<usize> = projection
            .iter()
            .zip(direct.iter().zip(&small))
            .filter(|(_, (d, s))| d.is_none() && s.is_none())
            .map(|(&f, _)| f)
            .collect();
        let mut decoded = if rest.is_empty() && !opts.with_row_id && !opts.with_row_address {
            Vec::new()
        } else {
            self.take_decoded(requests, &rest, opts)?
        }
        .into_iter();
        let mut arrays = Vec::with_capacity(schema.fields().len());
        for ((plan, kept), field) in direct.iter().zip(small).zip(schema.fields()) {
            arrays.push(match (plan, kept) {
                (Some(plan), _) => plan.gather(requests, field.data_type())?,
                (None, Some(kept)) => conform(kept, field)?,
                (None, None) => decoded.next().ok_or_else(|| Error::Internal("a decoded column is missing".into()))?,
            });
        }
        arrays.extend(decoded); // _rowid, _rowaddr
        decoded_batch(schema, arrays, requests.len(), "a take across fragments")
    }

    /// How to gather field `fidx` from `fragments` (sorted indices) by copying bytes, if each of
    /// them stores it row by row, alike (see [`FileReader::direct_rows`]).
    pub(super) fn direct_column(&self, fidx: usize, fragments: &[usize]) -> Result<Option<DirectColumn>> {
        let field = self.schema.fields[fidx].output_arrow();
        let width = fixed_byte_width(field.data_type());
        if width.is_none() && !matches!(field.data_type(), DataType::Binary | DataType::LargeBinary) {
            return Ok(None);
        }
        let mut plans = Vec::with_capacity(fragments.len());
        for &fi in fragments {
            let cached = self.direct_plans.lock().unwrap_or_else(|p| p.into_inner()).get(&(fidx, fi)).cloned();
            let plan = match cached {
                Some(plan) => plan,
                None => {
                    let plan = self.direct_plan(fidx, fi, &field)?.filter(|(_, rows)| rows.width == width).map(Arc::new);
                    self.direct_plans.lock().unwrap_or_else(|p| p.into_inner()).insert((fidx, fi), plan.clone());
                    plan
                }
            };
            match plan {
                Some(plan) => plans.push(plan),
                None => return Ok(None),
            }
        }
        Ok(Some(DirectColumn { fragments: fragments.to_vec(), plans }))
    }

    /// Whether fragment `fi` stores field `fidx` row by row, and where.
    fn direct_plan(&self, fidx: usize, fi: usize, field: &Field) -> Result<Option<(Arc<FileReader>, DirectRows)>> {
        let frag = &self.fragments[fi].meta;
        // Anything unusual (a column missing from a fragment, files shorter than the fragment)
        // is left to the decoding path, which fills or reports it.
        let Some((file_idx, col, id)) = self.locate(frag, &self.schema.fields[fidx]) else { return Ok(None) };
        let reader = self.open_file(&frag.files[file_idx])?;
        let Some(ff) = col.and_then(|c| reader.field_starting_at_column(c)).or_else(|| reader.field_with_id(id)) else {
            return Ok(None);
        };
        let file_type = reader.schema().field(ff).data_type().clone();
        let alike = match field.data_type() {
            DataType::Binary | DataType::LargeBinary => matches!(file_type, DataType::Binary | DataType::LargeBinary),
            ours => same_fixed_layout(&file_type, ours),
        };
        if reader.num_rows() < self.physical_rows(fi)? || !alike {
            return Ok(None);
        }
        Ok(reader.direct_rows(ff)?.map(|rows| (reader, rows)))
    }

    /// Takes `requests` of the fields `projection` (plus `_rowid` / `_rowaddr` if asked) by
    /// decoding the sorted distinct rows of each fragment, then putting them in request order.
    fn take_decoded(&self, requests: &[(usize, u64)], projection: &[usize], opts: ScanOptions) -> Result<Vec<ArrayRef>> {
        // Sorted unique offsets per fragment.
        let mut per_frag: HashMap<usize, Vec<u64>> = HashMap::new();
        for &(fi, off) in requests {
            per_frag.entry(fi).or_default().push(off);
        }
        let mut groups: Vec<(usize, Vec<u64>)> = per_frag.into_iter().collect();
        groups.sort_unstable_by_key(|(fi, _)| *fi);
        for (_, offs) in &mut groups {
            offs.sort_unstable();
            offs.dedup();
        }
        let read_opts = ScanOptions { include_deleted: true, ..opts };
        let job = |(fi, offs): &(usize, Vec<u64>)| self.read_fragment(*fi, projection, Rows::Offsets(offs), read_opts);
        let (items, parallel) = (groups.iter().collect(), groups.len() > 1);
        let batches: Vec<RecordBatch> = self.map_files(items, parallel, job).into_iter().collect::<Result<_>>()?;
        let schema = self.output_schema(projection, opts);
        if batches.is_empty() {
            return Ok(schema.fields().iter().map(|f| new_empty_array(f.data_type())).collect());
        }
        // (batch, row in batch) of each request: one copy into place (no concatenation first).
        let index: Vec<(usize, usize)> = requests
            .iter()
            .map(|(fi, off)| {
                let g = groups.binary_search_by_key(fi, |(f, _)| *f).expect("grouped");
                (g, groups[g].1.binary_search(off).expect("requested"))
            })
            .collect();
        if batches.len() == 1 && index.iter().enumerate().all(|(k, &(_, r))| k == r) && index.len() == batches[0].num_rows() {
            return Ok(batches[0].columns().to_vec()); // already in order
        }
        (0..schema.fields().len())
            .map(|c| {
                let columns: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
                arrow_select::interleave::interleave(&columns, &index).map_err(Error::from)
            })
            .collect()
    }
}

/// A column gathered by copying bytes (see [`TableSnapshot::direct_column`]).
pub(super) struct DirectColumn {
    /// Indices of the fragments involved, sorted.
    fragments: Vec<usize>,
    /// The reader and layout of each of them (all fixed-width of one width, or all variable).
    plans: Vec<Arc<(Arc<FileReader>, DirectRows)>>,
}

impl DirectColumn {
    /// The values of `requests`, in order, as an array of `data_type`. Call
    /// [`DirectColumn::prefetch`] first (as early as possible).
    pub(super) fn gather(&self, requests: &[(usize, u64)], data_type: &DataType) -> Result<ArrayRef> {
        let Some(first) = self.plans.first() else {
            return Ok(new_empty_array(data_type));
        };
        let mut out = Gathered::new(&first.1, requests.len());
        if first.1.width.is_some() {
            let files: Vec<(&FileReader, &DirectRows)> = self.plans.iter().map(|p| (p.0.as_ref(), &p.1)).collect();
            let by_file = requests
                .iter()
                .map(|&(fi, r)| {
                    let i = self.fragments.binary_search(&fi);
                    i.map(|i| (i, r)).map_err(|_| Error::Internal(format!("fragment {fi} was not planned")))
                })
                .collect::<Result<Vec<_>>>()?;
            if FileReader::gather_fixed_across(&files, &by_file, &mut out)? {
                return out.into_array(data_type);
            }
        }
        self.for_each_run(requests, |reader, layout, offsets| reader.gather_rows(layout, offsets, &mut out))?;
        out.into_array(data_type)
    }

    /// Hands each (variable-width) value of `requests` to `f`, in order (see
    /// [`FileReader::visit_values`]).
    fn visit(&self, requests: &[(usize, u64)], mut f: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        self.prefetch(requests);
        self.for_each_run(requests, |reader, layout, offsets| reader.visit_values(layout, offsets, &mut f))
    }

    /// Starts the reads of every value of `requests` that is not in memory, all at once, one
    /// call per file (see [`FileReader::prefetch_rows`]): the runs that follow are mostly a
    /// row long when the rows come in random order.
    pub(super) fn prefetch(&self, requests: &[(usize, u64)]) {
        let mut per_file: Vec<Vec<u64>> = vec![Vec::new(); self.plans.len()];
        for &(fi, offset) in requests {
            if let Ok(i) = self.fragments.binary_search(&fi) {
                per_file[i].push(offset);
            }
        }
        for (plan, rows) in self.plans.iter().zip(&per_file) {
            if !rows.is_empty() {
                plan.0.prefetch_rows(&plan.1, rows);
            }
        }
    }

    /// Calls `f(reader, layout, offsets)` for each run of consecutive requests of one fragment,
    /// in order. (One thread: the copies are memory-bound, and waking the pool cost more than
    /// it saved.)
    fn for_each_run(
        &self,
        requests: &[(usize, u64)],
        mut f: impl FnMut(&FileReader, &DirectRows, &[u64]) -> Result<()>,
    ) -> Result<()> {
        let offsets: Vec<u64> = requests.iter().map(|r| r.1).collect();
        let mut k = 0;
        while k < requests.len() {
            let fi = requests[k].0;
            let mut e = k + 1;
            while e < requests.len() && requests[e].0 == fi {
                e += 1;
            }
            let plan =
                self.fragments.binary_search(&fi).map_err(|_| Error::Internal(format!("fragment {fi} was not planned")))?;
            let (reader, rows) = self.plans[plan].as_ref();
            f(reader, rows, &offsets[k..e])?;
            k = e;
        }
        Ok(())
    }
}

/// The distinct fragments of `requests`, sorted.
fn fragments_of(requests: &[(usize, u64)]) -> Vec<usize> {
    let mut fragments: Vec<usize> = requests.iter().map(|r| r.0).collect();
    fragments.sort_unstable();
    fragments.dedup();
    fragments
}

/// Whether two fixed-width types lay their values out alike (they may differ in the names
/// and nullability of fixed-size list items).
fn same_fixed_layout(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::FixedSizeList(x, m), DataType::FixedSizeList(y, n)) => {
            m == n && same_fixed_layout(x.data_type(), y.data_type())
        }
        _ => a == b,
    }
}

/// Gives `array` the exact type of `field` when the two differ only in names or
/// nullability of nested children (e.g. a fixed-size list's item field).
fn conform(array: ArrayRef, field: &Field) -> Result<ArrayRef> {
    if array.data_type() == field.data_type() {
        return Ok(array);
    }
    let data = array.to_data().into_builder().data_type(field.data_type().clone()).build().map_err(|e| {
        Error::SchemaMismatch(format!(
            "column {:?}: data of type {} cannot be read as {}: {e}",
            field.name(),
            array.data_type(),
            field.data_type()
        ))
    })?;
    Ok(arrow_array::make_array(data))
}
