//! BM25 scoring of full-text search posting lists, as pylance 14 scores them.

use crate::error::{Error, Result};
use crate::table::fts_pos::le_u32;

/// One query token's posting list in a partition, with its weight.
pub struct ScoredList<'a> {
    /// doc ids (ascending, distinct), little-endian u32
    pub docs: &'a [u8],
    /// their frequencies, little-endian u32
    pub freqs: &'a [u8],
    /// the token's idf
    pub idf: f32,
    /// how often the query holds the token
    pub times: u32,
}

/// A candidate of the top k: better is a higher score, then a lower row id (a greater `Hit`
/// is a worse one, so a max-heap pops the worst first).
#[derive(PartialEq)]
pub(crate) struct Hit(pub(crate) f32, pub(crate) u64, pub(crate) u32);

impl Eq for Hit {}

impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Hit {
    // (a max-heap of these pops the worst hit first)
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.0.total_cmp(&self.0).then(self.1.cmp(&other.1))
    }
}

/// BM25's `k1`.
pub const K1: f32 = 1.2;
/// BM25's `b`.
pub const B: f32 = 0.75;

/// BM25's idf of a token held by `token_docs` of `num_docs` documents, in pylance 14's
/// float32 order of operations (and its `ln`: numpy's vectorized float32 log rounds some
/// values the other way, which changes the bytes of an index).
#[inline]
pub fn idf(token_docs: u64, num_docs: u64) -> f32 {
    let (n, nd) = (token_docs as f32, num_docs as f32);
    ((nd - n + 0.5) / (n + 0.5) + 1.0).ln()
}

/// One token's BM25 weight in one document (pylance's float32 order of operations): `f` its
/// frequency there, `dl` the document's token count.
#[inline]
pub fn bm25_weight(idf: f32, f: f32, dl: f32, avgdl: f32) -> f32 {
    bm25_weight_normed(idf, f, bm25_norm(dl, avgdl))
}

/// The document-length part of [`bm25_weight`] (the same for every token of a document).
#[inline]
pub fn bm25_norm(dl: f32, avgdl: f32) -> f32 {
    K1 * (1.0 - B + B * dl / avgdl)
}

/// [`bm25_weight`] from the document's [`bm25_norm`].
#[inline]
pub fn bm25_weight_normed(idf: f32, f: f32, norm: f32) -> f32 {
    (idf * (K1 + 1.0) * f) / (f + norm)
}

/// BM25 (pylance's float32 arithmetic) of the documents of one partition holding the query's
/// tokens: those holding at least `need` distinct tokens and allowed by `allowed` (a mask
/// over doc ids, when given). `num_tokens` (u32) and `row_ids` (u64) are little-endian
/// bytes, one per document. With `k`, only the `k` best (score descending, then row id
/// ascending). Returns `(doc ids, scores)` in no particular order.
#[allow(clippy::too_many_arguments)]
pub fn score_docs(
    lists: &[ScoredList<'_>],
    num_tokens: &[u8],
    row_ids: &[u8],
    avgdl: f32,
    need: usize,
    allowed: Option<&[u8]>,
    k: Option<usize>,
) -> Result<(Vec<u32>, Vec<f32>)> {
    let n = num_tokens.len() / 4;
    if num_tokens.len() % 4 != 0 || row_ids.len() != 8 * n || allowed.is_some_and(|a| a.len() != n) {
        return Err(Error::InvalidInput("score_docs: documents, row ids and mask disagree".into()));
    }
    let mut acc = vec![0f32; n];
    let mut hits = vec![0u16; n];
    for l in lists {
        let len = l.docs.len() / 4;
        if l.docs.len() % 4 != 0 || l.freqs.len() != l.docs.len() {
            return Err(Error::InvalidInput("score_docs: doc ids and frequencies disagree".into()));
        }
        for i in 0..len {
            let d = le_u32(l.docs, i) as usize;
            if d >= n {
                return Err(Error::Corrupt("INVERTED index posting list names a document it does not hold".into()));
            }
            let w = bm25_weight(l.idf, le_u32(l.freqs, i) as f32, le_u32(num_tokens, d) as f32, avgdl);
            for _ in 0..l.times {
                acc[d] += w;
            }
            hits[d] = hits[d].saturating_add(1);
        }
    }
    let need = need.max(1);
    let row = |d: usize| u64::from_le_bytes(row_ids[8 * d..8 * d + 8].try_into().expect("8 bytes"));
    let candidates = (0..n).filter(|&d| hits[d] as usize >= need && allowed.is_none_or(|a| a[d] != 0));
    let found: Vec<Hit> = match k {
        None => candidates.map(|d| Hit(acc[d], row(d), d as u32)).collect(),
        Some(0) => Vec::new(),
        Some(k) => {
            let mut heap: std::collections::BinaryHeap<Hit> = std::collections::BinaryHeap::with_capacity(k + 1);
            for d in candidates {
                let hit = Hit(acc[d], row(d), d as u32);
                if heap.len() < k {
                    heap.push(hit);
                } else if heap.peek().is_some_and(|worst| hit < *worst) {
                    heap.pop();
                    heap.push(hit);
                }
            }
            heap.into_vec()
        }
    };
    Ok((found.iter().map(|h| h.2).collect(), found.iter().map(|h| h.0).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_docs_top_k() {
        let docs: Vec<u8> = [0u32, 1, 2].iter().flat_map(|d| d.to_le_bytes()).collect();
        let freqs: Vec<u8> = [1u32, 3, 3].iter().flat_map(|d| d.to_le_bytes()).collect();
        let lens: Vec<u8> = [4u32, 4, 4].iter().flat_map(|d| d.to_le_bytes()).collect();
        let rows: Vec<u8> = [10u64, 12, 11].iter().flat_map(|d| d.to_le_bytes()).collect();
        let lists = [ScoredList { docs: &docs, freqs: &freqs, idf: 1.0, times: 1 }];
        let (d, s) = score_docs(&lists, &lens, &rows, 4.0, 1, None, Some(1)).unwrap();
        assert_eq!(d, vec![2]); // (docs 1 and 2 tie: the lower row id wins)
        assert!(s[0] > 1.0);
        let (d, _) = score_docs(&lists, &lens, &rows, 4.0, 1, Some(&[1, 1, 0]), None).unwrap();
        assert_eq!(d, vec![0, 1]);
        let bad: Vec<u8> = 7u32.to_le_bytes().to_vec();
        let one: Vec<u8> = 1u32.to_le_bytes().to_vec();
        let lists = [ScoredList { docs: &bad, freqs: &one, idf: 1.0, times: 1 }];
        assert!(score_docs(&lists, &lens, &rows, 4.0, 1, None, None).is_err());
    }
}
