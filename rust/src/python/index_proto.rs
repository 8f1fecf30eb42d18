//! Bindings of [`crate::table::index_proto`], [`crate::table::index_legacy`] and
//! [`crate::table::index_details`]: the protobuf messages of indices (`IVF`, `Tensor`,
//! `VectorIndexDetails`, the legacy layout's `Index`, the manifest's `index_details`),
//! decoded and encoded by prost. Float32 values go out as [`FixedValues`] (numpy views of
//! the decoded buffer, no copy) and come in as float32 Arrow arrays; messages go out as
//! dicts.

use arrow_array::{Array, Float32Array};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use super::errors::{run, IntoPyResult};
use super::ffi::{import_array, FixedValues};
use crate::error::Error;
use crate::format::indexpb::{vector_index_details, VectorIndexDetails};
use crate::table::index_details::{self, IndexDetails, InvertedIndexDetails};
use crate::table::index_legacy::{self, IvfStageInput, LegacyStage, PqStageInput};
use crate::table::index_proto::{self, Compression, IndexMetric, IvfMessage, TensorF32, TensorFloat};

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
/// settings `runtime_hints`, written in the order given; `target_partition_size` when the
/// build was asked for it (0: left out).
#[pyfunction]
#[pyo3(signature = (metric, compression, runtime_hints, num_bits=8, num_sub_vectors=0, target_partition_size=0))]
pub fn encode_vector_index_details<'py>(
    py: Python<'py>,
    metric: &str,
    compression: &str,
    runtime_hints: Vec<(String, String)>,
    num_bits: u32,
    num_sub_vectors: u32,
    target_partition_size: u64,
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
    let bytes = index_proto::encode_vector_index_details_sized(metric, compression, &runtime_hints, target_partition_size);
    Ok(PyBytes::new(py, &bytes))
}

fn ivf_dict<'py>(py: Python<'py>, m: IvfMessage) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("offsets", m.offsets)?;
    d.set_item("lengths", m.lengths)?;
    d.set_item("centroids_type", m.centroids.as_ref().map(|t| t.stored))?;
    d.set_item("centroids", m.centroids.map(view))?;
    d.set_item("loss", m.loss)?;
    Ok(d)
}

/// Decodes an `IVF` message as a dict: `offsets`, `lengths`, `centroids` (a float32 view of
/// the tensor's shape, or None), `centroids_type` (the type the centroids were stored in:
/// "float32", "float16", "bfloat16", "float64" or "uint8"; None without centroids) and `loss`.
#[pyfunction]
pub fn decode_ivf_message<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let m = run(py, || index_proto::decode_ivf(data))?;
    ivf_dict(py, m)
}

fn metric_str(metric_type: i32) -> String {
    index_legacy::metric_name(metric_type).map(str::to_string).unwrap_or_else(|| format!("unknown metric {metric_type}"))
}

/// Decodes the `Index` message of a legacy vector index file: a dict of `name`, `columns`,
/// `dataset_version`, `index_type` (0: vector) and `vector_index` (None, or a dict of
/// `spec_version`, `dimension`, `metric_type` ("l2", "cosine", "dot", "hamming" or
/// "unknown metric N") and `stages`: one dict per stage, its kind under `stage` ("ivf": the
/// keys of [`decode_ivf_message`]; "pq": `num_bits`, `num_sub_vectors`, `dimension`,
/// `codebook` (float32 view or None), `codebook_type`; "transform": `position`, `shape`,
/// `type`; "flat"; "diskann"; None for a stage message with no stage set)).
#[pyfunction]
pub fn decode_legacy_index<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let m = run(py, || index_legacy::decode_legacy_index(data))?;
    let d = PyDict::new(py);
    d.set_item("name", m.name)?;
    d.set_item("columns", m.columns)?;
    d.set_item("dataset_version", m.dataset_version)?;
    d.set_item("index_type", m.index_type)?;
    let vector = match m.vector {
        None => None,
        Some(v) => {
            let vd = PyDict::new(py);
            vd.set_item("spec_version", v.spec_version)?;
            vd.set_item("dimension", v.dimension)?;
            vd.set_item("metric_type", metric_str(v.metric_type))?;
            let mut stages = Vec::with_capacity(v.stages.len());
            for st in v.stages {
                let sd = match st {
                    LegacyStage::Ivf(ivf) => {
                        let sd = ivf_dict(py, ivf)?;
                        sd.set_item("stage", "ivf")?;
                        sd
                    }
                    LegacyStage::Pq(pq) => {
                        let sd = PyDict::new(py);
                        sd.set_item("stage", "pq")?;
                        sd.set_item("num_bits", pq.num_bits)?;
                        sd.set_item("num_sub_vectors", pq.num_sub_vectors)?;
                        sd.set_item("dimension", pq.dimension)?;
                        sd.set_item("codebook_type", pq.codebook.as_ref().map(|t| t.stored))?;
                        sd.set_item("codebook", pq.codebook.map(view))?;
                        sd
                    }
                    LegacyStage::Transform { position, shape, kind } => {
                        let sd = PyDict::new(py);
                        sd.set_item("stage", "transform")?;
                        sd.set_item("position", position)?;
                        sd.set_item("shape", shape)?;
                        sd.set_item("type", if kind == 0 { "OPQ".to_string() } else { format!("unknown transform {kind}") })?;
                        sd
                    }
                    other => {
                        let sd = PyDict::new(py);
                        let name = match other {
                            LegacyStage::Flat => Some("flat"),
                            LegacyStage::DiskAnn => Some("diskann"),
                            _ => None,
                        };
                        sd.set_item("stage", name)?;
                        sd
                    }
                };
                stages.push(sd);
            }
            vd.set_item("stages", stages)?;
            Some(vd)
        }
    };
    d.set_item("vector_index", vector)?;
    Ok(d)
}

/// Encodes the `Index` message of a legacy IVF_PQ index over `column`: the IVF stage (each
/// partition's byte `offsets` in the file, its row count `lengths`, the `centroids` as a
/// float32 Arrow array of `len(lengths) x dimension` values, the k-means `loss`), then the
/// PQ stage (`num_sub_vectors`, `num_bits`, the `codebook`: float32, `2^num_bits x
/// dimension` values), the tensors written as `dtype` values.
#[pyfunction]
#[pyo3(signature = (name, column, dataset_version, metric, dimension, offsets, lengths, centroids, codebook, num_sub_vectors, loss=None, num_bits=8, dtype="float32"))]
#[allow(clippy::too_many_arguments)]
pub fn encode_legacy_index<'py>(
    py: Python<'py>,
    name: &str,
    column: &str,
    dataset_version: u64,
    metric: &str,
    dimension: u32,
    offsets: Vec<u64>,
    lengths: Vec<u64>,
    centroids: &Bound<'py, PyAny>,
    codebook: &Bound<'py, PyAny>,
    num_sub_vectors: u32,
    loss: Option<f64>,
    num_bits: u32,
    dtype: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let metric = IndexMetric::parse(metric).py()?;
    let float = TensorFloat::parse(dtype).py()?;
    let centroids = f32_values(centroids, "centroids")?;
    let codebook = f32_values(codebook, "codebook")?;
    let out = run(py, || {
        index_legacy::encode_legacy_index(
            name,
            column,
            dataset_version,
            metric,
            dimension,
            IvfStageInput { offsets: &offsets, lengths: &lengths, centroids: &centroids, loss },
            PqStageInput { num_bits, num_sub_vectors, codebook: &codebook },
            float,
        )
    })?;
    Ok(PyBytes::new(py, &out))
}

/// Encodes `InvertedIndexDetails` (the `index_details` of a full-text index) from its
/// fields; `language` is the language's name ("English"), stored as a JSON string; zero and
/// false values are left out, as pylance writes them.
#[pyfunction]
#[pyo3(signature = (*, base_tokenizer, language, with_position=false, max_token_length=None, lower_case=false, stem=false, remove_stop_words=false, ascii_folding=false, min_ngram_length=0, max_ngram_length=0, prefix_only=false, block_size=0, format_version=0, code=None))]
#[allow(clippy::too_many_arguments)]
pub fn encode_inverted_index_details<'py>(
    py: Python<'py>,
    base_tokenizer: Option<String>,
    language: String,
    with_position: bool,
    max_token_length: Option<u32>,
    lower_case: bool,
    stem: bool,
    remove_stop_words: bool,
    ascii_folding: bool,
    min_ngram_length: u32,
    max_ngram_length: u32,
    prefix_only: bool,
    block_size: u32,
    format_version: u32,
    code: Option<(bool, bool, bool, bool)>,
) -> Bound<'py, PyBytes> {
    // (`code`: the code analyzer's (index_operators, split_identifiers, preserve_original,
    // split_on_numerics), as the analyzer takes them)
    let code_analyzer = code.map(|(index_operators, split_identifiers, preserve_original, split_on_numerics)| {
        index_details::CodeAnalyzerConfig {
            split_identifiers,
            split_on_numerics: Some(split_on_numerics),
            preserve_original: Some(preserve_original),
            index_operators,
        }
    });
    let m = InvertedIndexDetails {
        base_tokenizer,
        language,
        with_position,
        max_token_length,
        lower_case,
        stem,
        remove_stop_words,
        ascii_folding,
        min_ngram_length,
        max_ngram_length,
        prefix_only,
        block_size,
        format_version,
        code_analyzer,
        document_granularity: 0,
    };
    PyBytes::new(py, &index_details::encode_inverted_index_details(&m))
}

/// `JsonIndexDetails` bytes: the JSON path, the target index's details and the recorded
/// target type (0: unspecified, as pylance 14.0.2 writes it).
#[pyfunction]
#[pyo3(signature = (path, target_type_url, target_value, target_data_type=0))]
pub fn encode_json_index_details<'py>(
    py: Python<'py>,
    path: &str,
    target_type_url: &str,
    target_value: &[u8],
    target_data_type: i32,
) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &index_details::encode_json_index_details(path, target_type_url, target_value, target_data_type))
}

fn vector_details_dict<'py>(py: Python<'py>, v: VectorIndexDetails) -> PyResult<Bound<'py, PyDict>> {
    use vector_index_details::Compression as C;
    let d = PyDict::new(py);
    d.set_item("metric_type", metric_str(v.metric_type))?;
    d.set_item("target_partition_size", v.target_partition_size)?;
    d.set_item("target_num_partitions", v.target_num_partitions)?;
    let hnsw = match v.hnsw_index_config {
        None => None,
        Some(h) => {
            let hd = PyDict::new(py);
            hd.set_item("max_connections", h.max_connections)?;
            hd.set_item("construction_ef", h.construction_ef)?;
            hd.set_item("max_level", h.max_level)?;
            Some(hd)
        }
    };
    d.set_item("hnsw", hnsw)?;
    let (kind, num_bits, num_sub_vectors) = match v.compression {
        None => (None, None, None),
        Some(C::Flat(_)) => (Some("flat"), None, None),
        Some(C::Pq(pq)) => (Some("pq"), Some(pq.num_bits), Some(pq.num_sub_vectors)),
        Some(C::Sq(sq)) => (Some("sq"), Some(sq.num_bits), None),
        Some(C::Rq(rq)) => {
            d.set_item("rotation_type", if rq.rotation_type == 1 { "matrix" } else { "fast" })?;
            (Some("rq"), Some(rq.num_bits), None)
        }
    };
    d.set_item("compression", kind)?;
    d.set_item("num_bits", num_bits)?;
    d.set_item("num_sub_vectors", num_sub_vectors)?;
    let hints = PyDict::new(py);
    for h in v.runtime_hints {
        hints.set_item(h.key, h.value)?;
    }
    d.set_item("runtime_hints", hints)?;
    Ok(d)
}

/// Decodes the `index_details` of an index entry: its `type_url` and `value` bytes, as a
/// dict of the message's fields (`{}` for the messages without fields: BTree, Bitmap,
/// LabelList, NGram, ZoneMap; InvertedIndexDetails: its fields, `language` unquoted,
/// `base_tokenizer` / `max_token_length` None when absent, `code_analyzer` (the "code"
/// analyzer's flags, a dict, or None) and `document_granularity` ("row" or "list_element";
/// another value raises NotSupportedError); VectorIndexDetails: `metric_type`,
/// `compression` ("flat", "pq", "sq", "rq" or None) with `num_bits` / `num_sub_vectors`,
/// `runtime_hints` as a dict in stored order, `hnsw`, `target_partition_size`,
/// `target_num_partitions`). Another type URL raises NotSupportedError.
#[pyfunction]
pub fn decode_index_details<'py>(py: Python<'py>, type_url: &str, value: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    match run(py, || index_details::decode_index_details(type_url, value))? {
        IndexDetails::Empty(_) => Ok(PyDict::new(py)),
        IndexDetails::Vector(v) => vector_details_dict(py, v),
        IndexDetails::Json(m) => {
            let d = PyDict::new(py);
            let target = m.target_details.unwrap_or_default();
            d.set_item("path", m.path)?;
            d.set_item("target_type_url", target.type_url)?;
            d.set_item("target_value", PyBytes::new(py, &target.value))?;
            d.set_item("target_data_type", m.target_data_type)?;
            Ok(d)
        }
        IndexDetails::Inverted(m) => {
            let d = PyDict::new(py);
            d.set_item("base_tokenizer", m.base_tokenizer)?;
            d.set_item("language", m.language)?;
            d.set_item("with_position", m.with_position)?;
            d.set_item("max_token_length", m.max_token_length)?;
            d.set_item("lower_case", m.lower_case)?;
            d.set_item("stem", m.stem)?;
            d.set_item("remove_stop_words", m.remove_stop_words)?;
            d.set_item("ascii_folding", m.ascii_folding)?;
            d.set_item("min_ngram_length", m.min_ngram_length)?;
            d.set_item("max_ngram_length", m.max_ngram_length)?;
            d.set_item("prefix_only", m.prefix_only)?;
            d.set_item("block_size", m.block_size)?;
            d.set_item("format_version", m.format_version)?;
            let code = match m.code_analyzer {
                None => None,
                Some(c) => {
                    let cd = PyDict::new(py);
                    cd.set_item("split_identifiers", c.split_identifiers)?;
                    // (absent: the code analyzer's default)
                    cd.set_item("split_on_numerics", c.split_on_numerics.unwrap_or(true))?;
                    cd.set_item("preserve_original", c.preserve_original.unwrap_or(true))?;
                    cd.set_item("index_operators", c.index_operators)?;
                    Some(cd)
                }
            };
            d.set_item("code_analyzer", code)?;
            let granularity = match m.document_granularity {
                0 => "row",
                1 => "list_element",
                n => {
                    let e =
                        Error::not_supported(format!("InvertedIndexDetails: document_granularity {n} is not known to lancepy"));
                    return Err::<Bound<'py, PyDict>, Error>(e).py();
                }
            };
            d.set_item("document_granularity", granularity)?;
            Ok(d)
        }
    }
}

/// Registers the index protobuf bindings.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(decode_ivf_message, m)?)?;
    m.add_function(wrap_pyfunction!(decode_legacy_index, m)?)?;
    m.add_function(wrap_pyfunction!(encode_legacy_index, m)?)?;
    m.add_function(wrap_pyfunction!(encode_inverted_index_details, m)?)?;
    m.add_function(wrap_pyfunction!(decode_index_details, m)?)?;
    m.add_function(wrap_pyfunction!(encode_json_index_details, m)?)?;
    m.add_function(wrap_pyfunction!(decode_ivf, m)?)?;
    m.add_function(wrap_pyfunction!(decode_tensor_f32, m)?)?;
    m.add_function(wrap_pyfunction!(encode_ivf, m)?)?;
    m.add_function(wrap_pyfunction!(encode_tensor_f32, m)?)?;
    m.add_function(wrap_pyfunction!(encode_vector_index_details, m)?)?;
    Ok(())
}
