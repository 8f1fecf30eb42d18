//! Dataset-level bindings: the dataset directory (`Store`), ranged reads of one object
//! (`RangeReader`), version listing and manifest paths, and schema conversions between Arrow
//! and Lance fields.
//!
//! Each call is one coarse request with the GIL released: Python decides, these functions
//! encode bytes and move data. Messages cross as JSON strings (see `table::json`); Arrow
//! data through the PyCapsule interface.

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::errors::{run, to_pyerr, IntoPyResult};
use super::ffi::ArrowBatches;
use super::file::import_schema;
use crate::error::{Error, Result};
use crate::file::LanceSchema;
use crate::format::filepb;
use crate::io::{StorageOptions, Store};
use crate::table::json::{from_json, to_json};
use crate::table::{naming, ManifestNaming};

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
    fn put(&self, py: Python<'_>, rel: &str, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let data = super::errors::bytes_arg(data)?;
        run(py, || self.inner.put(rel, data))
    }

    /// Creates an object unless it exists; returns whether this call created it.
    fn put_if_not_exists(&self, py: Python<'_>, rel: &str, data: &Bound<'_, PyAny>) -> PyResult<bool> {
        let data = super::errors::bytes_arg(data)?;
        run(py, || self.inner.put_if_not_exists(rel, data))
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

/// Copies the object at `source` to `target` (either may be a local path or an object-store
/// URI), 8 MiB at a time: memory stays bounded whatever the size. Returns the bytes copied.
/// On object storage nothing is visible at `target` until the copy is complete (a local target
/// is written in place).
#[pyfunction]
#[pyo3(signature = (source, target, source_options=None, target_options=None))]
pub fn copy_object(
    py: Python<'_>,
    source: String,
    target: String,
    source_options: Option<StorageOptions>,
    target_options: Option<StorageOptions>,
) -> PyResult<u64> {
    const CHUNK: u64 = 8 << 20;
    run(py, || {
        let reader = crate::io::open_reader_with(&source, &source_options.unwrap_or_default())?;
        let size = reader.size()?;
        let mut writer = crate::io::open_writer_with(&target, &target_options.unwrap_or_default())?;
        let mut at = 0;
        while at < size {
            crate::interrupt::check()?;
            let end = (at + CHUNK).min(size);
            writer.write_all(reader.read_range(at..end)?.as_slice())?;
            at = end;
        }
        writer.finish()
    })
}

/// `([(version, manifest path)], naming)` of every committed version, by listing `_versions/`.
#[pyfunction]
pub fn list_versions(py: Python<'_>, store: &PyStore) -> PyResult<(Vec<(u64, String)>, Option<&'static str>)> {
    let (versions, naming) = run(py, || naming::list_versions(&store.inner))?;
    Ok((versions, naming.map(|n| n.as_str())))
}

/// `(latest version, naming)` (`(0, None)` without versions), by one listing of `_versions/`
/// that keeps only the largest version.
#[pyfunction]
pub fn latest_version(py: Python<'_>, store: &PyStore) -> PyResult<(u64, Option<&'static str>)> {
    let latest = run(py, || naming::latest_version(&store.inner))?;
    Ok(latest.map_or((0, None), |(v, _, naming)| (v, Some(naming.as_str()))))
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

#[derive(serde::Serialize, serde::Deserialize)]
struct SchemaJson {
    fields: Vec<filepb::Field>,
    metadata: std::collections::BTreeMap<String, Bytes>,
}

/// Converts an Arrow schema to Lance fields (ids from `first_id`, pre-order) as JSON
/// `{"fields": [...], "metadata": {...}}`.
#[pyfunction]
pub fn schema_to_lance(schema: &Bound<'_, PyAny>, first_id: i32) -> PyResult<String> {
    let schema = import_schema(schema)?;
    let lance = LanceSchema::from_arrow_with_first_id(&schema, first_id).py()?;
    to_json(&SchemaJson { fields: lance.to_pb_fields().py()?, metadata: lance.pb_metadata() }).py()
}

pub(super) fn lance_schema_from_json(fields_json: &str, metadata_json: &str) -> Result<LanceSchema> {
    let fields: Vec<filepb::Field> = from_json(fields_json, "fields")?;
    let metadata: std::collections::BTreeMap<String, Bytes> = from_json(metadata_json, "schema metadata")?;
    LanceSchema::from_pb(&fields, &metadata)
}

/// JSON text as the JSONB bytes a `lance.json` column stores for it (pylance's parser).
#[pyfunction]
pub fn jsonb_encode(py: Python<'_>, text: &str) -> PyResult<Py<pyo3::types::PyBytes>> {
    let bytes = crate::jsonb::encode(text).py()?;
    Ok(pyo3::types::PyBytes::new(py, &bytes).unbind())
}

/// JSONB bytes as the JSON text reads return for them.
#[pyfunction]
pub fn jsonb_to_text(bytes: &[u8]) -> String {
    crate::jsonb::to_text(bytes)
}

/// `batch` (a record batch or table, Arrow C stream) with its stored JSON columns
/// (`lance.json` JSONB, at any depth) as JSON text, as scans return them.
#[pyfunction]
pub fn json_columns_as_text(py: Python<'_>, batch: &Bound<'_, PyAny>) -> PyResult<ArrowBatches> {
    let (schema, batches) = super::ffi::import_batches(batch)?;
    let fields: Vec<arrow_schema::Field> = schema.fields().iter().map(|f| crate::jsonb::arrow::text_field(f)).collect();
    let out_schema = std::sync::Arc::new(arrow_schema::Schema::new_with_metadata(fields, schema.metadata().clone()));
    let out = run(py, || {
        batches
            .iter()
            .map(|b| {
                let columns = b
                    .columns()
                    .iter()
                    .zip(out_schema.fields())
                    .map(|(c, f)| crate::jsonb::arrow::to_text_array(c, f))
                    .collect::<crate::error::Result<Vec<_>>>()?;
                Ok(arrow_array::RecordBatch::try_new(out_schema.clone(), columns)?)
            })
            .collect::<crate::error::Result<Vec<_>>>()
    })?;
    Ok(ArrowBatches::new(out_schema, out))
}

/// JSON filter function `name` (`json_extract`, `json_get_int`, ...) over `values` (JSON
/// text or JSONB) with its constant arguments; one column named `name`.
#[pyfunction]
pub fn json_function(py: Python<'_>, name: &str, values: &Bound<'_, PyAny>, args: Vec<String>) -> PyResult<ArrowBatches> {
    let values = super::ffi::import_array(values)?;
    let result = run(py, || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::jsonb::path::evaluate(name, values.as_ref(), &args)
    })?;
    let schema =
        std::sync::Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(name, result.data_type().clone(), true)]));
    let batch = arrow_array::RecordBatch::try_new(schema.clone(), vec![result]).map_err(|e| to_pyerr(e.into()))?;
    Ok(ArrowBatches::new(schema, vec![batch]))
}

/// The Arrow type (`"bool"`, `"int64"`, `"double"`, `"string"`) of a JSON-path index over
/// `path` of `values` (JSON text or JSONB): that of the first non-null value at the path;
/// `None` when all are null (see `jsonb::index::first_type`).
#[pyfunction]
pub fn json_index_type(py: Python<'_>, values: &Bound<'_, PyAny>, path: &str) -> PyResult<Option<&'static str>> {
    let values = super::ffi::import_array(values)?;
    let found = run(py, || crate::jsonb::index::first_type(values.as_ref(), path))?;
    Ok(found.map(|t| json_index_type_name(&t)))
}

fn json_index_type_name(t: &arrow_schema::DataType) -> &'static str {
    match t {
        arrow_schema::DataType::Boolean => "bool",
        arrow_schema::DataType::Int64 => "int64",
        arrow_schema::DataType::Float64 => "double",
        _ => "string",
    }
}

/// The values a JSON-path index over `path` holds for `values` (JSON text or JSONB), as
/// `target` (`"bool"`, `"int64"`, `"double"` or `"string"`); one column named `values`.
#[pyfunction]
pub fn json_index_values(py: Python<'_>, values: &Bound<'_, PyAny>, path: &str, target: &str) -> PyResult<ArrowBatches> {
    use arrow_schema::DataType;
    let values = super::ffi::import_array(values)?;
    let target = match target {
        "bool" => DataType::Boolean,
        "int64" => DataType::Int64,
        "double" => DataType::Float64,
        "string" => DataType::Utf8,
        other => return Err(to_pyerr(Error::invalid_input(format!("JSON index target type {other:?}")))),
    };
    let result = run(py, || crate::jsonb::index::index_values(values.as_ref(), path, &target))?;
    let schema = std::sync::Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new("values", target, true)]));
    let batch = arrow_array::RecordBatch::try_new(schema.clone(), vec![result]).map_err(|e| to_pyerr(e.into()))?;
    Ok(ArrowBatches::new(schema, vec![batch]))
}

/// The Arrow schema of Lance fields (JSON) and schema metadata (JSON).
#[pyfunction]
pub fn lance_to_schema(fields_json: &str, metadata_json: &str) -> PyResult<ArrowBatches> {
    let schema = lance_schema_from_json(fields_json, metadata_json).py()?;
    Ok(ArrowBatches::new(schema.to_user_arrow(), vec![]))
}
