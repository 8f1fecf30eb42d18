//! Bindings of the table format (`lancepy.dataset`, `lancepy.commit`, `lancepy.fragment`
//! use them). Each call is one coarse request with the GIL released: Python decides, these
//! functions encode bytes and move data.
//!
//! Messages cross as JSON strings (see `table::json`); Arrow data through the PyCapsule
//! interface.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{RecordBatch, UInt32Array};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::errors::{run, to_pyerr, IntoPyResult};
use super::ffi::{import_batches, ArrowBatches, BatchStream};
use super::file::{extract_indices, import_schema};
use crate::error::{Error, Result};
use crate::file::{FileVersion, LanceSchema};
use crate::format::{filepb, tablepb};
use crate::io::{StorageOptions, Store};
use crate::table::json::{from_json, to_json};
use crate::table::scan::ScanOptions;
use crate::table::stream::ScanStream;
use crate::table::write::FragmentWriteOptions;
use crate::table::{deletion, manifest, naming, rowids, write, ManifestNaming, TableSnapshot};

/// A dataset directory: whole-object reads, atomic puts, listings, deletes.
#[pyclass(name = "Store", module = "lancepy._lancepy", frozen)]
pub struct PyStore {
    pub(crate) inner: Store,
}

#[pymethods]
impl PyStore {
    #[new]
    #[pyo3(signature = (uri, storage_options=None))]
    fn new(py: Python<'_>, uri: String, storage_options: Option<StorageOptions>) -> PyResult<Self> {
        let options = storage_options.unwrap_or_default();
        Ok(Self { inner: run(py, || Store::open_with(&uri, &options))? })
    }

    /// The storage options the store was opened with.
    #[getter]
    fn storage_options(&self) -> StorageOptions {
        self.inner.options().clone()
    }

    /// The root URI.
    #[getter]
    fn uri(&self) -> String {
        self.inner.uri().to_string()
    }

    /// The URI of a path inside the dataset.
    fn child_uri(&self, rel: &str) -> String {
        self.inner.child_uri(rel)
    }

    /// Reads a whole object.
    fn read<'py>(&self, py: Python<'py>, rel: &str) -> PyResult<Bound<'py, PyBytes>> {
        let data = run(py, || self.inner.read(rel))?;
        Ok(PyBytes::new(py, &data))
    }

    /// Whether an object exists.
    fn exists(&self, py: Python<'_>, rel: &str) -> PyResult<bool> {
        run(py, || self.inner.exists(rel))
    }

    /// Whether the dataset directory exists at all.
    fn root_exists(&self, py: Python<'_>) -> PyResult<bool> {
        run(py, || self.inner.root_exists())
    }

    /// Writes (or atomically replaces) an object.
    fn put(&self, py: Python<'_>, rel: &str, data: Vec<u8>) -> PyResult<()> {
        run(py, || self.inner.put(rel, Bytes::from(data)))
    }

    /// Creates an object unless it exists; returns whether this call created it.
    fn put_if_not_exists(&self, py: Python<'_>, rel: &str, data: Vec<u8>) -> PyResult<bool> {
        run(py, || self.inner.put_if_not_exists(rel, Bytes::from(data)))
    }

    /// Deletes objects (missing ones are ignored).
    fn delete(&self, py: Python<'_>, rels: Vec<String>) -> PyResult<()> {
        run(py, || {
            for r in &rels {
                self.inner.delete(r)?;
                crate::table::file_cache::evict(&self.inner.child_uri(r));
            }
            Ok(())
        })
    }

    /// `(path, size, modified)` of every object under `prefix`, recursively.
    fn list(&self, py: Python<'_>, prefix: &str) -> PyResult<Vec<(String, u64, f64)>> {
        let items = run(py, || self.inner.list(prefix))?;
        Ok(items.into_iter().map(|o| (o.path, o.size, o.modified)).collect())
    }
}

/// Ranged reads of one object (a blob's bytes): each read fetches only the bytes asked for
/// (a `pread` for local files, a ranged GET on object storage).
#[pyclass(name = "RangeReader", module = "lancepy._lancepy", frozen)]
pub struct PyRangeReader {
    inner: crate::io::ReaderRef,
}

#[pymethods]
impl PyRangeReader {
    #[new]
    #[pyo3(signature = (uri, storage_options=None))]
    fn new(py: Python<'_>, uri: String, storage_options: Option<StorageOptions>) -> PyResult<Self> {
        let options = storage_options.unwrap_or_default();
        Ok(Self { inner: run(py, || crate::io::open_reader_with(&uri, &options))? })
    }

    /// Size of the object in bytes.
    fn size(&self, py: Python<'_>) -> PyResult<u64> {
        run(py, || self.inner.size())
    }

    /// `length` bytes at `position` (an error if the object is shorter).
    fn read_range<'py>(&self, py: Python<'py>, position: u64, length: usize) -> PyResult<Bound<'py, PyBytes>> {
        let reader = &self.inner;
        if reader.cheap_small_reads() {
            // A local file: one `pread` straight into the new bytes object (one copy).
            return PyBytes::new_with(py, length, |dst| reader.read_into(position, dst).map_err(to_pyerr));
        }
        // Object storage: the request runs without the GIL.
        let buf = run(py, || reader.read_range(position..position.saturating_add(length as u64)))?;
        Ok(PyBytes::new(py, buf.as_slice()))
    }
}

/// `([(version, manifest path)], naming)` of every committed version, by listing `_versions/`.
#[pyfunction]
pub fn list_versions(py: Python<'_>, store: &PyStore) -> PyResult<(Vec<(u64, String)>, Option<&'static str>)> {
    let (versions, naming) = run(py, || naming::list_versions(&store.inner))?;
    Ok((versions, naming.map(|n| n.as_str())))
}

/// The manifest path (relative to the root) of `version` under naming `"v1"` or `"v2"`.
#[pyfunction]
pub fn manifest_path(version: u64, naming: &str) -> PyResult<String> {
    let scheme = match naming {
        "v1" => ManifestNaming::V1,
        "v2" => ManifestNaming::V2,
        other => return Err(to_pyerr(Error::invalid_input(format!("manifest naming must be 'v1' or 'v2', got {other:?}")))),
    };
    Ok(scheme.manifest_path(version))
}

/// Decodes a manifest file: `(manifest JSON, index section bytes, inline transaction bytes)`.
#[pyfunction]
pub fn read_manifest<'py>(
    py: Python<'py>,
    data: Vec<u8>,
    path: &str,
) -> PyResult<(String, Option<Bound<'py, PyBytes>>, Option<Bound<'py, PyBytes>>)> {
    let (json, index, txn) = run(py, || -> Result<_> {
        let m = manifest::read_manifest(Bytes::from(data), path)?;
        Ok((to_json(&m.manifest)?, m.index_section, m.transaction))
    })?;
    Ok((json, index.map(|b| PyBytes::new(py, &b)), txn.map(|b| PyBytes::new(py, &b))))
}

/// Encodes a manifest file from its JSON, the raw transaction and the raw index section.
#[pyfunction]
#[pyo3(signature = (manifest_json, transaction=None, index_section=None))]
pub fn write_manifest<'py>(
    py: Python<'py>,
    manifest_json: &str,
    transaction: Option<Vec<u8>>,
    index_section: Option<Vec<u8>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let m: tablepb::Manifest = from_json(manifest_json, "manifest").py()?;
    let out = manifest::write_manifest(m, transaction.as_deref(), index_section.as_deref()).py()?;
    Ok(PyBytes::new(py, &out))
}

/// Decodes a `Transaction` message to JSON.
#[pyfunction]
pub fn decode_transaction(data: Vec<u8>, path: &str) -> PyResult<String> {
    to_json(&manifest::read_transaction(&data, path).py()?).py()
}

/// Encodes a `Transaction` message from JSON.
#[pyfunction]
pub fn encode_transaction<'py>(py: Python<'py>, json: &str) -> PyResult<Bound<'py, PyBytes>> {
    use prost::Message;
    let t: tablepb::Transaction = from_json(json, "transaction").py()?;
    Ok(PyBytes::new(py, &t.encode_to_vec()))
}

/// Distances from `query` to the rows of `spans` (first row, rows) of `vectors` (a flat
/// float32 Arrow array of rows of `dim` values): the partition scan of an IVF_FLAT search.
/// Returns a float32 Arrow array (one batch, column `distance`).
#[pyfunction]
pub fn span_distances(
    py: Python<'_>,
    vectors: &Bound<'_, PyAny>,
    dim: usize,
    spans: Vec<(usize, usize)>,
    query: Vec<f32>,
    metric: &str,
) -> PyResult<crate::python::ffi::ArrowBatches> {
    let metric = crate::table::knn::Metric::parse(metric).py()?;
    let values = typed_values::<arrow_array::types::Float32Type>(vectors, "vectors")?;
    let out = run(py, || crate::table::knn::span_distances(&values, dim, &spans, &query, metric))?;
    distance_batch(out)
}

/// Product-quantization distances for an IVF_PQ partition scan: `codes` (a uint8 Arrow
/// array, `m` sub-vectors × `rows`, sub-vector major), `tables` (a float32 Arrow array of
/// `m × 256` lookup tables), `table_of` (the table of each span). Returns a float32 Arrow
/// array (one batch, column `distance`).
#[pyfunction]
pub fn pq_span_distances(
    py: Python<'_>,
    codes: &Bound<'_, PyAny>,
    rows: usize,
    m: usize,
    spans: Vec<(usize, usize)>,
    tables: &Bound<'_, PyAny>,
    table_of: Vec<usize>,
) -> PyResult<crate::python::ffi::ArrowBatches> {
    let c = typed_values::<arrow_array::types::UInt8Type>(codes, "codes")?;
    let t = typed_values::<arrow_array::types::Float32Type>(tables, "tables")?;
    let out = run(py, || crate::table::knn::pq_span_distances(&c, rows, m, &spans, &t, &table_of))?;
    distance_batch(out)
}

/// IVF_PQ partition scan under L2 on residual codes: the lookup tables of the `centroids`
/// (a float32 Arrow array, one row of `query`'s width per span) built from `codebook` (float32,
/// `m × 256 × dim / m`), then the codes of each span scored with its centroid's table.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn pq_l2_span_distances(
    py: Python<'_>,
    codes: &Bound<'_, PyAny>,
    rows: usize,
    m: usize,
    spans: Vec<(usize, usize)>,
    query: Vec<f32>,
    centroids: &Bound<'_, PyAny>,
    codebook: &Bound<'_, PyAny>,
) -> PyResult<crate::python::ffi::ArrowBatches> {
    let c = typed_values::<arrow_array::types::UInt8Type>(codes, "codes")?;
    let ce = typed_values::<arrow_array::types::Float32Type>(centroids, "centroids")?;
    let cb = typed_values::<arrow_array::types::Float32Type>(codebook, "codebook")?;
    let table_of: Vec<usize> = (0..spans.len()).collect();
    let out = run(py, || {
        let tables = crate::table::knn::pq_l2_tables(&query, &ce, &cb, m)?;
        crate::table::knn::pq_span_distances(&c, rows, m, &spans, &tables, &table_of)
    })?;
    distance_batch(out)
}

/// Trains `k` IVF centroids by k-means on `data` (a float32 Arrow array of rows of `dim`;
/// cosine data must already be normalized). Returns `(centroids, loss, iterations)`, the
/// centroids as one batch with a float32 column `values` (`k × dim`).
#[pyfunction]
#[pyo3(signature = (data, dim, k, max_iters, metric, seed))]
pub fn kmeans_train(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dim: usize,
    k: usize,
    max_iters: usize,
    metric: &str,
    seed: u64,
) -> PyResult<(crate::python::ffi::ArrowBatches, f64, usize)> {
    let metric = crate::table::knn::Metric::parse(metric).py()?;
    let values = typed_values::<arrow_array::types::Float32Type>(data, "data")?;
    let km = run(py, || crate::table::ivf_train::train_kmeans(&values, dim, k, max_iters, metric, seed))?;
    Ok((values_batch(arrow_array::Float32Array::from(km.centroids))?, km.loss, km.iterations))
}

/// The nearest of `centroids` to each row of `data` (float32 Arrow arrays of rows of `dim`).
/// Returns one batch: `partition` (uint32) and `distance` (float32).
#[pyfunction]
pub fn ivf_assign(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dim: usize,
    centroids: &Bound<'_, PyAny>,
    metric: &str,
) -> PyResult<crate::python::ffi::ArrowBatches> {
    let metric = crate::table::knn::Metric::parse(metric).py()?;
    let values = typed_values::<arrow_array::types::Float32Type>(data, "data")?;
    let c = typed_values::<arrow_array::types::Float32Type>(centroids, "centroids")?;
    let (ids, dists) = run(py, || crate::table::ivf_train::assign(&values, dim, &c, metric))?;
    batch_of(vec![
        ("partition", std::sync::Arc::new(arrow_array::UInt32Array::from(ids))),
        ("distance", std::sync::Arc::new(arrow_array::Float32Array::from(dists))),
    ])
}

/// Trains a PQ codebook (`m` sub-vectors, 256 codewords each) on `data` (float32, rows of
/// `dim`). Returns one batch with a float32 column `values` (`m × 256 × dim / m`).
#[pyfunction]
pub fn pq_train(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dim: usize,
    m: usize,
    max_iters: usize,
    seed: u64,
) -> PyResult<crate::python::ffi::ArrowBatches> {
    let values = typed_values::<arrow_array::types::Float32Type>(data, "data")?;
    let cb = run(py, || crate::table::ivf_train::train_pq(&values, dim, m, max_iters, seed))?;
    values_batch(arrow_array::Float32Array::from(cb))
}

/// PQ codes (`rows × m` bytes, a uint8 column `values`) of the rows of `data`, or of their
/// residuals `data − centroids[partitions]` when `centroids` and `partitions` (uint32) are given.
#[pyfunction]
#[pyo3(signature = (data, dim, codebook, m, centroids=None, partitions=None))]
#[allow(clippy::too_many_arguments)]
pub fn pq_encode(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dim: usize,
    codebook: &Bound<'_, PyAny>,
    m: usize,
    centroids: Option<&Bound<'_, PyAny>>,
    partitions: Option<&Bound<'_, PyAny>>,
) -> PyResult<crate::python::ffi::ArrowBatches> {
    let values = typed_values::<arrow_array::types::Float32Type>(data, "data")?;
    let cb = typed_values::<arrow_array::types::Float32Type>(codebook, "codebook")?;
    let residual_of = match (centroids, partitions) {
        (Some(c), Some(p)) => Some((
            typed_values::<arrow_array::types::Float32Type>(c, "centroids")?,
            typed_values::<arrow_array::types::UInt32Type>(p, "partitions")?,
        )),
        (None, None) => None,
        _ => {
            return Err(crate::error::Error::InvalidInput("pq_encode: give both centroids and partitions, or neither".into()))
                .py()
        }
    };
    let codes = run(py, || match &residual_of {
        Some((c, p)) => {
            let r = crate::table::ivf_train::residuals(&values, dim, c, p)?;
            crate::table::ivf_train::pq_encode(&r, dim, &cb, m)
        }
        None => crate::table::ivf_train::pq_encode(&values, dim, &cb, m),
    })?;
    values_batch(arrow_array::UInt8Array::from(codes))
}

fn values_batch(array: impl arrow_array::Array + 'static) -> PyResult<crate::python::ffi::ArrowBatches> {
    batch_of(vec![("values", std::sync::Arc::new(array))])
}

/// One record batch of named columns, as Arrow batches for Python.
fn batch_of(columns: Vec<(&str, arrow_array::ArrayRef)>) -> PyResult<crate::python::ffi::ArrowBatches> {
    let batch =
        arrow_array::RecordBatch::try_from_iter(columns).map_err(|e| crate::error::Error::Internal(e.to_string())).py()?;
    Ok(crate::python::ffi::ArrowBatches::new(batch.schema(), vec![batch]))
}

/// The unenforced primary key of an Arrow schema (field metadata
/// `lance-schema:unenforced-primary-key[:position]`), in key order: `(name, top level)` per
/// key field. Invalid markings (a position that is not a positive integer, a nullable or
/// non-leaf key field) raise.
#[pyfunction]
pub fn primary_key(schema: &Bound<'_, PyAny>) -> PyResult<Vec<(String, bool)>> {
    let schema = import_schema(schema)?;
    let lance = LanceSchema::from_arrow(&schema).py()?;
    let top: std::collections::HashSet<i32> = lance.fields.iter().map(|f| f.id).collect();
    Ok(lance.primary_key().into_iter().map(|f| (f.name.clone(), top.contains(&f.id))).collect())
}

/// A roaring bitmap of `ids` in its portable serialization (an index's `fragment_bitmap`).
#[pyfunction]
pub fn fragment_bitmap<'py>(py: Python<'py>, ids: Vec<u32>) -> PyResult<Bound<'py, PyBytes>> {
    let bm: roaring::RoaringBitmap = ids.into_iter().collect();
    let mut out = Vec::with_capacity(bm.serialized_size());
    bm.serialize_into(&mut out).map_err(|e| crate::error::Error::Internal(format!("serializing a bitmap: {e}"))).py()?;
    Ok(PyBytes::new(py, &out))
}

/// The values of a primitive Arrow array of type `T` without nulls (imported zero-copy;
/// `what` names the argument in errors).
fn typed_values<T: arrow_array::ArrowPrimitiveType>(
    obj: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<arrow_buffer::ScalarBuffer<T::Native>> {
    use arrow_array::Array;
    let array = crate::python::ffi::import_array(obj)?;
    let Some(values) = array.as_any().downcast_ref::<arrow_array::PrimitiveArray<T>>() else {
        return Err(crate::error::Error::InvalidInput(format!(
            "{what}: expected {} values, got {}",
            T::DATA_TYPE,
            array.data_type()
        )))
        .py();
    };
    if values.null_count() > 0 {
        return Err(crate::error::Error::InvalidInput(format!("{what} must not contain nulls"))).py();
    }
    Ok(values.values().clone())
}

fn distance_batch(out: Vec<f32>) -> PyResult<crate::python::ffi::ArrowBatches> {
    batch_of(vec![("distance", std::sync::Arc::new(arrow_array::Float32Array::from(out)))])
}

/// Decodes a raw `IndexSection` to JSON (`{"indices": [IndexMetadata...]}`, the form
/// transactions carry index entries in).
#[pyfunction]
pub fn index_section_to_json(section: Vec<u8>) -> PyResult<String> {
    use prost::Message;
    let s = tablepb::IndexSection::decode(&section[..])
        .map_err(|e| crate::error::Error::corrupt(format!("index section: {e}")))
        .py()?;
    to_json(&s).py()
}

/// Encodes a raw `IndexSection` from its JSON form.
#[pyfunction]
pub fn index_section_from_json<'py>(py: Python<'py>, json: &str) -> PyResult<Bound<'py, PyBytes>> {
    use prost::Message;
    let s: tablepb::IndexSection = from_json(json, "index section").py()?;
    Ok(PyBytes::new(py, &s.encode_to_vec()))
}

/// Removes fragment ids from every index's fragment bitmap in a raw `IndexSection`.
#[pyfunction]
pub fn prune_index_section<'py>(py: Python<'py>, section: Vec<u8>, fragment_ids: Vec<u64>) -> PyResult<Bound<'py, PyBytes>> {
    let out = manifest::prune_index_section(&section, &fragment_ids).py()?;
    Ok(PyBytes::new(py, &out))
}

/// Keeps only indices whose fields are all in `field_ids`.
#[pyfunction]
pub fn filter_index_section<'py>(py: Python<'py>, section: Vec<u8>, field_ids: Vec<i32>) -> PyResult<Bound<'py, PyBytes>> {
    let out = manifest::filter_index_section(&section, |f| field_ids.contains(&f)).py()?;
    Ok(PyBytes::new(py, &out))
}

/// Points the indices of a raw `IndexSection` that have no base path at base `base_id`.
#[pyfunction]
pub fn rebase_index_section<'py>(py: Python<'py>, section: Vec<u8>, base_id: u32) -> PyResult<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(py, &manifest::rebase_index_section(&section, base_id).py()?))
}

/// `(name, field ids)` of each index in a raw `IndexSection`.
#[pyfunction]
pub fn describe_index_section(section: Vec<u8>) -> PyResult<Vec<(String, Vec<i32>)>> {
    manifest::describe_index_section(&section).py()
}

/// Each index of a raw `IndexSection` as a dict: `name`, `fields`, `uuid`,
/// `dataset_version`, `fragment_ids`, `details_type`, `index_version`, `base_id`.
#[pyfunction]
pub fn index_section_entries<'py>(py: Python<'py>, section: Vec<u8>) -> PyResult<Vec<Bound<'py, pyo3::types::PyDict>>> {
    use pyo3::types::PyDictMethods;
    manifest::index_entries(&section)
        .py()?
        .into_iter()
        .map(|e| {
            let d = pyo3::types::PyDict::new(py);
            d.set_item("name", e.name)?;
            d.set_item("fields", e.fields)?;
            d.set_item("uuid", e.uuid)?;
            d.set_item("dataset_version", e.dataset_version)?;
            d.set_item("fragment_ids", e.fragment_ids)?;
            d.set_item("details_type", e.details_type)?;
            d.set_item("index_version", e.index_version)?;
            d.set_item("base_id", e.base_id)?;
            Ok(d)
        })
        .collect()
}

#[derive(serde::Serialize, serde::Deserialize)]
struct SchemaJson {
    fields: Vec<filepb::Field>,
    metadata: HashMap<String, Bytes>,
}

/// Converts an Arrow schema to Lance fields (ids from `first_id`, pre-order) as JSON
/// `{"fields": [...], "metadata": {...}}`.
#[pyfunction]
pub fn schema_to_lance(schema: &Bound<'_, PyAny>, first_id: i32) -> PyResult<String> {
    let schema = import_schema(schema)?;
    let lance = LanceSchema::from_arrow_with_first_id(&schema, first_id).py()?;
    to_json(&SchemaJson { fields: lance.to_pb_fields().py()?, metadata: lance.pb_metadata() }).py()
}

fn lance_schema_from_json(fields_json: &str, metadata_json: &str) -> Result<LanceSchema> {
    let fields: Vec<filepb::Field> = from_json(fields_json, "fields")?;
    let metadata: HashMap<String, Bytes> = from_json(metadata_json, "schema metadata")?;
    LanceSchema::from_pb(&fields, &metadata)
}

/// The Arrow schema of Lance fields (JSON) and schema metadata (JSON).
#[pyfunction]
pub fn lance_to_schema(fields_json: &str, metadata_json: &str) -> PyResult<ArrowBatches> {
    let schema = lance_schema_from_json(fields_json, metadata_json).py()?;
    Ok(ArrowBatches::new(schema.to_arrow(), vec![]))
}

/// Imports Arrow data as a lazy stream of batches.
fn import_stream(data: &Bound<'_, PyAny>) -> PyResult<Box<dyn Iterator<Item = Result<RecordBatch>> + Send>> {
    if data.hasattr("__arrow_c_stream__")? {
        let capsule = data.call_method0("__arrow_c_stream__")?;
        let capsule = capsule.downcast::<pyo3::types::PyCapsule>()?;
        let name = capsule.name()?.map(|n| n.to_string_lossy().into_owned());
        if name.as_deref() != Some("arrow_array_stream") {
            return Err(to_pyerr(Error::invalid_input("expected an arrow_array_stream capsule")));
        }
        // SAFETY: a capsule named "arrow_array_stream" holds a valid FFI_ArrowArrayStream
        // (PyCapsule protocol); `from_raw` moves it out and leaves the original released,
        // so the capsule's destructor does not release it a second time.
        let reader = unsafe { RecordBatchStreamReader::from_raw(capsule.pointer() as *mut FFI_ArrowArrayStream) }
            .map_err(|e| to_pyerr(e.into()))?;
        return Ok(Box::new(reader.map(|r| r.map_err(Error::from))));
    }
    let (_, batches) = import_batches(data)?;
    Ok(Box::new(batches.into_iter().map(Ok)))
}

/// Writes Arrow data into new data files of a dataset; returns the fragments (JSON list,
/// ids unassigned). Files go to `{uri}/{data_dir}/` (`data_dir` empty: straight under `uri`,
/// as in a base path that is not a dataset root). On error every file written is deleted
/// again.
#[pyfunction]
#[pyo3(signature = (uri, data, fields_json, metadata_json, max_rows_per_file, version, max_bytes_per_file=u64::MAX, file_tag=None, storage_options=None, data_dir="data", external_blobs="refuse", max_page_bytes=None, blob_pack_file_max=None))]
#[allow(clippy::too_many_arguments)]
pub fn write_fragments(
    py: Python<'_>,
    uri: &str,
    data: &Bound<'_, PyAny>,
    fields_json: &str,
    metadata_json: &str,
    max_rows_per_file: u64,
    version: &str,
    max_bytes_per_file: u64,
    file_tag: Option<String>,
    storage_options: Option<StorageOptions>,
    data_dir: &str,
    external_blobs: &str,
    max_page_bytes: Option<u64>,
    blob_pack_file_max: Option<u64>,
) -> PyResult<String> {
    use crate::table::blob_write::ExternalBlobs;
    let external_blobs = match external_blobs {
        "refuse" => ExternalBlobs::Refuse,
        "reference" => ExternalBlobs::Reference,
        "ingest" => ExternalBlobs::Ingest,
        other => return Err(to_pyerr(Error::invalid_input(format!("unknown external blob handling {other:?}")))),
    };
    let schema = lance_schema_from_json(fields_json, metadata_json).py()?;
    let version: FileVersion = version.parse().py()?;
    let options = storage_options.unwrap_or_default();
    let store = run(py, || Store::open_with(uri, &options))?;
    let batches = import_stream(data)?;
    let max_page_bytes = max_page_bytes.unwrap_or(crate::file::writer::DEFAULT_MAX_PAGE_BYTES);
    if max_page_bytes == 0 {
        return Err(to_pyerr(Error::invalid_input("max_page_bytes must be positive")));
    }
    let blob_pack_file_max = blob_pack_file_max.unwrap_or(crate::table::blob_write::PACK_FILE_MAX);
    if blob_pack_file_max == 0 {
        return Err(to_pyerr(Error::invalid_input("blob_pack_file_size_threshold must be positive")));
    }
    let options = FragmentWriteOptions {
        max_rows_per_file,
        max_bytes_per_file,
        version,
        external_blobs,
        max_page_bytes,
        blob_pack_file_max,
    };
    run(py, move || {
        let mut created = Vec::new();
        // Files carry `file_tag` when one is given (a Spark job finds its files by it).
        let new_name = || match &file_tag {
            Some(tag) => naming::new_tagged_data_file_name(tag),
            None => Ok(naming::new_data_file_name()),
        };
        match write::write_fragments_named(&store, data_dir, &schema, batches, options, new_name, |f| created.push(f.to_string()))
        {
            Ok(frags) => to_json(&frags),
            Err(e) => {
                for f in &created {
                    let _ = store.delete(f);
                }
                Err(e)
            }
        }
    })
}

/// Expands a serialized row-id sequence of a fragment with `num_rows` rows (by default, as
/// many as the sequence holds: the caller then trusts the bytes with the memory they claim).
#[pyfunction]
#[pyo3(signature = (data, num_rows=None))]
pub fn decode_row_ids(data: Vec<u8>, num_rows: Option<u64>) -> PyResult<Vec<u64>> {
    let n = match num_rows {
        Some(n) => n,
        None => rowids::row_id_count(&data).py()?,
    };
    rowids::decode_row_ids(&data, n).py()
}

/// Serializes row ids as a row-id sequence.
#[pyfunction]
pub fn encode_row_ids<'py>(py: Python<'py>, ids: Vec<u64>) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &rowids::encode_row_ids(&ids))
}

/// One dataset version, ready to read: the data path.
#[pyclass(name = "TableSnapshot", module = "lancepy._lancepy", frozen)]
pub struct PySnapshot {
    inner: Arc<TableSnapshot>,
    store: Store,
}

fn scan_options(with_row_id: bool, with_row_address: bool, include_deleted: bool) -> ScanOptions {
    ScanOptions { with_row_id, with_row_address, include_deleted }
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
            Ok(Self { inner: Arc::new(TableSnapshot::new(store.clone(), &opened.file.manifest)?), store })
        })
    }

    /// The dataset's Arrow schema.
    fn schema(&self) -> ArrowBatches {
        ArrowBatches::new(self.inner.schema().to_arrow(), vec![])
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

    /// Reads a whole scan at once (fragments in parallel).
    #[pyo3(signature = (columns=None, fragment_ids=None, offset=0, limit=None, batch_rows=131072, with_row_id=false, with_row_address=false, include_deleted=false))]
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
    ) -> PyResult<ArrowBatches> {
        let opts = scan_options(with_row_id, with_row_address, include_deleted);
        let s = &self.inner;
        let projection = s.projection(columns.as_deref()).py()?;
        let frags = self.fragment_indices(fragment_ids).py()?;
        let batches = run(py, || {
            let tasks = s.plan_scan(frags.as_deref(), offset, limit, batch_rows, opts)?;
            s.run_tasks(tasks, &projection, opts)
        })?;
        Ok(ArrowBatches::new(s.output_schema(&projection, opts), batches))
    }

    /// A scan decoded on demand, a few tasks at a time, `read_ahead` tasks read ahead
    /// (default: one round on object storage, none locally).
    #[pyo3(signature = (columns=None, fragment_ids=None, offset=0, limit=None, batch_rows=8192, with_row_id=false, with_row_address=false, include_deleted=false, read_ahead=None))]
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
    ) -> PyResult<BatchStream> {
        let opts = scan_options(with_row_id, with_row_address, include_deleted);
        let s = self.inner.clone();
        let projection = s.projection(columns.as_deref()).py()?;
        let frags = self.fragment_indices(fragment_ids).py()?;
        let tasks = run(py, || s.plan_scan(frags.as_deref(), offset, limit, batch_rows, opts))?;
        let schema = s.output_schema(&projection, opts);
        let stream = ScanStream::new(s, tasks, projection, opts, read_ahead);
        Ok(BatchStream::new(schema, stream))
    }

    /// Rows at logical indices (scan order); output follows the input, repeats allowed.
    #[pyo3(signature = (indices, columns=None, with_row_id=false, with_row_address=false))]
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

    /// The values of binary column `column` at logical `indices` (or, with `addresses`, at
    /// row addresses, deleted rows skipped) as a list of `bytes`, each copied once straight out
    /// of the file; `None` when some fragment does not store the column row by row (then use
    /// `take`).
    #[pyo3(signature = (indices, column, addresses=false))]
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
    #[pyo3(signature = (addresses, columns=None, with_row_id=false, with_row_address=false))]
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

/// Registers the table bindings.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStore>()?;
    m.add_class::<PyRangeReader>()?;
    m.add_class::<PySnapshot>()?;
    m.add_function(wrap_pyfunction!(list_versions, m)?)?;
    m.add_function(wrap_pyfunction!(manifest_path, m)?)?;
    m.add_function(wrap_pyfunction!(read_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(write_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(decode_transaction, m)?)?;
    m.add_function(wrap_pyfunction!(encode_transaction, m)?)?;
    m.add_function(wrap_pyfunction!(prune_index_section, m)?)?;
    m.add_function(wrap_pyfunction!(filter_index_section, m)?)?;
    m.add_function(wrap_pyfunction!(describe_index_section, m)?)?;
    m.add_function(wrap_pyfunction!(index_section_entries, m)?)?;
    m.add_function(wrap_pyfunction!(index_section_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(span_distances, m)?)?;
    m.add_function(wrap_pyfunction!(pq_span_distances, m)?)?;
    m.add_function(wrap_pyfunction!(pq_l2_span_distances, m)?)?;
    m.add_function(wrap_pyfunction!(kmeans_train, m)?)?;
    m.add_function(wrap_pyfunction!(fragment_bitmap, m)?)?;
    m.add_function(wrap_pyfunction!(primary_key, m)?)?;
    m.add_function(wrap_pyfunction!(ivf_assign, m)?)?;
    m.add_function(wrap_pyfunction!(pq_train, m)?)?;
    m.add_function(wrap_pyfunction!(pq_encode, m)?)?;
    m.add_function(wrap_pyfunction!(index_section_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(rebase_index_section, m)?)?;
    m.add_function(wrap_pyfunction!(schema_to_lance, m)?)?;
    m.add_function(wrap_pyfunction!(lance_to_schema, m)?)?;
    m.add_function(wrap_pyfunction!(write_fragments, m)?)?;
    m.add_function(wrap_pyfunction!(decode_row_ids, m)?)?;
    m.add_function(wrap_pyfunction!(encode_row_ids, m)?)?;
    Ok(())
}
