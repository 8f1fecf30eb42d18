//! The `Index` message of pylance's legacy vector index layout (`protos/index.proto`,
//! package `lance.index.pb`): the model stored at the tail of a raw `index.idx` (name,
//! columns, dataset version and a `VectorIndex` of stages: IVF, PQ, optionally a transform).
//!
//! Decoding returns every stage as it is, its tensors checked as in
//! [`crate::table::index_proto`]; which stage sequences lancepy can search is the caller's
//! policy. Damaged bytes give [`Error::Corrupt`], never a panic. Encoding writes the message
//! pylance 14 writes for an IVF_PQ index: fields in field-number order, zero scalars left
//! out, the IVF stage then the PQ stage.

use prost::Message;

use crate::error::{Error, Result};
use crate::format::indexpb::{self, index, vector_index_stage, VectorMetricType};
use crate::table::index_proto::{
    ivf_message, ivf_proto, tensor_f32, tensor_message, IndexMetric, IvfMessage, TensorF32, TensorFloat,
};
use crate::table::knn::Metric;

/// A decoded `Index` message.
#[derive(Debug, Clone, PartialEq)]
pub struct LegacyIndex {
    /// The index's name.
    pub name: String,
    /// The indexed columns (one for a vector index).
    pub columns: Vec<String>,
    /// The dataset version the index was built at.
    pub dataset_version: u64,
    /// `IndexType` (0: vector), as stored.
    pub index_type: i32,
    /// The vector index, if the message has one.
    pub vector: Option<LegacyVectorIndex>,
}

/// A decoded `VectorIndex` message.
#[derive(Debug, Clone, PartialEq)]
pub struct LegacyVectorIndex {
    /// The layout's version (1).
    pub spec_version: u32,
    /// The vectors' dimension.
    pub dimension: u32,
    /// The stages in order.
    pub stages: Vec<LegacyStage>,
    /// `VectorMetricType`, as stored (an unknown value is kept for the caller to name).
    pub metric_type: i32,
}

/// One stage of a legacy vector index.
#[derive(Debug, Clone, PartialEq)]
pub enum LegacyStage {
    /// Vectors as they are.
    Flat,
    /// The IVF partitioning (offsets are byte offsets of each partition in the file).
    Ivf(IvfMessage),
    /// Product quantization.
    Pq(PqStage),
    /// A transform (OPQ) matrix stored at `position` in the file.
    Transform {
        /// Byte position of the matrix.
        position: u64,
        /// The matrix's shape.
        shape: Vec<u64>,
        /// `TransformType` (0: OPQ), as stored.
        kind: i32,
    },
    /// A DiskANN graph.
    DiskAnn,
    /// A stage message with none of the known stages set.
    Unknown,
}

/// A decoded `PQ` stage.
#[derive(Debug, Clone, PartialEq)]
pub struct PqStage {
    /// Bits per code.
    pub num_bits: u32,
    /// Sub-vectors per vector.
    pub num_sub_vectors: u32,
    /// The vectors' dimension.
    pub dimension: u32,
    /// The codebook (`codebook_tensor`), if the stage has one (old writers kept a flat list).
    pub codebook: Option<TensorF32>,
}

/// The lower-case name of a stored `VectorMetricType` ("l2", "cosine", "dot", "hamming"), or
/// `None` for a value lancepy does not know.
pub fn metric_name(metric_type: i32) -> Option<&'static str> {
    Some(match VectorMetricType::try_from(metric_type).ok()? {
        VectorMetricType::L2 => "l2",
        VectorMetricType::Cosine => "cosine",
        VectorMetricType::Dot => "dot",
        VectorMetricType::Hamming => "hamming",
    })
}

fn metric_type(metric: IndexMetric) -> VectorMetricType {
    match metric {
        IndexMetric::Float(Metric::L2) => VectorMetricType::L2,
        IndexMetric::Float(Metric::Cosine) => VectorMetricType::Cosine,
        IndexMetric::Float(Metric::Dot) => VectorMetricType::Dot,
        IndexMetric::Hamming => VectorMetricType::Hamming,
    }
}

fn stage(s: indexpb::VectorIndexStage) -> Result<LegacyStage> {
    Ok(match s.stage {
        None => LegacyStage::Unknown,
        Some(vector_index_stage::Stage::Flat(_)) => LegacyStage::Flat,
        Some(vector_index_stage::Stage::Ivf(ivf)) => LegacyStage::Ivf(ivf_message(ivf)?),
        Some(vector_index_stage::Stage::Pq(pq)) => LegacyStage::Pq(PqStage {
            num_bits: pq.num_bits,
            num_sub_vectors: pq.num_sub_vectors,
            dimension: pq.dimension,
            codebook: pq.codebook_tensor.map(tensor_f32).transpose()?,
        }),
        Some(vector_index_stage::Stage::Transform(t)) => {
            LegacyStage::Transform { position: t.position, shape: t.shape, kind: t.r#type }
        }
        Some(vector_index_stage::Stage::Diskann(_)) => LegacyStage::DiskAnn,
    })
}

/// Decodes an `Index` message.
pub fn decode_legacy_index(buf: &[u8]) -> Result<LegacyIndex> {
    let m = indexpb::Index::decode(buf)?;
    let vector = match m.implementation {
        Some(index::Implementation::VectorIndex(v)) => Some(LegacyVectorIndex {
            spec_version: v.spec_version,
            dimension: v.dimension,
            stages: v.stages.into_iter().map(stage).collect::<Result<_>>()?,
            metric_type: v.metric_type,
        }),
        None => None,
    };
    Ok(LegacyIndex { name: m.name, columns: m.columns, dataset_version: m.dataset_version, index_type: m.index_type, vector })
}

/// The IVF stage of a legacy IVF_PQ index to encode.
pub struct IvfStageInput<'a> {
    /// Byte offset of each partition in the file.
    pub offsets: &'a [u64],
    /// Rows in each partition.
    pub lengths: &'a [u64],
    /// Centroids, row-major, of `[partitions, dimension]`.
    pub centroids: &'a [f32],
    /// The k-means loss, if known.
    pub loss: Option<f64>,
}

/// The PQ stage of a legacy IVF_PQ index to encode.
pub struct PqStageInput<'a> {
    /// Bits per code.
    pub num_bits: u32,
    /// Sub-vectors per vector.
    pub num_sub_vectors: u32,
    /// The codebook, written with shape `[2^num_bits, dimension]` (as pylance writes it).
    pub codebook: &'a [f32],
}

/// Encodes the `Index` message of a legacy IVF_PQ index over `column`, its tensors written
/// as `float` values.
#[allow(clippy::too_many_arguments)]
pub fn encode_legacy_index(
    name: &str,
    column: &str,
    dataset_version: u64,
    metric: IndexMetric,
    dimension: u32,
    ivf: IvfStageInput<'_>,
    pq: PqStageInput<'_>,
    float: TensorFloat,
) -> Result<Vec<u8>> {
    if !(1..=16).contains(&pq.num_bits) {
        return Err(Error::invalid_input(format!("PQ codes of {} bits", pq.num_bits)));
    }
    if ivf.offsets.len() != ivf.lengths.len() {
        return Err(Error::invalid_input(format!(
            "{} partition offsets for {} partition lengths",
            ivf.offsets.len(),
            ivf.lengths.len()
        )));
    }
    let dim = u64::from(dimension);
    let centroids = (ivf.centroids, &[ivf.lengths.len() as u64, dim][..]);
    let ivf = ivf_proto(ivf.offsets, ivf.lengths, Some(centroids), ivf.loss, float)?;
    let codebook_tensor = tensor_message(pq.codebook, &[1u64 << pq.num_bits, dim], float)?;
    let pq = indexpb::Pq {
        num_bits: pq.num_bits,
        num_sub_vectors: pq.num_sub_vectors,
        dimension,
        codebook: vec![],
        codebook_tensor: Some(codebook_tensor),
    };
    let stages = vec![
        indexpb::VectorIndexStage { stage: Some(vector_index_stage::Stage::Ivf(ivf)) },
        indexpb::VectorIndexStage { stage: Some(vector_index_stage::Stage::Pq(pq)) },
    ];
    let vector = indexpb::VectorIndex { spec_version: 1, dimension, stages, metric_type: metric_type(metric) as i32 };
    let m = indexpb::Index {
        name: name.to_string(),
        columns: vec![column.to_string()],
        dataset_version,
        index_type: indexpb::IndexType::Vector as i32,
        implementation: Some(index::Implementation::VectorIndex(vector)),
    };
    Ok(m.encode_to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let centroids: Vec<f32> = (0..8).map(|i| i as f32 * 0.5).collect();
        let codebook: Vec<f32> = (0..4 * 4).map(|i| i as f32).collect();
        encode_legacy_index(
            "vec_idx",
            "vec",
            3,
            IndexMetric::Float(Metric::Cosine),
            4,
            IvfStageInput { offsets: &[0, 30], lengths: &[3, 0], centroids: &centroids, loss: Some(1.5) },
            PqStageInput { num_bits: 2, num_sub_vectors: 2, codebook: &codebook },
            TensorFloat::F32,
        )
        .unwrap()
    }

    #[test]
    fn round_trip() {
        let m = decode_legacy_index(&sample()).unwrap();
        assert_eq!((m.name.as_str(), m.columns.as_slice(), m.dataset_version), ("vec_idx", &["vec".to_string()][..], 3));
        let v = m.vector.unwrap();
        assert_eq!((v.spec_version, v.dimension, metric_name(v.metric_type)), (1, 4, Some("cosine")));
        let [LegacyStage::Ivf(ivf), LegacyStage::Pq(pq)] = v.stages.as_slice() else { panic!("stages {:?}", v.stages) };
        assert_eq!((ivf.offsets.as_slice(), ivf.lengths.as_slice(), ivf.loss), (&[0, 30][..], &[3, 0][..], Some(1.5)));
        assert_eq!(ivf.centroids.as_ref().unwrap().shape, [2, 4]);
        assert_eq!((pq.num_bits, pq.num_sub_vectors, pq.dimension), (2, 2, 4));
        let cb = pq.codebook.as_ref().unwrap();
        assert_eq!((cb.shape.as_slice(), cb.values[15]), (&[4, 4][..], 15.0));
    }

    #[test]
    fn bad_input_to_encode_is_an_error() {
        let bad = |n_bits: u32, offsets: &[u64], centroids: &[f32]| {
            encode_legacy_index(
                "i",
                "v",
                0,
                IndexMetric::Float(Metric::L2),
                2,
                IvfStageInput { offsets, lengths: &[1], centroids, loss: None },
                PqStageInput { num_bits: n_bits, num_sub_vectors: 1, codebook: &[0.0; 8] },
                TensorFloat::F32,
            )
        };
        assert!(bad(2, &[0], &[0.0, 0.0]).is_ok());
        assert!(matches!(bad(0, &[0], &[0.0, 0.0]), Err(Error::InvalidInput(_))));
        assert!(matches!(bad(2, &[0, 1], &[0.0, 0.0]), Err(Error::InvalidInput(_))));
        assert!(matches!(bad(2, &[0], &[0.0]), Err(Error::InvalidInput(_))));
        assert!(matches!(bad(3, &[0], &[0.0, 0.0]), Err(Error::InvalidInput(_))));
    }

    #[test]
    fn unknown_values_and_stages_are_kept() {
        let v = indexpb::VectorIndex {
            spec_version: 1,
            dimension: 8,
            stages: vec![
                indexpb::VectorIndexStage {
                    stage: Some(vector_index_stage::Stage::Transform(indexpb::Transform {
                        position: 7,
                        shape: vec![8, 8],
                        r#type: 0,
                    })),
                },
                indexpb::VectorIndexStage { stage: None },
                indexpb::VectorIndexStage { stage: Some(vector_index_stage::Stage::Diskann(Default::default())) },
            ],
            metric_type: 9,
        };
        let m = indexpb::Index { implementation: Some(index::Implementation::VectorIndex(v)), ..Default::default() };
        let d = decode_legacy_index(&m.encode_to_vec()).unwrap().vector.unwrap();
        assert_eq!(metric_name(d.metric_type), None);
        assert_eq!(
            d.stages,
            [LegacyStage::Transform { position: 7, shape: vec![8, 8], kind: 0 }, LegacyStage::Unknown, LegacyStage::DiskAnn]
        );
        assert_eq!(decode_legacy_index(&[]).unwrap().vector, None);
    }

    #[test]
    fn truncated_and_garbage_messages_are_errors_not_panics() {
        let full = sample();
        for n in 0..full.len() {
            let _ = decode_legacy_index(&full[..n]);
        }
        // cut inside the codebook's data: the length prefix claims more than remains
        assert!(matches!(decode_legacy_index(&full[..full.len() - 3]), Err(Error::Corrupt(_))));
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..400 {
            let garbage = crate::test_bytes::garbage(&mut state, len);
            let _ = decode_legacy_index(&garbage);
        }
    }
}
