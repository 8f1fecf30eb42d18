//! Bindings of the file reader and writer (`lancepy.file` wraps them).

use std::sync::{Arc, Mutex};

use arrow_array::ffi::FFI_ArrowSchema;
use arrow_schema::Schema;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::errors::{catch, run, to_pyerr, IntoPyResult};
use super::ffi::{import_batches, ArrowBatches, BatchStream};
use crate::error::Error;
use crate::file::{FileReader, FileVersion, FileWriter, WriterOptions};
use crate::io::StorageOptions;

/// Row indices from an Arrow integer array (`__arrow_c_array__`, zero-copy) or any sequence
/// of ints.
/// `describe` names what the rows belong to (used only in the error for over-large indices).
pub fn extract_indices(obj: &Bound<'_, PyAny>, describe: impl FnOnce() -> String) -> PyResult<Vec<u64>> {
    if obj.hasattr("__arrow_c_array__")? {
        let array = super::ffi::import_array(obj)?;
        return crate::io::indices_from_array(array.as_ref()).map_err(to_pyerr);
    }
    if let Ok(v) = obj.extract::<Vec<u64>>() {
        return Ok(v);
    }
    match obj.extract::<Vec<i64>>() {
        Ok(v) => v.into_iter().map(|i| u64::try_from(i).map_err(|_| negative(i))).collect(),
        Err(_) => {
            // Integers too large for 64 bits are out of range, anything else is a type error.
            let all_ints =
                obj.try_iter().map(|it| it.flatten().all(|x| x.is_instance_of::<pyo3::types::PyInt>())).unwrap_or(false);
            if all_ints {
                Err(to_pyerr(Error::IndexOutOfRange(format!("a row index does not fit in 64 bits; {}", describe()))))
            } else {
                Err(to_pyerr(Error::invalid_input("row indices must be a sequence or array of integers")))
            }
        }
    }
}

fn negative(i: i64) -> PyErr {
    to_pyerr(Error::IndexOutOfRange(format!("row index {i} is negative")))
}

/// Imports a schema from an object implementing `__arrow_c_schema__`.
pub fn import_schema(obj: &Bound<'_, PyAny>) -> PyResult<Schema> {
    let capsule = obj.call_method0("__arrow_c_schema__")?;
    let capsule = capsule.downcast::<pyo3::types::PyCapsule>()?;
    // SAFETY: `__arrow_c_schema__` returns a capsule holding a valid FFI_ArrowSchema that
    // stays alive while `capsule` is referenced; we only borrow it to build an owned Schema.
    let ffi = unsafe { &*(capsule.pointer() as *const FFI_ArrowSchema) };
    Schema::try_from(ffi).map_err(|e| to_pyerr(e.into()))
}

/// An open Lance file.
#[pyclass(name = "FileReader", module = "lancepy._lancepy", frozen)]
pub struct PyFileReader {
    inner: Arc<FileReader>,
}

#[pymethods]
impl PyFileReader {
    /// `allow_legacy`: open legacy (v1) files too (index files of older pylance); the
    /// single-file API reads versions 2.0 and above only, as pylance's.
    #[new]
    #[pyo3(signature = (path, storage_options=None, allow_legacy=false))]
    fn new(py: Python<'_>, path: String, storage_options: Option<StorageOptions>, allow_legacy: bool) -> PyResult<Self> {
        let options = storage_options.unwrap_or_default();
        let inner = run(py, || {
            if allow_legacy {
                FileReader::open_any_with_options(&path, &options)
            } else {
                FileReader::open_with_options(&path, &options)
            }
        })?;
        Ok(Self { inner: Arc::new(inner) })
    }

    /// Row offsets of a legacy (v1) file's batches (0 first, the row count last); `None`
    /// for a file of version 2.0 or above, which has no batches.
    #[getter]
    fn batch_offsets(&self) -> Option<Vec<u64>> {
        self.inner.legacy().map(|l| l.batch_offsets().to_vec())
    }

    /// The schema's metadata (a legacy file's too).
    fn schema_metadata(&self) -> std::collections::HashMap<String, String> {
        self.inner.schema().metadata.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    #[getter]
    fn num_rows(&self) -> u64 {
        self.inner.num_rows()
    }

    #[getter]
    fn version(&self) -> String {
        self.inner.version().to_string()
    }

    #[getter]
    fn path(&self) -> String {
        self.inner.path().to_string()
    }

    /// The schema, as an object implementing `__arrow_c_schema__`.
    fn schema(&self) -> ArrowBatches {
        ArrowBatches::new(self.inner.schema(), vec![])
    }

    /// Reads `num_rows` rows from `start`.
    #[pyo3(signature = (start, num_rows, columns=None))]
    fn read_range(&self, py: Python<'_>, start: u64, num_rows: u64, columns: Option<Vec<String>>) -> PyResult<ArrowBatches> {
        let r = &self.inner;
        let fields = r.projection(columns.as_deref()).py()?;
        let batches = run(py, || {
            r.read_range_parallel(start, num_rows, &fields)?
                .into_iter()
                .map(|b| r.blob_values(b, &fields))
                .collect::<Result<Vec<_>, _>>()
        })?;
        Ok(ArrowBatches::new(batches[0].schema(), batches))
    }

    /// Reads the rows at `indices` (output follows input order; repeats allowed).
    #[pyo3(signature = (indices, columns=None))]
    fn take(&self, py: Python<'_>, indices: &Bound<'_, PyAny>, columns: Option<Vec<String>>) -> PyResult<ArrowBatches> {
        let r = &self.inner;
        let idx = extract_indices(indices, || format!("{} has {} rows", r.path(), r.num_rows()))?;
        let r = &self.inner;
        let fields = r.projection(columns.as_deref()).py()?;
        let batch = run(py, || r.blob_values(r.take(&idx, &fields)?, &fields))?;
        Ok(ArrowBatches::new(batch.schema(), vec![batch]))
    }

    /// A stream of batches of `batch_size` rows over `start..end`, decoded on demand.
    #[pyo3(signature = (batch_size, columns=None, start=0, end=None))]
    fn stream(&self, batch_size: u64, columns: Option<Vec<String>>, start: u64, end: Option<u64>) -> PyResult<BatchStream> {
        if batch_size == 0 {
            return Err(to_pyerr(Error::invalid_input("batch_size must be positive")));
        }
        let r = self.inner.clone();
        let fields = r.projection(columns.as_deref()).py()?;
        let end = end.unwrap_or(r.num_rows()).min(r.num_rows());
        let schema = r.blob_values(r.read_range(0, 0, &fields).py()?, &fields).py()?.schema();
        let starts = (start..end).step_by(batch_size as usize);
        let iter = starts.map(move |s| catch(|| r.blob_values(r.read_range(s, batch_size.min(end - s), &fields)?, &fields)));
        Ok(BatchStream::new(schema, iter))
    }

    /// Raw bytes of global buffer `index`.
    fn read_global_buffer<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let b = run(py, || self.inner.read_global_buffer(index))?;
        Ok(pyo3::types::PyBytes::new(py, b.as_slice()))
    }

    /// Columns, pages, buffers and encodings, as plain Python data.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = &self.inner;
        let columns = run(py, || r.describe())?;
        let d = PyDict::new(py);
        let f = r.footer();
        d.set_item("major_version", f.major)?;
        d.set_item("minor_version", f.minor)?;
        d.set_item("version", r.version().to_string())?;
        d.set_item("num_rows", r.num_rows())?;
        d.set_item("file_size", r.file_size())?;
        d.set_item("num_global_buffers", f.num_global_buffers)?;
        d.set_item("global_buffers", r.global_buffers().to_vec())?;
        d.set_item("num_column_metadata_bytes", f.cmo_table_pos - f.column_meta_start)?;
        // Data pages come first, then the global buffers, then the column metadata.
        let global_bytes: u64 = r.global_buffers().iter().map(|b| b.1).sum();
        d.set_item("num_data_bytes", f.column_meta_start.saturating_sub(global_bytes))?;
        let cols = PyList::empty(py);
        for c in columns {
            let pages = PyList::empty(py);
            for p in c.pages {
                let pd = PyDict::new(py);
                pd.set_item("num_rows", p.num_rows)?;
                pd.set_item("buffers", p.buffers)?;
                pd.set_item("encoding", p.encoding)?;
                pages.append(pd)?;
            }
            let cd = PyDict::new(py);
            cd.set_item("pages", pages)?;
            cd.set_item("column_buffers", c.buffers)?;
            cols.append(cd)?;
        }
        d.set_item("columns", cols)?;
        Ok(d)
    }
}

/// Writes one Lance file. Its methods may be called from several threads at once (as
/// pylance's): each call takes the writer's lock with the GIL released, so batches written
/// concurrently are all stored, one call's batches after another's.
#[pyclass(name = "FileWriter", module = "lancepy._lancepy")]
pub struct PyFileWriter {
    path: String,
    options: WriterOptions,
    state: Mutex<WriterState>,
}

/// What the lock of [`PyFileWriter`] guards.
struct WriterState {
    /// `None` until the schema is known (given, or the first batch's).
    writer: Option<FileWriter>,
    closed: bool,
}

impl PyFileWriter {
    /// Runs `f` on the open writer (its schema must be known) under the lock, GIL released.
    fn with_writer<T: Send>(
        &self,
        py: Python<'_>,
        what: &str,
        f: impl FnOnce(&mut FileWriter) -> crate::error::Result<T> + Send,
    ) -> PyResult<T> {
        run(py, || {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if state.closed {
                return Err(Error::invalid_input("the writer is closed"));
            }
            match state.writer.as_mut() {
                Some(w) => f(w),
                None => Err(Error::invalid_input(format!(
                    "{what}: the schema is not known yet (pass `schema=` or write a batch first)"
                ))),
            }
        })
    }
}

#[pymethods]
impl PyFileWriter {
    #[new]
    #[pyo3(signature = (path, schema=None, version=None, max_page_bytes=None, storage_options=None))]
    fn new(
        py: Python<'_>,
        path: String,
        schema: Option<&Bound<'_, PyAny>>,
        version: Option<String>,
        max_page_bytes: Option<u64>,
        storage_options: Option<StorageOptions>,
    ) -> PyResult<Self> {
        let version: FileVersion = match version {
            Some(v) => match v.parse().py()? {
                FileVersion::Legacy => {
                    return Err(to_pyerr(Error::not_supported(format!(
                        "file version {v:?}: the file writer writes 2.0, 2.1 and 2.2 (\"stable\"); legacy (v1) files \
                         are written for datasets (write_dataset(..., data_storage_version=\"legacy\"))"
                    ))))
                }
                other => other,
            },
            None => FileVersion::DEFAULT,
        };
        let mut options = WriterOptions { version, storage_options: storage_options.unwrap_or_default(), ..Default::default() };
        if let Some(m) = max_page_bytes {
            if m == 0 {
                return Err(to_pyerr(Error::invalid_input("max_page_bytes must be positive")));
            }
            options.max_page_bytes = m;
        }
        let inner = match schema {
            Some(s) => {
                let schema = import_schema(s)?;
                let o = options.clone();
                let p = path.clone();
                Some(run(py, move || FileWriter::try_new(&p, &schema, o))?)
            }
            None => None,
        };
        Ok(Self { path, options, state: Mutex::new(WriterState { writer: inner, closed: false }) })
    }

    /// Appends Arrow data (a record batch, table or stream).
    fn write_batch(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let (schema, batches) = import_batches(data)?;
        run(py, || {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if state.closed {
                return Err(Error::invalid_input("the writer is closed"));
            }
            if state.writer.is_none() {
                state.writer = Some(FileWriter::try_new(&self.path, &schema, self.options.clone())?);
            }
            let w = state.writer.as_mut().expect("set above");
            for b in &batches {
                w.write_batch(b)?;
            }
            Ok(())
        })
    }

    /// Finishes the file; returns `(num_rows, file_size)`.
    fn finish(&self, py: Python<'_>) -> PyResult<(u64, u64)> {
        run(py, || {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if state.closed {
                return Err(Error::invalid_input("the writer is already closed"));
            }
            state.closed = true;
            let Some(w) = state.writer.as_mut() else {
                return Err(Error::invalid_input(
                    "no schema: pass `schema=` or write at least one batch before closing the writer",
                ));
            };
            let written = w.finish()?;
            Ok((written.num_rows, written.size))
        })
    }

    /// Adds a global buffer; returns its number (1 for the first: buffer 0 is the schema).
    fn add_global_buffer(&self, py: Python<'_>, data: Vec<u8>) -> PyResult<u32> {
        self.with_writer(py, "add_global_buffer", |w| w.add_global_buffer(data))
    }

    /// Sets a schema-level metadata entry, stored when the file is finished.
    fn add_schema_metadata(&self, py: Python<'_>, key: &str, value: &str) -> PyResult<()> {
        self.with_writer(py, "add_schema_metadata", |w| w.add_schema_metadata(key, value))
    }

    /// The schema being written, if known.
    fn schema(&self) -> Option<ArrowBatches> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.writer.as_ref().map(|w| ArrowBatches::new(w.schema(), vec![]))
    }
}

/// Writes one legacy (v1) Lance file with its own schema, as older pylance wrote scalar
/// index files (`page_data.lance`, `page_lookup.lance` before 0.21): batches of
/// `rows_per_batch` rows; each batch's rows may be given in any number of calls.
#[pyclass(name = "LegacyFileWriter", module = "lancepy._lancepy")]
pub struct PyLegacyFileWriter {
    inner: Mutex<Option<crate::file::legacy::LegacyWriter>>,
}

#[pymethods]
impl PyLegacyFileWriter {
    #[new]
    #[pyo3(signature = (path, schema, rows_per_batch, storage_options=None))]
    fn new(
        py: Python<'_>,
        path: String,
        schema: &Bound<'_, PyAny>,
        rows_per_batch: usize,
        storage_options: Option<StorageOptions>,
    ) -> PyResult<Self> {
        let schema = import_schema(schema)?;
        let options = storage_options.unwrap_or_default();
        let inner = run(py, move || {
            let schema = crate::schema::LanceSchema::from_arrow(&schema)?;
            crate::file::legacy::LegacyWriter::try_new(&path, schema, rows_per_batch, &options)
        })?;
        Ok(Self { inner: Mutex::new(Some(inner)) })
    }

    /// Appends Arrow data (a record batch, table or stream).
    fn write_batch(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let w = self
            .inner
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
            .ok_or_else(|| to_pyerr(Error::invalid_input("the writer is closed")))?;
        let (_, batches) = import_batches(data)?;
        for b in &batches {
            run(py, || w.write_batch(b))?;
        }
        Ok(())
    }

    /// Finishes the file; returns `(num_rows, file_size)`.
    fn finish(&mut self, py: Python<'_>) -> PyResult<(u64, u64)> {
        let mut w = self
            .inner
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| to_pyerr(Error::invalid_input("the writer is already closed")))?;
        let written = run(py, || w.finish())?;
        Ok((written.num_rows, written.size))
    }
}
