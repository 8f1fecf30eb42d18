//! Bindings of [`crate::table::index_proto`]: the protobuf messages of IVF vector indices
//! (`IVF`, `Tensor`, `VectorIndexDetails`), decoded and encoded by prost. Float32 values go
//! out as [`FixedValues`] (numpy views of the decoded buffer, no copy) and come in as float32
//! Arrow arrays.

use arrow_array::{Array, Float32Array};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::errors::{run, IntoPyResult};
use super::ffi::{import_array, FixedValues};
use crate::error::Error;
use crate::table::index_proto::{self, Compression, IndexMetric, TensorF32, TensorFloat};

fn view(t: TensorF32) -> FixedValues {
    FixedValues::f32(t.values, t.shape)
}

/// The float32 values of an Arrow array (no copy), refusing other types and nulls.
fn f32_values(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<arrow_buffer::ScalarBuffer<f32>> {
    let array = import_array(obj)?;
    let Some(values) = array.as_any().downcast_ref::<Float32Array>() else {
        return Err(Error::invalid_input(format!("{what}: expected float32 values, got {}", array.data_type()))).py();
    };
    if values.null_count() > 0 {
        return Err(Error::invalid_input(format!("{what} must not contain nulls"))).py();
    }
    Ok(values.values().clone())
}

/// Decodes an `IVF` message: `(offsets, lengths, centroids, loss)`, the centroids (if the
/// message has a `centroids_tensor`) as a float32 view of the tensor's shape.
#[pyfunction]
pub fn decode_ivf(py: Python<'_>, data: &[u8]) -> PyResult<(Vec<u64>, Vec<u64>, Option<FixedValues>, Option<f64>)> {
    let m = run(py, || index_proto::decode_ivf(data))?;
    Ok((m.offsets, m.lengths, m.centroids.map(view), m.loss))
}

/// Decodes a float32 `Tensor` message as a view of its shape.
#[pyfunction]
pub fn decode_tensor_f32(py: Python<'_>, data: &[u8]) -> PyResult<FixedValues> {
    run(py, || index_proto::decode_tensor_f32(data)).map(view)
}

/// Encodes a `Tensor`: `values` (a float32 Arrow array, row-major) of `shape`, written as
/// `dtype` values ("float32", "float16", "float64" or "uint8": the indexed vectors' type;
/// uint8 values must be whole numbers from 0 to 255).
#[pyfunction]
#[pyo3(signature = (values, shape, dtype="float32"))]
pub fn encode_tensor_f32<'py>(
    py: Python<'py>,
    values: &Bound<'py, PyAny>,
    shape: Vec<u64>,
    dtype: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let values = f32_values(values, "values")?;
    let float = TensorFloat::parse(dtype).py()?;
    let out = run(py, || index_proto::encode_tensor(&values, &shape, float))?;
    Ok(PyBytes::new(py, &out))
}

/// Encodes an `IVF` message: partition offsets and lengths, the centroids (a float32 Arrow
/// array of `shape`, row-major) and the k-means loss when given.
#[pyfunction]
#[pyo3(signature = (offsets, lengths, centroids=None, shape=None, loss=None, dtype="float32"))]
pub fn encode_ivf<'py>(
    py: Python<'py>,
    offsets: Vec<u64>,
    lengths: Vec<u64>,
    centroids: Option<&Bound<'py, PyAny>>,
    shape: Option<Vec<u64>>,
    loss: Option<f64>,
    dtype: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let float = TensorFloat::parse(dtype).py()?;
    let centroids = match (centroids, shape) {
        (Some(c), Some(shape)) => Some((f32_values(c, "centroids")?, shape)),
        (None, None) => None,
        _ => return Err(Error::invalid_input("encode_ivf: centroids and shape go together")).py(),
    };
    let out =
        run(py, || index_proto::encode_ivf(&offsets, &lengths, centroids.as_ref().map(|(v, s)| (&v[..], &s[..])), loss, float))?;
    Ok(PyBytes::new(py, &out))
}

/// Encodes the `VectorIndexDetails` of an IVF index: `metric` ("l2", "cosine", "dot", "hamming"),
/// `compression` ("flat", or "pq" with `num_bits` and `num_sub_vectors`) and the build
/// settings `runtime_hints`, written in the order given.
#[pyfunction]
#[pyo3(signature = (metric, compression, runtime_hints, num_bits=8, num_sub_vectors=0))]
pub fn encode_vector_index_details<'py>(
    py: Python<'py>,
    metric: &str,
    compression: &str,
    runtime_hints: Vec<(String, String)>,
    num_bits: u32,
    num_sub_vectors: u32,
) -> PyResult<Bound<'py, PyBytes>> {
    let metric = IndexMetric::parse(metric).py()?;
    let compression = match compression.to_ascii_lowercase().as_str() {
        "flat" => Compression::Flat,
        "pq" => Compression::Pq { num_bits, num_sub_vectors },
        "sq" => Compression::Sq { num_bits },
        other => {
            return Err(Error::invalid_input(format!("unknown vector compression {other:?}: use \"flat\", \"pq\" or \"sq\"")))
                .py()
        }
    };
    Ok(PyBytes::new(py, &index_proto::encode_vector_index_details(metric, compression, &runtime_hints)))
}

/// Registers the index protobuf bindings.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(decode_ivf, m)?)?;
    m.add_function(wrap_pyfunction!(decode_tensor_f32, m)?)?;
    m.add_function(wrap_pyfunction!(encode_ivf, m)?)?;
    m.add_function(wrap_pyfunction!(encode_tensor_f32, m)?)?;
    m.add_function(wrap_pyfunction!(encode_vector_index_details, m)?)?;
    Ok(())
}
