//! Vector index bindings: IVF training (k-means) and assignment, product quantization
//! (training, encoding, distance tables), the partition scans of IVF_FLAT / IVF_PQ searches,
//! and index fragment bitmaps.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::errors::{run, IntoPyResult};

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

/// A roaring bitmap of `ids` in its portable serialization (an index's `fragment_bitmap`),
/// run-optimized as pylance 14 writes it.
#[pyfunction]
pub fn fragment_bitmap<'py>(py: Python<'py>, ids: Vec<u32>) -> PyResult<Bound<'py, PyBytes>> {
    let bm: roaring::RoaringBitmap = ids.into_iter().collect();
    Ok(PyBytes::new(py, &crate::table::roaring_runs::serialize_run_optimized(&bm)))
}

/// BITMAP / LABEL_LIST index bitmaps: the row-address sets `addresses[offsets[i] ..
/// offsets[i + 1]]` (`addresses`: little-endian u64 bytes, each set sorted and distinct), each
/// in lance's `RowAddrTreeMap` serialization.
#[pyfunction]
pub fn row_addr_maps_serialize<'py>(
    py: Python<'py>,
    addresses: &[u8],
    offsets: Vec<usize>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    if addresses.len() % 8 != 0 {
        return Err(crate::error::Error::InvalidInput("addresses must be a whole number of u64".into())).py();
    }
    let addrs: Vec<u64> = addresses.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
    if offsets.windows(2).any(|w| w[0] > w[1]) || offsets.last().is_some_and(|&o| o > addrs.len()) {
        return Err(crate::error::Error::InvalidInput("offsets must ascend within the addresses".into())).py();
    }
    let blobs: Vec<Vec<u8>> =
        py.allow_threads(|| offsets.windows(2).map(|w| crate::table::row_addr_map::serialize(&addrs[w[0]..w[1]])).collect());
    Ok(blobs.iter().map(|b| PyBytes::new(py, b)).collect())
}

/// BITMAP / LABEL_LIST index bitmaps joined: for each group `blobs[offsets[i] ..
/// offsets[i + 1]]` of serialized row-address sets, their union without the fragments not
/// in `live` (any order; `None`: keep every fragment). Fragments only one set holds are
/// copied as they are, not decoded. Malformed bytes raise `CorruptFileError`.
#[pyfunction]
#[pyo3(signature = (blobs, offsets, live=None))]
pub fn row_addr_maps_union<'py>(
    py: Python<'py>,
    blobs: Vec<pyo3::pybacked::PyBackedBytes>,
    offsets: Vec<usize>,
    live: Option<Vec<u32>>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    if offsets.windows(2).any(|w| w[0] > w[1]) || offsets.last().is_some_and(|&o| o > blobs.len()) {
        return Err(crate::error::Error::InvalidInput("offsets must ascend within the blobs".into())).py();
    }
    let live = live.map(|mut l| {
        l.sort_unstable();
        l
    });
    let out: Vec<Vec<u8>> = run(py, || {
        offsets
            .windows(2)
            .map(|w| {
                let sets: Vec<&[u8]> = blobs[w[0]..w[1]].iter().map(|b| &b[..]).collect();
                crate::table::row_addr_map::union(&sets, live.as_deref())
            })
            .collect()
    })?;
    Ok(out.iter().map(|b| PyBytes::new(py, b)).collect())
}

/// The inverse of [`row_addr_maps_serialize`]: `(addresses as little-endian u64 bytes, the
/// number of addresses of each set, [(set, fragment)] for fragments a set holds whole)`.
/// Malformed bytes raise `CorruptFileError`.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn row_addr_maps_deserialize<'py>(
    py: Python<'py>,
    blobs: Vec<pyo3::pybacked::PyBackedBytes>,
) -> PyResult<(Bound<'py, PyBytes>, Vec<usize>, Vec<(usize, u32)>)> {
    // (`PyBackedBytes`: the bytes objects' own buffers, not a list of ints read one by one)
    let (addrs, lengths, full) = run(py, || {
        let mut addrs: Vec<u8> = Vec::new();
        let mut lengths = Vec::with_capacity(blobs.len());
        let mut full = Vec::new();
        for (i, blob) in blobs.iter().enumerate() {
            let d = crate::table::row_addr_map::deserialize(&blob[..])?;
            lengths.push(d.addresses.len());
            d.addresses.iter().for_each(|a| addrs.extend_from_slice(&a.to_le_bytes()));
            full.extend(d.full_fragments.into_iter().map(|f| (i, f)));
        }
        Ok((addrs, lengths, full))
    })?;
    Ok((PyBytes::new(py, &addrs), lengths, full))
}
