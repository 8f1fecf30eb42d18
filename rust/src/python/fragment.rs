//! Fragment bindings: writing Arrow data into new data files (the fragments of a later
//! commit), and row-id sequences.

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::RecordBatch;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::dataset::lance_schema_from_json;
use super::errors::{run, to_pyerr, IntoPyResult};
use super::ffi::import_batches;
use crate::error::{Error, Result};
use crate::file::FileVersion;
use crate::io::{StorageOptions, Store};
use crate::table::json::to_json;
use crate::table::write::FragmentWriteOptions;
use crate::table::{naming, rowids, write};

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
#[pyo3(signature = (uri, data, fields_json, metadata_json, max_rows_per_file, version, max_bytes_per_file=u64::MAX, file_tag=None, storage_options=None, data_dir="data", external_blobs="refuse", max_page_bytes=None, blob_pack_file_max=None, max_rows_per_group=None))]
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
    max_rows_per_group: Option<usize>,
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
        max_rows_per_group: max_rows_per_group.unwrap_or(crate::file::legacy::DEFAULT_ROWS_PER_BATCH),
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

/// The versions of a fragment's `num_rows` rows in a serialized row version sequence
/// (created-at or last-updated-at), as little-endian `u64`s (for numpy).
#[pyfunction]
pub fn decode_row_versions<'py>(py: Python<'py>, data: &[u8], num_rows: u64) -> PyResult<Bound<'py, PyBytes>> {
    let versions = rowids::decode_row_versions(data, num_rows).py()?;
    Ok(PyBytes::new(py, &versions.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()))
}

/// Serializes one version per row (little-endian `u64`s) as a row version sequence.
#[pyfunction]
pub fn encode_row_versions<'py>(py: Python<'py>, versions: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    if versions.len() % 8 != 0 {
        return Err(to_pyerr(Error::invalid_input("row versions must be little-endian u64 values")));
    }
    let v: Vec<u64> = versions.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
    Ok(PyBytes::new(py, &rowids::encode_row_versions(&v)))
}

/// As [`decode_row_ids`], the ids as little-endian `u64`s (for numpy: no Python int per id).
#[pyfunction]
#[pyo3(signature = (data, num_rows=None))]
pub fn decode_row_ids_le<'py>(py: Python<'py>, data: &[u8], num_rows: Option<u64>) -> PyResult<Bound<'py, PyBytes>> {
    let n = match num_rows {
        Some(n) => n,
        None => rowids::row_id_count(data).py()?,
    };
    let ids = rowids::decode_row_ids(data, n).py()?;
    Ok(PyBytes::new(py, &ids.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()))
}

/// Serializes row ids as a row-id sequence.
#[pyfunction]
pub fn encode_row_ids<'py>(py: Python<'py>, ids: Vec<u64>) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &rowids::encode_row_ids(&ids))
}
