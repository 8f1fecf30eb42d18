//! `TableSnapshot`: one dataset version, ready to read. Scans (whole or streamed), takes by
//! index or row address, blob values, exact k-nearest-neighbour search, and the deletions
//! that a delete commits.
//!
//! All of the class's Python methods sit in one `#[pymethods]` block here: PyO3 without its
//! `multiple-pymethods` feature keeps a class's methods together.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{RecordBatch, UInt32Array};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::errors::{run, to_pyerr, IntoPyResult};
use super::ffi::{ArrowBatches, BatchStream};
use super::file::extract_indices;
use super::outputs::{writable_array, Claim};
use crate::error::{Error, Result};
use crate::format::tablepb;
use crate::io::{StorageOptions, Store};
use crate::table::json::{from_json, to_json};
use crate::table::scan::ScanOptions;
use crate::table::stream::ScanStream;
use crate::table::{deletion, TableSnapshot};

/// One dataset version, ready to read: the data path.
#[pyclass(name = "TableSnapshot", module = "lancepy._lancepy", frozen)]
pub struct PySnapshot {
    inner: Arc<TableSnapshot>,
    store: Store,
}

fn scan_options(with_row_id: bool, with_row_address: bool, include_deleted: bool) -> ScanOptions {
    ScanOptions { with_row_id, with_row_address, include_deleted, ..Default::default() }
}

impl PySnapshot {
    fn fragment_indices(&self, ids: Option<Vec<u64>>) -> Result<Option<Vec<usize>>> {
        ids.map(|ids| ids.into_iter().map(|id| self.inner.fragment_index(id)).collect()).transpose()
    }
}

#[pymethods]
impl PySnapshot {
    #[new]
    #[pyo3(signature = (uri, manifest_json, storage_options=None, base_store_params=None))]
    fn new(
        py: Python<'_>,
        uri: String,
        manifest_json: String,
        storage_options: Option<StorageOptions>,
        base_store_params: Option<std::collections::BTreeMap<String, StorageOptions>>,
    ) -> PyResult<Self> {
        let options = storage_options.unwrap_or_default();
        run(py, move || -> Result<Self> {
            // Files under a base path are opened with that base's options (pylance's
            // `base_store_params`, keyed by base path URI) instead of the dataset's.
            let store = Store::open_with(&uri, &options)?.with_root_options(base_store_params.unwrap_or_default());
            let manifest: tablepb::Manifest = from_json(&manifest_json, "manifest")?;
            Ok(Self { inner: Arc::new(TableSnapshot::new(store.clone(), &manifest)?), store })
        })
    }

    /// The snapshot of a manifest opened natively (no JSON round trip).
    #[staticmethod]
    #[pyo3(signature = (uri, manifest, storage_options=None, base_store_params=None))]
    fn from_manifest(
        py: Python<'_>,
        uri: String,
        manifest: &super::manifest::PyManifest,
        storage_options: Option<StorageOptions>,
        base_store_params: Option<std::collections::BTreeMap<String, StorageOptions>>,
    ) -> PyResult<Self> {
        let options = storage_options.unwrap_or_default();
        let opened = manifest.inner.clone();
        run(py, move || -> Result<Self> {
            let store = Store::open_with(&uri, &options)?.with_root_options(base_store_params.unwrap_or_default());
            Ok(Self { inner: Arc::new(TableSnapshot::from_shared(store.clone(), opened.manifest.clone())?), store })
        })
    }

    /// The dataset's Arrow schema.
    fn schema(&self) -> ArrowBatches {
        ArrowBatches::new(self.inner.schema().to_user_arrow(), vec![])
    }

    /// Live rows of the whole version (or of the fragments given).
    #[pyo3(signature = (fragment_ids=None))]
    fn count_rows(&self, py: Python<'_>, fragment_ids: Option<Vec<u64>>) -> PyResult<u64> {
        run(py, || match self.fragment_indices(fragment_ids)? {
            None => self.inner.count_rows(),
            Some(idx) => idx.into_iter().map(|i| self.inner.live_rows(i)).sum(),
        })
    }

    /// `(fragment id, physical rows, live rows)` of each fragment.
    fn fragment_rows(&self, py: Python<'_>) -> PyResult<Vec<(u64, u64, u64)>> {
        run(py, || {
            (0..self.inner.num_fragments())
                .map(|i| Ok((self.inner.fragment_id(i), self.inner.physical_rows(i)?, self.inner.live_rows(i)?)))
                .collect::<Result<Vec<_>>>()
        })
    }

    /// Reads a whole scan at once (fragments in parallel). With `coalesce`, consecutive
    /// batches (of fragments smaller than `batch_rows`) come concatenated into batches of up
    /// to `batch_rows` rows.
    /// With `json_stored`, JSON columns come as stored (JSONB; see `ScanOptions::json_stored`).
    #[pyo3(signature = (columns=None, fragment_ids=None, *, offset=0, limit=None, batch_rows=131072, with_row_id=false, with_row_address=false, include_deleted=false, coalesce=false, json_stored=false))]
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        fragment_ids: Option<Vec<u64>>,
        offset: u64,
        limit: Option<u64>,
        batch_rows: u64,
        with_row_id: bool,
        with_row_address: bool,
        include_deleted: bool,
        coalesce: bool,
        json_stored: bool,
    ) -> PyResult<ArrowBatches> {
        let opts = ScanOptions { json_stored, ..scan_options(with_row_id, with_row_address, include_deleted) };
        let s = &self.inner;
        let projection = s.projection(columns.as_deref()).py()?;
        let frags = self.fragment_indices(fragment_ids).py()?;
        let batches = run(py, || {
            let tasks = s.plan_scan(frags.as_deref(), offset, limit, batch_rows, opts)?;
            let opts = s.admission_for(&tasks, opts);
            let batches = s.run_tasks(tasks, &projection, opts)?;
            if coalesce {
                crate::table::stream::coalesce_batches(batches, batch_rows.max(1))
            } else {
                Ok(batches)
            }
        })?;
        Ok(ArrowBatches::new(s.output_schema(&projection, opts), batches))
    }

    /// A scan decoded on demand, a few tasks at a time, `read_ahead` tasks read ahead
    /// (default: one round on object storage, none locally). With `coalesce`, consecutive
    /// batches (of fragments smaller than `batch_rows`) come concatenated into batches of up
    /// to `batch_rows` rows.
    /// With `json_stored`, JSON columns come as stored (JSONB; see `ScanOptions::json_stored`).
    #[pyo3(signature = (columns=None, fragment_ids=None, *, offset=0, limit=None, batch_rows=8192, with_row_id=false, with_row_address=false, include_deleted=false, read_ahead=None, coalesce=false, json_stored=false))]
    #[allow(clippy::too_many_arguments)]
    fn scan_stream(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        fragment_ids: Option<Vec<u64>>,
        offset: u64,
        limit: Option<u64>,
        batch_rows: u64,
        with_row_id: bool,
        with_row_address: bool,
        include_deleted: bool,
        read_ahead: Option<usize>,
        coalesce: bool,
        json_stored: bool,
    ) -> PyResult<BatchStream> {
        let opts = ScanOptions { json_stored, ..scan_options(with_row_id, with_row_address, include_deleted) };
        let s = self.inner.clone();
        let projection = s.projection(columns.as_deref()).py()?;
        let frags = self.fragment_indices(fragment_ids).py()?;
        let read_rows = s.read_unit_rows(&projection, batch_rows);
        // `read_ahead` counts batches of `batch_rows`; the stream reads tasks of `read_rows`.
        let read_ahead = read_ahead.map(|n| (n as u64).saturating_mul(batch_rows.max(1)).div_ceil(read_rows) as usize);
        let tasks = run(py, || s.plan_scan(frags.as_deref(), offset, limit, read_rows, opts))?;
        let schema = s.output_schema(&projection, opts);
        let stream = ScanStream::new(s, tasks, projection, opts, read_ahead)
            .with_round_rows(read_rows)
            .coalesce_into(batch_rows, coalesce)
            .cut_into(batch_rows);
        Ok(BatchStream::new(schema, stream))
    }

    /// Rows at logical indices (scan order); output follows the input, repeats allowed.
    #[pyo3(signature = (indices, columns=None, *, with_row_id=false, with_row_address=false))]
    fn take(
        &self,
        py: Python<'_>,
        indices: &Bound<'_, PyAny>,
        columns: Option<Vec<String>>,
        with_row_id: bool,
        with_row_address: bool,
    ) -> PyResult<ArrowBatches> {
        let idx = extract_indices(indices, || "the dataset has fewer rows".to_string())?;
        let opts = scan_options(with_row_id, with_row_address, false);
        let s = &self.inner;
        let projection = s.projection(columns.as_deref()).py()?;
        let batch = run(py, || s.take(&idx, &projection, opts))?;
        Ok(ArrowBatches::new(batch.schema(), vec![batch]))
    }

    /// Gathers the values of fixed-width column `column` at logical `indices` (or, with
    /// `addresses`, row addresses of live rows) straight into `out`, with the GIL released:
    /// `out` is a writable C-contiguous array (numpy's `__array_interface__`, e.g.
    /// `tensor.numpy()` of a pinned CPU tensor) of exactly rows × value bytes. Returns `False`,
    /// having written nothing, when some fragment does not store the column row by row in a
    /// mapped file (then use `take`).
    #[pyo3(signature = (indices, column, out, *, addresses=false))]
    fn take_into(
        &self,
        py: Python<'_>,
        indices: &Bound<'_, PyAny>,
        column: String,
        out: &Bound<'_, PyAny>,
        addresses: bool,
    ) -> PyResult<bool> {
        let s = &self.inner;
        let idx = extract_indices(indices, || "row indices are 64-bit".to_string())?;
        let fidx = s.projection(Some(std::slice::from_ref(&column))).py()?[0];
        let (ptr, len) = writable_array(out)?;
        let claim = Claim::new(&[(ptr, len)]).py()?;
        let done = run(py, || {
            let requests = if addresses { s.address_requests(&idx, false) } else { s.index_requests(&idx) }?;
            if requests.len() != idx.len() {
                return Err(Error::invalid_input("take_into: some row addresses are of deleted rows"));
            }
            // SAFETY: `writable_array` checked that `out` exports `len` writable, C-contiguous
            // bytes at `ptr`. `out` is borrowed for this whole call (its owner holds a
            // reference), so the memory stays allocated; a numpy array with references cannot
            // be resized. `claim` holds these bytes: no other native writer of lancepy's gets
            // them until this returns. (Python code writing the same array from another thread
            // meanwhile would race, as with numpy's own operations that release the GIL.)
            let dest = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) };
            s.take_fixed_into(&requests, fidx, dest)
        });
        drop(claim);
        done
    }

    /// A [`TakePipeline`](super::pipeline::TakePipeline) reading fixed-width `columns` of this
    /// version on `threads` native threads.
    #[pyo3(signature = (columns, threads))]
    fn take_pipeline(&self, columns: Vec<String>, threads: usize) -> PyResult<super::pipeline::TakePipeline> {
        if threads == 0 || threads > 256 {
            return Err(to_pyerr(Error::invalid_input(format!("threads must be 1 to 256, got {threads}"))));
        }
        super::pipeline::TakePipeline::start(self.inner.clone(), columns, threads).py()
    }

    /// A [`TakeRing`](super::ring::TakeRing) reading fixed-width `columns` of this version at
    /// `indices` (logical row indices, or row addresses with `addresses`), in batches of
    /// `batch_size`, on `threads` native threads, into `slots` (per slot, one writable
    /// C-contiguous array per column of `batch_size` rows).
    #[pyo3(signature = (columns, slots, indices, batch_size, threads, *, addresses=false))]
    fn take_ring(
        &self,
        columns: Vec<String>,
        slots: Vec<Vec<Bound<'_, PyAny>>>,
        indices: &Bound<'_, PyAny>,
        batch_size: usize,
        threads: usize,
        addresses: bool,
    ) -> PyResult<super::ring::TakeRing> {
        let indices = super::file::extract_indices(indices, || "row indices are 64-bit".to_string())?;
        super::ring::TakeRing::start(self.inner.clone(), columns, slots, indices, batch_size, threads, addresses)
    }

    /// The values of binary column `column` at logical `indices` (or, with `addresses`, at
    /// row addresses, deleted rows skipped) as a list of `bytes`, each copied once straight out
    /// of the file; `None` when some fragment does not store the column row by row (then use
    /// `take`).
    #[pyo3(signature = (indices, column, *, addresses=false))]
    fn take_bytes(
        &self,
        py: Python<'_>,
        indices: &Bound<'_, PyAny>,
        column: String,
        addresses: bool,
    ) -> PyResult<Option<Vec<Py<PyBytes>>>> {
        let s = &self.inner;
        let idx = extract_indices(indices, || "row indices are 64-bit".to_string())?;
        let fidx = s.projection(Some(std::slice::from_ref(&column))).py()?[0];
        let requests = if addresses { s.address_requests(&idx, false) } else { s.index_requests(&idx) }.py()?;
        // The GIL is held: each value becomes a Python object as it is visited.
        let mut out = Vec::with_capacity(requests.len());
        let direct = s
            .visit_binary(&requests, fidx, |bytes| {
                out.push(PyBytes::new(py, bytes).unbind());
                Ok(())
            })
            .py()?;
        Ok(direct.then_some(out))
    }

    /// Exact k-nearest-neighbour search over a vector column: `(row addresses, distances)`,
    /// nearest first. `allowed` (row addresses, any order) restricts the candidates.
    #[pyo3(signature = (column, query, k, metric="l2", fragment_ids=None, allowed=None, distance_range=(None, None)))]
    #[allow(clippy::too_many_arguments)]
    fn knn(
        &self,
        py: Python<'_>,
        column: String,
        query: Vec<f32>,
        k: usize,
        metric: &str,
        fragment_ids: Option<Vec<u64>>,
        allowed: Option<&Bound<'_, PyAny>>,
        distance_range: (Option<f32>, Option<f32>),
    ) -> PyResult<(Vec<u64>, Vec<f32>)> {
        let range = crate::table::knn::DistanceRange { lower: distance_range.0, upper: distance_range.1 };
        let metric = crate::table::knn::Metric::parse(metric).py()?;
        let mut allowed = match allowed {
            Some(a) => Some(extract_indices(a, || "row addresses are 64-bit".to_string())?),
            None => None,
        };
        let s = &self.inner;
        let frags = self.fragment_indices(fragment_ids).py()?;
        let found = run(py, || {
            let allowed = match allowed.as_mut() {
                Some(a) => {
                    a.sort_unstable();
                    Some(crate::table::knn::Allowed::new(a)?)
                }
                None => None,
            };
            s.knn(&column, &query, k, metric, frags.as_deref(), allowed, range)
        })?;
        Ok(found.iter().map(|n| (n.address, n.distance)).unzip())
    }

    /// The values of blob column `column` described by `descriptions` (an Arrow array of
    /// what a read returned for it) at row `addresses`, as a one-column batch of large binary.
    fn blob_values(
        &self,
        py: Python<'_>,
        column: String,
        addresses: &Bound<'_, PyAny>,
        descriptions: &Bound<'_, PyAny>,
    ) -> PyResult<ArrowBatches> {
        let addr = extract_indices(addresses, || "row addresses are 64-bit".to_string())?;
        let desc = crate::python::ffi::import_array(descriptions)?;
        let s = &self.inner;
        let values = run(py, || s.blob_values(&column, &addr, desc.as_ref()))?;
        let schema =
            Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(&column, values.data_type().clone(), true)]));
        let batch = RecordBatch::try_new(schema.clone(), vec![values]).map_err(|e| to_pyerr(e.into()))?;
        Ok(ArrowBatches::new(schema, vec![batch]))
    }

    /// Rows at row addresses; deleted rows are skipped.
    #[pyo3(signature = (addresses, columns=None, *, with_row_id=false, with_row_address=false))]
    fn take_addresses(
        &self,
        py: Python<'_>,
        addresses: &Bound<'_, PyAny>,
        columns: Option<Vec<String>>,
        with_row_id: bool,
        with_row_address: bool,
    ) -> PyResult<ArrowBatches> {
        let addr = extract_indices(addresses, || "row addresses are 64-bit".to_string())?;
        let opts = scan_options(with_row_id, with_row_address, false);
        let s = &self.inner;
        let projection = s.projection(columns.as_deref()).py()?;
        let batch = run(py, || s.take_addresses(&addr, &projection, opts))?;
        Ok(ArrowBatches::new(batch.schema(), vec![batch]))
    }

    /// The deleted row offsets of a fragment (a one-column batch `row_offset: uint32`).
    fn deleted_rows(&self, py: Python<'_>, fragment_id: u64) -> PyResult<ArrowBatches> {
        let s = &self.inner;
        let values = run(py, || -> Result<UInt32Array> {
            let i = s.fragment_index(fragment_id)?;
            Ok(match s.deletions(i)? {
                Some(dv) => UInt32Array::from_iter_values(dv.iter()),
                None => UInt32Array::from(Vec::<u32>::new()),
            })
        })?;
        let schema = Arc::new(Schema::new(vec![Field::new("row_offset", DataType::UInt32, false)]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(values)]).map_err(|e: ArrowError| to_pyerr(e.into()))?;
        Ok(ArrowBatches::new(schema, vec![batch]))
    }

    /// Marks rows deleted: `addresses` (row addresses) are added to their fragments'
    /// deletion vectors and new deletion files are written (format chosen like pylance).
    /// Returns `(fragment id, updated fragment JSON or None if every row is now deleted)`
    /// for each fragment that changed.
    fn delete_rows(
        &self,
        py: Python<'_>,
        addresses: &Bound<'_, PyAny>,
        read_version: u64,
    ) -> PyResult<Vec<(u64, Option<String>)>> {
        let addr = extract_indices(addresses, || "row addresses are 64-bit".to_string())?;
        let s = &self.inner;
        let store = &self.store;
        run(py, || -> Result<Vec<(u64, Option<String>)>> {
            let mut per_frag: HashMap<u64, Vec<u32>> = HashMap::new();
            for a in addr {
                per_frag.entry(a >> 32).or_default().push((a & 0xFFFF_FFFF) as u32);
            }
            let mut ids: Vec<u64> = per_frag.keys().copied().collect();
            ids.sort_unstable();
            let work: Vec<(u64, Vec<u32>)> = ids
                .into_iter()
                .map(|id| {
                    let v = per_frag.remove(&id).unwrap_or_default();
                    (id, v)
                })
                .collect();
            let results = crate::parallel::map(work, true, |(id, offsets)| -> Result<Option<(u64, Option<String>)>> {
                let i = s.fragment_index(id)?;
                let phys = s.physical_rows(i)?;
                let old = s.deletions(i)?;
                let mut dv = old.as_deref().cloned().unwrap_or_default();
                for o in offsets {
                    if o as u64 >= phys {
                        return Err(Error::IndexOutOfRange(format!("fragment {id} has no row {o}")));
                    }
                    dv.insert(o);
                }
                if old.as_ref().is_some_and(|o| o.len() == dv.len()) {
                    return Ok(None); // nothing new
                }
                if dv.len() >= phys {
                    return Ok(Some((id, None)));
                }
                let mut frag = s.fragment_meta(i).clone();
                let was_bitmap = frag
                    .deletion_file
                    .as_ref()
                    .is_some_and(|d| d.file_type == tablepb::deletion_file::DeletionFileType::Bitmap as i32);
                frag.deletion_file = Some(deletion::write(store, id, read_version, &dv, was_bitmap)?);
                frag.physical_rows = phys;
                Ok(Some((id, Some(to_json(&frag)?))))
            });
            Ok(results.into_iter().collect::<Result<Vec<_>>>()?.into_iter().flatten().collect())
        })
    }
}
