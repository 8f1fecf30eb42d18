//! Arrow data across the boundary through the Arrow PyCapsule interface, zero-copy.
//!
//! Inputs: any object implementing `__arrow_c_stream__` (tables, readers, polars, DuckDB)
//! or `__arrow_c_array__` (record batches, struct arrays). Outputs: [`ArrowBatches`], which
//! implements `__arrow_c_stream__` / `__arrow_c_schema__` by handing Arrow consumers the
//! buffers lancepy allocated, and [`BatchStream`], which decodes batches on demand.

use std::ffi::CString;
use std::sync::Mutex;

use arrow_array::cast::AsArray;
use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{make_array, Array, ArrayRef, RecordBatch, RecordBatchIterator, RecordBatchReader, StructArray};
use arrow_buffer::Buffer;
use arrow_schema::{ArrowError, DataType, SchemaRef};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};

use super::errors::to_pyerr;
use crate::error::Error;

fn capsule_pointer<T>(capsule: &Bound<'_, PyAny>, name: &str) -> PyResult<*mut T> {
    let capsule = capsule.downcast::<PyCapsule>().map_err(|_| PyTypeError::new_err(format!("expected a {name} PyCapsule")))?;
    let got = capsule.name()?.map(|n| n.to_string_lossy().into_owned());
    if got.as_deref() != Some(name) {
        return Err(PyValueError::new_err(format!("expected a PyCapsule named {name:?}, got {got:?}")));
    }
    Ok(capsule.pointer() as *mut T)
}

/// Reads all record batches from an object implementing the Arrow PyCapsule protocol.
pub fn import_batches(obj: &Bound<'_, PyAny>) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    if obj.hasattr("__arrow_c_stream__")? {
        let capsule = obj.call_method0("__arrow_c_stream__")?;
        let ptr = capsule_pointer::<FFI_ArrowArrayStream>(&capsule, "arrow_array_stream")?;
        // SAFETY: the capsule is named "arrow_array_stream", so by the PyCapsule protocol it
        // points to a valid FFI_ArrowArrayStream; `from_raw` moves the stream out and marks
        // the original released, so the producer's capsule destructor will not free it twice.
        let reader = unsafe { RecordBatchStreamReader::from_raw(ptr) }.map_err(|e| to_pyerr(e.into()))?;
        let schema = reader.schema();
        let batches = reader.collect::<Result<Vec<_>, ArrowError>>().map_err(|e| to_pyerr(e.into()))?;
        return Ok((schema, batches));
    }
    if obj.hasattr("__arrow_c_array__")? {
        let array = import_array(obj)?;
        let Some(struct_array) = array.as_any().downcast_ref::<StructArray>() else {
            return Err(to_pyerr(Error::invalid_input(format!(
                "expected a record batch or table, got an array of type {}",
                array.data_type()
            ))));
        };
        let batch = RecordBatch::from(struct_array.clone());
        return Ok((batch.schema(), vec![batch]));
    }
    Err(PyTypeError::new_err(format!(
        "expected Arrow data implementing __arrow_c_stream__ or __arrow_c_array__ (e.g. a pyarrow Table or RecordBatch), got {}",
        obj.get_type().name()?
    )))
}

/// Imports one array from an object implementing `__arrow_c_array__`.
pub fn import_array(obj: &Bound<'_, PyAny>) -> PyResult<arrow_array::ArrayRef> {
    let pair = obj.call_method0("__arrow_c_array__")?;
    let pair = pair.downcast::<PyTuple>()?;
    let schema_ptr = capsule_pointer::<FFI_ArrowSchema>(&pair.get_item(0)?, "arrow_schema")?;
    let array_ptr = capsule_pointer::<FFI_ArrowArray>(&pair.get_item(1)?, "arrow_array")?;
    // SAFETY: see `import_batches`: valid capsules per the protocol; the array is moved out
    // so that only we release it, the schema is borrowed.
    let data = unsafe {
        let array = FFI_ArrowArray::from_raw(array_ptr);
        arrow_array::ffi::from_ffi(array, &*schema_ptr)
    }
    .map_err(|e| to_pyerr(e.into()))?;
    Ok(arrow_array::make_array(data))
}

/// Exports a schema as an `arrow_schema` capsule.
pub fn schema_capsule<'py>(py: Python<'py>, schema: &SchemaRef) -> PyResult<Bound<'py, PyCapsule>> {
    let ffi = FFI_ArrowSchema::try_from(schema.as_ref()).map_err(|e| to_pyerr(e.into()))?;
    PyCapsule::new(py, ffi, Some(CString::new("arrow_schema").unwrap()))
}

fn stream_capsule(py: Python<'_>, reader: Box<dyn RecordBatchReader + Send>) -> PyResult<Bound<'_, PyCapsule>> {
    let stream = FFI_ArrowArrayStream::new(reader);
    // The capsule owns the stream; a consumer moves it out (leaving it released), and
    // FFI_ArrowArrayStream's Drop releases it only if nobody did.
    PyCapsule::new(py, stream, Some(CString::new("arrow_array_stream").unwrap()))
}

fn check_requested_schema(requested: Option<&Bound<'_, PyAny>>, schema: &SchemaRef) -> PyResult<()> {
    let Some(req) = requested else { return Ok(()) };
    if req.is_none() {
        return Ok(());
    }
    let ptr = capsule_pointer::<FFI_ArrowSchema>(req, "arrow_schema")?;
    // SAFETY: a capsule named "arrow_schema" holds a valid FFI_ArrowSchema; we only borrow it.
    let requested = unsafe { arrow_schema::Schema::try_from(&*ptr) }.map_err(|e| to_pyerr(e.into()))?;
    if requested.fields() != schema.fields() {
        return Err(to_pyerr(Error::not_supported("casting to a requested schema different from the data's schema")));
    }
    Ok(())
}

/// Decoded record batches held in Rust memory, exported zero-copy.
#[pyclass(module = "lancepy._lancepy", frozen)]
pub struct ArrowBatches {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

impl ArrowBatches {
    /// Wraps decoded batches.
    pub fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        Self { schema, batches }
    }
}

#[pymethods]
impl ArrowBatches {
    /// Exports the batches as an Arrow C stream (the buffers are not copied).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        check_requested_schema(requested_schema.as_ref(), &self.schema)?;
        let reader = RecordBatchIterator::new(self.batches.clone().into_iter().map(Ok), self.schema.clone());
        stream_capsule(py, Box::new(reader))
    }

    /// Exports the schema.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.schema)
    }

    /// Exports the rows as one struct array (a record batch); several batches are
    /// concatenated first (the only case that copies).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        check_requested_schema(requested_schema.as_ref(), &self.schema)?;
        let batch = match self.batches.as_slice() {
            [one] => one.clone(),
            many => arrow_select::concat::concat_batches(&self.schema, many).map_err(|e| to_pyerr(e.into()))?,
        };
        let data = StructArray::from(batch).into_data();
        let (array, schema) = arrow_array::ffi::to_ffi(&data).map_err(|e| to_pyerr(e.into()))?;
        Ok((
            PyCapsule::new(py, schema, Some(CString::new("arrow_schema").unwrap()))?,
            PyCapsule::new(py, array, Some(CString::new("arrow_array").unwrap()))?,
        ))
    }

    /// Number of batches.
    #[getter]
    fn num_batches(&self) -> usize {
        self.batches.len()
    }

    /// Number of rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    /// The values of column `column` as a read-only numpy-compatible view (an object with
    /// `__array_interface__` that keeps the memory alive), if the result is one batch and the
    /// column holds fixed-width numbers without nulls: shape `(rows,)` for numbers (temporal
    /// types as their integers), `(rows, d1, d2, ...)` for (nested) fixed-size lists of them.
    /// `None` otherwise (booleans, strings, nulls, ...). No copy.
    fn fixed_values(&self, column: usize) -> Option<FixedValues> {
        let [batch] = self.batches.as_slice() else { return None };
        FixedValues::of(batch.columns().get(column)?.as_ref())
    }

    /// Addresses of every column's data buffers as lancepy allocated them (tests use this to
    /// prove that export is zero-copy).
    fn _buffer_addresses(&self) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        for b in &self.batches {
            for c in b.columns() {
                let d = c.to_data();
                out.push(d.buffers().iter().map(|x| x.as_ptr() as usize).collect());
            }
        }
        out
    }
}

/// Fixed-width values of an Arrow array, seen by numpy through `__array_interface__` (the
/// array holds this object, which holds the buffer: no copy, no unsafe code here).
#[pyclass(module = "lancepy._lancepy", frozen)]
pub struct FixedValues {
    values: Buffer,
    shape: Vec<usize>,
    typestr: String,
}

/// The values of a fixed-width array of numbers (or of fixed-size lists of them) without
/// nulls, as one buffer of `len` × value bytes; `None` for anything else.
pub(crate) fn fixed_bytes(array: &dyn Array) -> Option<Buffer> {
    FixedValues::of(array).map(|f| f.values)
}

impl FixedValues {
    /// Float32 values in C order, seen as an array of `shape` (whose product is `values.len()`).
    pub fn f32(values: arrow_buffer::ScalarBuffer<f32>, shape: Vec<usize>) -> Self {
        let order = if cfg!(target_endian = "little") { '<' } else { '>' };
        Self { values: values.into_inner(), shape, typestr: format!("{order}f4") }
    }

    fn of(array: &dyn Array) -> Option<Self> {
        let mut shape = vec![array.len()];
        let mut array: ArrayRef = make_array(array.to_data());
        while let DataType::FixedSizeList(_, d) = array.data_type() {
            if array.null_count() > 0 {
                return None;
            }
            shape.push(usize::try_from(*d).ok()?);
            array = array.as_fixed_size_list().values().clone(); // already sliced to the list's rows
        }
        let (kind, width) = match array.data_type() {
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => ('i', array.data_type().primitive_width()?),
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
                ('u', array.data_type().primitive_width()?)
            }
            DataType::Float16 | DataType::Float32 | DataType::Float64 => ('f', array.data_type().primitive_width()?),
            DataType::Date32 | DataType::Time32(_) => ('i', 4),
            DataType::Date64 | DataType::Time64(_) | DataType::Timestamp(..) | DataType::Duration(_) => ('i', 8),
            _ => return None,
        };
        if array.null_count() > 0 {
            return None;
        }
        let data = array.to_data();
        let values = data.buffers().first()?.slice_with_length(data.offset() * width, data.len() * width);
        let order = if width == 1 {
            '|'
        } else if cfg!(target_endian = "little") {
            '<'
        } else {
            '>'
        };
        Some(Self { values, shape, typestr: format!("{order}{kind}{width}") })
    }
}

#[pymethods]
impl FixedValues {
    /// numpy's array interface (version 3): read-only data, C-contiguous.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("version", 3)?;
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item("typestr", &self.typestr)?;
        d.set_item("data", (self.values.as_ptr() as usize, true))?;
        Ok(d)
    }

    /// Number of bytes.
    fn __len__(&self) -> usize {
        self.values.len()
    }
}

/// A lazily decoded stream of batches.
#[pyclass(module = "lancepy._lancepy")]
pub struct BatchStream {
    schema: SchemaRef,
    reader: Mutex<Option<Box<dyn RecordBatchReader + Send>>>,
}

impl BatchStream {
    /// Wraps an iterator that decodes batches on demand.
    /// The I/O of each batch counts for the trackers current where the stream was made (a
    /// consumer may pull batches later, from any thread: see `crate::io::IoTracker`).
    pub fn new(schema: SchemaRef, iter: impl Iterator<Item = crate::error::Result<RecordBatch>> + Send + 'static) -> Self {
        let trackers = crate::io::scopes();
        let mut iter = iter;
        let tracked = std::iter::from_fn(move || crate::io::with_scopes(&trackers, || iter.next()));
        let reader =
            RecordBatchIterator::new(tracked.map(|r| r.map_err(|e| ArrowError::ExternalError(Box::new(e)))), schema.clone());
        Self { schema, reader: Mutex::new(Some(Box::new(reader))) }
    }
}

#[pymethods]
impl BatchStream {
    /// Exports the stream (it can be consumed once).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &mut self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        check_requested_schema(requested_schema.as_ref(), &self.schema)?;
        let reader = self
            .reader
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| PyValueError::new_err("this stream was already consumed"))?;
        stream_capsule(py, reader)
    }

    /// Exports the schema.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.schema)
    }

    /// Decodes the next batch (with the GIL released); `None` at the end.
    fn next_batch(&mut self, py: Python<'_>) -> PyResult<Option<ArrowBatches>> {
        let schema = self.schema.clone();
        let slot = self.reader.get_mut().unwrap_or_else(|p| p.into_inner());
        let Some(reader) = slot.as_mut() else { return Ok(None) };
        let next = super::errors::interruptible(py, || reader.next())?;
        match next {
            None => {
                *slot = None;
                Ok(None)
            }
            Some(Ok(b)) => Ok(Some(ArrowBatches::new(schema, vec![b]))),
            Some(Err(ArrowError::ExternalError(e))) => match e.downcast::<Error>() {
                Ok(err) => Err(to_pyerr(*err)),
                Err(other) => Err(to_pyerr(Error::invalid_input(other))),
            },
            Some(Err(e)) => Err(to_pyerr(e.into())),
        }
    }
}
