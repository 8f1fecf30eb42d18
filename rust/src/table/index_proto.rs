//! The protobuf messages of IVF vector indices (`protos/index.proto`, package
//! `lance.index.pb`): `IVF` (partition centroids, offsets, lengths, k-means loss), `Tensor`
//! (the centroids and the PQ codebook) and `VectorIndexDetails` (the manifest's
//! `index_details`).
//!
//! Decoding checks what a damaged or hostile file could get wrong (a tensor's shape must
//! match its bytes, its values must be float32) and returns [`Error::Corrupt`] (or
//! [`Error::NotSupported`] for a valid tensor of another type) instead of panicking; nothing
//! is allocated beyond what the message's own bytes hold. Encoding writes the bytes pylance
//! writes: fields in field-number order, empty repeated fields left out, a tensor's data and
//! the loss always present.

use arrow_buffer::{Buffer, ScalarBuffer};
use bytes::Bytes;
use prost::Message;

use crate::error::{Error, Result};
use crate::format::indexpb::{self, tensor, vector_index_details, VectorMetricType};
use crate::table::knn::Metric;

/// The distance an index records (`VectorMetricType`): a search [`Metric`], or hamming
/// (binary vectors, which lancepy searches outside [`crate::table::knn`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexMetric {
    /// A float distance.
    Float(Metric),
    /// Bits that differ between two byte vectors.
    Hamming,
}

impl IndexMetric {
    /// "l2" / "euclidean", "cosine", "dot" or "hamming" (any case).
    pub fn parse(name: &str) -> Result<Self> {
        if name.eq_ignore_ascii_case("hamming") {
            return Ok(Self::Hamming);
        }
        Metric::parse(name).map(Self::Float)
    }
}

impl From<Metric> for IndexMetric {
    fn from(m: Metric) -> Self {
        Self::Float(m)
    }
}

/// A float32 tensor: `values` in row-major order, `shape.iter().product() == values.len()`.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorF32 {
    /// The values (zero-copy over the decoded message's data when it is suitably aligned).
    pub values: ScalarBuffer<f32>,
    /// The dimensions, outermost first (at least one).
    pub shape: Vec<usize>,
    /// The type the values were stored in ("float32", "float16", "bfloat16", "float64" or
    /// "uint8"): pylance stores an index's tensors in the indexed vectors' type.
    pub stored: &'static str,
}

/// The contents of an `IVF` message.
#[derive(Debug, Clone, PartialEq)]
pub struct IvfMessage {
    /// First row of each partition (in the auxiliary file; zeros in the index file).
    pub offsets: Vec<u64>,
    /// Rows in each partition.
    pub lengths: Vec<u64>,
    /// The partition centroids (`centroids_tensor`), if the message has them.
    pub centroids: Option<TensorF32>,
    /// The k-means loss, if recorded.
    pub loss: Option<f64>,
}

/// How the vectors of an IVF index's partitions are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// As they are (`IVF_FLAT`).
    Flat,
    /// Product-quantized (`IVF_PQ`).
    Pq {
        /// Bits per code.
        num_bits: u32,
        /// Sub-vectors per vector.
        num_sub_vectors: u32,
    },
    /// Scalar-quantized (`IVF_SQ`): each value a `num_bits` code.
    Sq {
        /// Bits per value.
        num_bits: u32,
    },
}

/// Bytes per value of the float tensor types lancepy reads (all as float32), or `None`.
fn float_width(data_type: i32) -> Option<usize> {
    match tensor::DataType::try_from(data_type).ok()? {
        tensor::DataType::Float32 => Some(4),
        tensor::DataType::Float16 | tensor::DataType::Bfloat16 => Some(2),
        tensor::DataType::Float64 => Some(8),
        tensor::DataType::Uint8 => Some(1),
        _ => None,
    }
}

pub(crate) fn tensor_f32(t: indexpb::Tensor) -> Result<TensorF32> {
    let Some(width) = float_width(t.data_type) else {
        let name =
            tensor::DataType::try_from(t.data_type).map(|d| d.as_str_name().to_string()).unwrap_or(t.data_type.to_string());
        return Err(Error::NotSupported(format!(
            "index tensors of data type {name} (only float16, bfloat16, float32, float64 and uint8) are not supported by lancepy"
        )));
    };
    let data = t.data.unwrap_or_default();
    let count = t.shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
    let fits = count.and_then(|c| c.checked_mul(width as u64)) == Some(data.len() as u64);
    // Dimensions are 32-bit in Lance: a larger one (possible only beside a zero one, given
    // the data length) is damage, not a tensor to hand on.
    if t.shape.is_empty() || !fits || t.shape.iter().any(|&d| d > u64::from(u32::MAX)) {
        return Err(Error::corrupt(format!("index tensor of shape {:?} holds {} bytes", t.shape, data.len())));
    }
    let shape = t.shape.iter().map(|&d| d as usize).collect();
    let stored = match tensor::DataType::try_from(t.data_type) {
        Ok(tensor::DataType::Float16) => "float16",
        Ok(tensor::DataType::Bfloat16) => "bfloat16",
        Ok(tensor::DataType::Float64) => "float64",
        Ok(tensor::DataType::Uint8) => "uint8",
        _ => "float32",
    };
    let values = match tensor::DataType::try_from(t.data_type) {
        Ok(tensor::DataType::Float16) => {
            data.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect::<Vec<f32>>().into()
        }
        Ok(tensor::DataType::Bfloat16) => {
            data.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32()).collect::<Vec<f32>>().into()
        }
        Ok(tensor::DataType::Float64) => {
            data.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")) as f32).collect::<Vec<f32>>().into()
        }
        // (the centroids of a hamming index over binary vectors: bytes, each exact as f32)
        Ok(tensor::DataType::Uint8) => data.iter().map(|&b| f32::from(b)).collect::<Vec<f32>>().into(),
        _ => f32_values(data),
    };
    Ok(TensorF32 { values, shape, stored })
}

/// Little-endian float32 bytes (a multiple of 4) as values: no copy when the bytes are
/// aligned for `f32` on a little-endian machine.
fn f32_values(data: Bytes) -> ScalarBuffer<f32> {
    let n = data.len() / 4;
    if cfg!(target_endian = "little") && data.as_ptr().align_offset(std::mem::align_of::<f32>()) == 0 {
        return ScalarBuffer::new(Buffer::from(data), 0, n);
    }
    data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect::<Vec<f32>>().into()
}

/// The value type an index tensor is written in: pylance types an index's centroids and
/// PQ codebook like the vectors indexed (uint8: the centroids of binary vectors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorFloat {
    /// IEEE half precision.
    F16,
    /// Single precision.
    F32,
    /// Double precision.
    F64,
    /// Bytes (binary vectors, hamming distance): each value must be an integer in 0..=255.
    U8,
}

impl TensorFloat {
    /// From the names Arrow and numpy use ("float16"/"halffloat", "float32"/"float", "float64"/"double").
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "float16" | "halffloat" => Ok(Self::F16),
            "float32" | "float" => Ok(Self::F32),
            "float64" | "double" => Ok(Self::F64),
            "uint8" => Ok(Self::U8),
            other => Err(Error::invalid_input(format!("index tensors are float16, float32, float64 or uint8, not {other}"))),
        }
    }
}

/// Decodes a `Tensor` message as float32 values (float16, bfloat16, float64 and uint8 ones converted).
pub fn decode_tensor_f32(buf: &[u8]) -> Result<TensorF32> {
    tensor_f32(indexpb::Tensor::decode(buf)?)
}

/// Decodes an `IVF` message. The deprecated flat `centroids` list is not read (pylance has
/// written `centroids_tensor` since its file format 2 indices); `centroids` is `None` then.
pub fn decode_ivf(buf: &[u8]) -> Result<IvfMessage> {
    ivf_message(indexpb::Ivf::decode(buf)?)
}

/// The contents of a decoded `IVF` message (its tensor checked).
pub(crate) fn ivf_message(m: indexpb::Ivf) -> Result<IvfMessage> {
    let centroids = m.centroids_tensor.map(tensor_f32).transpose()?;
    Ok(IvfMessage { offsets: m.offsets, lengths: m.lengths, centroids, loss: m.loss })
}

pub(crate) fn tensor_message(values: &[f32], shape: &[u64], float: TensorFloat) -> Result<indexpb::Tensor> {
    let count = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
    if shape.is_empty() || count != Some(values.len() as u64) {
        return Err(Error::invalid_input(format!("a tensor of shape {shape:?} cannot hold {} values", values.len())));
    }
    let (data_type, data) = match float {
        TensorFloat::F32 => (tensor::DataType::Float32, values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()),
        TensorFloat::F16 => {
            (tensor::DataType::Float16, values.iter().flat_map(|v| half::f16::from_f32(*v).to_le_bytes()).collect())
        }
        TensorFloat::F64 => (tensor::DataType::Float64, values.iter().flat_map(|v| f64::from(*v).to_le_bytes()).collect()),
        TensorFloat::U8 => {
            if let Some(bad) = values.iter().find(|v| !(0.0..=255.0).contains(*v) || v.fract() != 0.0) {
                return Err(Error::invalid_input(format!("a uint8 tensor cannot hold {bad}")));
            }
            (tensor::DataType::Uint8, values.iter().map(|&v| v as u8).collect())
        }
    };
    Ok(indexpb::Tensor { data_type: data_type as i32, shape: shape.to_vec(), data: Some(data.into()) })
}

/// Encodes a `Tensor` of `shape` (outermost first; its product must be `values.len()`)
/// holding `values` as `float` values.
pub fn encode_tensor(values: &[f32], shape: &[u64], float: TensorFloat) -> Result<Vec<u8>> {
    Ok(tensor_message(values, shape, float)?.encode_to_vec())
}

/// Encodes a float32 `Tensor` of `shape` (outermost first; its product must be
/// `values.len()`).
pub fn encode_tensor_f32(values: &[f32], shape: &[u64]) -> Result<Vec<u8>> {
    encode_tensor(values, shape, TensorFloat::F32)
}

/// Encodes an `IVF` message: partition `offsets` and `lengths`, the `centroids` (values and
/// shape, written as `float` values) if given, and the k-means `loss` if given.
pub fn encode_ivf(
    offsets: &[u64],
    lengths: &[u64],
    centroids: Option<(&[f32], &[u64])>,
    loss: Option<f64>,
    float: TensorFloat,
) -> Result<Vec<u8>> {
    Ok(ivf_proto(offsets, lengths, centroids, loss, float)?.encode_to_vec())
}

/// The `IVF` message [`encode_ivf`] writes.
pub(crate) fn ivf_proto(
    offsets: &[u64],
    lengths: &[u64],
    centroids: Option<(&[f32], &[u64])>,
    loss: Option<f64>,
    float: TensorFloat,
) -> Result<indexpb::Ivf> {
    let centroids_tensor = centroids.map(|(values, shape)| tensor_message(values, shape, float)).transpose()?;
    Ok(indexpb::Ivf { centroids: vec![], offsets: offsets.to_vec(), lengths: lengths.to_vec(), centroids_tensor, loss })
}

/// Encodes the `VectorIndexDetails` of an IVF index: its distance, how the vectors are stored
/// and the build settings (`runtime_hints`, written in the order given).
pub fn encode_vector_index_details(
    metric: impl Into<IndexMetric>,
    compression: Compression,
    runtime_hints: &[(String, String)],
) -> Vec<u8> {
    encode_vector_index_details_sized(metric, compression, runtime_hints, 0)
}

/// [`encode_vector_index_details`] with the rows per partition the build was asked for
/// (`target_partition_size`, field 2; 0: not asked, left out).
pub fn encode_vector_index_details_sized(
    metric: impl Into<IndexMetric>,
    compression: Compression,
    runtime_hints: &[(String, String)],
    target_partition_size: u64,
) -> Vec<u8> {
    let metric_type = match metric.into() {
        IndexMetric::Float(Metric::L2) => VectorMetricType::L2,
        IndexMetric::Float(Metric::Cosine) => VectorMetricType::Cosine,
        IndexMetric::Float(Metric::Dot) => VectorMetricType::Dot,
        IndexMetric::Hamming => VectorMetricType::Hamming,
    };
    let compression = match compression {
        Compression::Flat => vector_index_details::Compression::Flat(vector_index_details::FlatCompression {}),
        Compression::Pq { num_bits, num_sub_vectors } => {
            vector_index_details::Compression::Pq(vector_index_details::ProductQuantization { num_bits, num_sub_vectors })
        }
        Compression::Sq { num_bits } => {
            vector_index_details::Compression::Sq(vector_index_details::ScalarQuantization { num_bits })
        }
    };
    let runtime_hints = runtime_hints
        .iter()
        .map(|(key, value)| vector_index_details::RuntimeHint { key: key.clone(), value: value.clone() })
        .collect();
    indexpb::VectorIndexDetails {
        metric_type: metric_type as i32,
        target_partition_size,
        compression: Some(compression),
        runtime_hints,
        ..Default::default()
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    fn centroids() -> Vec<f32> {
        (0..12).map(|i| i as f32 / 7.0 - 0.5).collect()
    }

    // Bytes written by lancepy's earlier hand-written Python encoder (the same bytes pylance
    // reads and writes): the Python tests hold more cases.
    const IVF_FULL: &str = "12090003820180e497d0121a05037f80010122380802120204031a30000000bf6edbb6beb66d5bbe244992bd28499\
                            23db86d5b3e6edbb63e0000003f4a92243f9224493fdcb66d3f9224893f290000000000402940";
    const TENSOR: &str = "0802120203021a180000c03f000000c000005040000000006f12833a0000e0c0";

    #[test]
    fn ivf_bytes_and_round_trip() {
        let c = centroids();
        let offsets = [0, 3, 130, 5_000_000_000];
        let lengths = [3, 127, 128, 1];
        let bytes = encode_ivf(&offsets, &lengths, Some((&c, &[4, 3])), Some(12.625), TensorFloat::F32).unwrap();
        assert_eq!(bytes, hex(IVF_FULL));
        let m = decode_ivf(&bytes).unwrap();
        assert_eq!(m.offsets, offsets);
        assert_eq!(m.lengths, lengths);
        assert_eq!(m.loss, Some(12.625));
        let t = m.centroids.unwrap();
        assert_eq!((t.shape.as_slice(), t.stored), (&[4, 3][..], "float32"));
        assert_eq!(&t.values[..], &c[..]);
    }

    #[test]
    fn zero_loss_is_written_and_empty_lists_are_not() {
        let bytes = encode_ivf(&[], &[], None, Some(0.0), TensorFloat::F32).unwrap();
        assert_eq!(bytes, [0x29, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(decode_ivf(&bytes).unwrap().loss, Some(0.0));
        assert!(encode_ivf(&[], &[], None, None, TensorFloat::F32).unwrap().is_empty());
        let m = decode_ivf(&[]).unwrap();
        assert!(m.offsets.is_empty() && m.centroids.is_none() && m.loss.is_none());
    }

    #[test]
    fn unpacked_repeated_integers_are_read() {
        // offsets 7 and 300 as two unpacked varint fields
        let m = decode_ivf(&[0x10, 7, 0x10, 0xac, 0x02]).unwrap();
        assert_eq!(m.offsets, [7, 300]);
    }

    #[test]
    fn tensor_bytes_and_round_trip() {
        let v = [1.5f32, -2.0, 3.25, 0.0, 1e-3, -7.0];
        let bytes = encode_tensor_f32(&v, &[3, 2]).unwrap();
        assert_eq!(bytes, hex(TENSOR));
        let t = decode_tensor_f32(&bytes).unwrap();
        assert_eq!(t.shape, [3, 2]);
        assert_eq!(&t.values[..], &v[..]);
        // an empty tensor still carries its (empty) data field
        assert_eq!(encode_tensor_f32(&[], &[0, 4]).unwrap(), hex("0802120200041a00"));
    }

    #[test]
    fn tensor_shape_must_match_values_when_encoding() {
        assert!(matches!(encode_tensor_f32(&[1.0, 2.0], &[3]), Err(Error::InvalidInput(_))));
        assert!(matches!(encode_tensor_f32(&[1.0], &[]), Err(Error::InvalidInput(_))));
        assert!(matches!(
            encode_ivf(&[], &[], Some((&[1.0], &[u64::MAX, 2])), None, TensorFloat::F32),
            Err(Error::InvalidInput(_))
        ));
    }

    fn tensor_bytes(data_type: i32, shape: Vec<u64>, data: Vec<u8>) -> Vec<u8> {
        indexpb::Tensor { data_type, shape, data: Some(data.into()) }.encode_to_vec()
    }

    #[test]
    fn bad_tensors_are_errors() {
        let f32 = tensor::DataType::Float32 as i32;
        let corrupt = |b: Vec<u8>| matches!(decode_tensor_f32(&b), Err(Error::Corrupt(_)));
        assert!(corrupt(tensor_bytes(f32, vec![3], vec![0; 8])));
        assert!(corrupt(tensor_bytes(f32, vec![], vec![0; 4])));
        assert!(corrupt(tensor_bytes(f32, vec![1 << 62, 1 << 62], vec![0; 4])));
        assert!(corrupt(tensor_bytes(f32, vec![(1 << 62) + 1], vec![0; 4])));
        assert!(corrupt(tensor_bytes(f32, vec![1 << 32, 0], vec![])));
        assert_eq!(decode_tensor_f32(&tensor_bytes(f32, vec![7, 0], vec![])).unwrap().shape, [7, 0]);
        let other = tensor_bytes(tensor::DataType::Uint16 as i32, vec![1], vec![0; 2]);
        assert!(matches!(decode_tensor_f32(&other), Err(Error::NotSupported(m)) if m.contains("UINT16")));
        let f16 = tensor::DataType::Float16 as i32;
        assert!(corrupt(tensor_bytes(f16, vec![3], vec![0; 4])));
        assert!(matches!(decode_tensor_f32(&tensor_bytes(99, vec![1], vec![0; 4])), Err(Error::NotSupported(_))));
    }

    #[test]
    fn float16_bfloat16_and_float64_tensors_are_read_as_float32() {
        // Values exact in every type: what pylance writes for float16 / float64 vectors.
        let v = [1.5f32, -2.0, 3.25, 0.0, 0.125, -7.0];
        for (float, width) in [(TensorFloat::F16, 2), (TensorFloat::F64, 8), (TensorFloat::F32, 4)] {
            let m = indexpb::Tensor::decode(&encode_tensor(&v, &[2, 3], float).unwrap()[..]).unwrap();
            assert_eq!(m.data.as_ref().unwrap().len(), v.len() * width);
            let t = decode_tensor_f32(&encode_tensor(&v, &[2, 3], float).unwrap()).unwrap();
            assert_eq!((t.shape.clone(), &t.values[..]), (vec![2, 3], &v[..]));
        }
        // bfloat16 1.5 = 0x3fc0, -2.0 = 0xc000 (little-endian)
        let bf = tensor_bytes(tensor::DataType::Bfloat16 as i32, vec![2], vec![0xc0, 0x3f, 0x00, 0xc0]);
        assert_eq!(&decode_tensor_f32(&bf).unwrap().values[..], &[1.5, -2.0]);
        // float16 bytes as pylance writes them: 1.0 = 0x3c00
        let h = tensor_bytes(tensor::DataType::Float16 as i32, vec![1], vec![0x00, 0x3c]);
        assert_eq!(&decode_tensor_f32(&h).unwrap().values[..], &[1.0]);
        let ivf = encode_ivf(&[0], &[1], Some((&v, &[2, 3])), None, TensorFloat::F16).unwrap();
        assert_eq!(&decode_ivf(&ivf).unwrap().centroids.unwrap().values[..], &v[..]);
        assert!(TensorFloat::parse("int8").is_err());
        assert_eq!(TensorFloat::parse("halffloat").unwrap(), TensorFloat::F16);
    }

    #[test]
    fn uint8_tensors_hold_bytes() {
        let v = [0.0f32, 1.0, 127.0, 255.0];
        let bytes = encode_tensor(&v, &[2, 2], TensorFloat::U8).unwrap();
        let m = indexpb::Tensor::decode(&bytes[..]).unwrap();
        assert_eq!((m.data_type, m.data.unwrap().to_vec()), (tensor::DataType::Uint8 as i32, vec![0, 1, 127, 255]));
        assert_eq!(&decode_tensor_f32(&bytes).unwrap().values[..], &v[..]);
        assert!(encode_tensor(&[256.0], &[1], TensorFloat::U8).is_err());
        assert!(encode_tensor(&[1.5], &[1], TensorFloat::U8).is_err());
        assert!(encode_tensor(&[-1.0], &[1], TensorFloat::U8).is_err());
        assert!(matches!(
            decode_tensor_f32(&tensor_bytes(tensor::DataType::Uint8 as i32, vec![3], vec![0; 2])),
            Err(Error::Corrupt(_))
        ));
    }

    #[test]
    fn unaligned_data_is_copied() {
        let v = [1.0f32, 2.0, 3.0];
        let mut raw = vec![0u8];
        raw.extend(v.iter().flat_map(|x| x.to_le_bytes()));
        let data = Bytes::from(raw).slice(1..);
        assert_eq!(&f32_values(data)[..], &v[..]);
    }

    #[test]
    fn truncated_and_garbage_messages_are_errors_not_panics() {
        let full = hex(IVF_FULL);
        for n in 0..full.len() {
            match decode_ivf(&full[..n]) {
                Ok(_) | Err(Error::Corrupt(_)) | Err(Error::NotSupported(_)) => {}
                Err(e) => panic!("prefix {n}: {e}"),
            }
        }
        // A truncation inside the centroids' data is always caught.
        assert!(matches!(decode_ivf(&full[..full.len() - 12]), Err(Error::Corrupt(_))));
        let tensor = hex(TENSOR);
        for n in 1..tensor.len() {
            assert!(decode_tensor_f32(&tensor[..n]).is_err(), "prefix {n}");
        }
        // A length that claims more bytes than remain; an over-long varint; a bad wire type.
        assert!(matches!(decode_ivf(&[0x22, 0xff, 0xff, 0xff, 0x7f, 1]), Err(Error::Corrupt(_))));
        assert!(matches!(decode_ivf(&[0x10; 1].iter().chain(&[0xff; 11]).copied().collect::<Vec<_>>()), Err(Error::Corrupt(_))));
        assert!(matches!(decode_ivf(&[0x17]), Err(Error::Corrupt(_))));
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for len in 0..400 {
            let garbage = crate::test_bytes::garbage(&mut state, len);
            let _ = decode_ivf(&garbage);
            let _ = decode_tensor_f32(&garbage);
        }
    }

    #[test]
    fn vector_index_details_bytes() {
        let hints = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
        let ivf = hints(&[("lance.ivf.sample_rate", "256"), ("lance.ivf.max_iters", "50")]);
        assert_eq!(
            encode_vector_index_details(Metric::L2, Compression::Flat, &ivf),
            hex("42004a1c0a156c616e63652e6976662e73616d706c655f7261746512033235364a190a136c616e63652e6976662e6d61785f697465727312023530")
        );
        assert_eq!(encode_vector_index_details(Metric::Cosine, Compression::Flat, &[]), hex("08014200"));
        // target_partition_size 400 (field 2) between the metric and the compression, as pylance writes it
        assert_eq!(encode_vector_index_details_sized(Metric::Cosine, Compression::Flat, &[], 400), hex("08011090034200"));
        assert_eq!(encode_vector_index_details(IndexMetric::Hamming, Compression::Flat, &[]), hex("08034200"));
        assert_eq!(IndexMetric::parse("Hamming").unwrap(), IndexMetric::Hamming);
        assert_eq!(IndexMetric::parse("l2").unwrap(), IndexMetric::Float(Metric::L2));
        assert_eq!(
            encode_vector_index_details(Metric::Dot, Compression::Pq { num_bits: 8, num_sub_vectors: 16 }, &[]),
            hex("0802220408081010")
        );
        let back =
            indexpb::VectorIndexDetails::decode(&encode_vector_index_details(Metric::L2, Compression::Flat, &ivf)[..]).unwrap();
        assert_eq!(back.runtime_hints.len(), 2);
        assert_eq!(back.runtime_hints[1].key, "lance.ivf.max_iters");
    }
}
