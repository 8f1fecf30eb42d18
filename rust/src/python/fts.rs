//! Full-text search bindings: the text analyzer, the token set (FST) and posting-list codecs
//! of pylance 14's INVERTED index (see [`crate::table::fts`]).

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;

use super::errors::{run, IntoPyResult};
use crate::table::fts;

fn u32_bytes(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn u32s(bytes: &[u8], what: &str) -> PyResult<Vec<u32>> {
    if bytes.len() % 4 != 0 {
        return Err(crate::error::Error::InvalidInput(format!("{what} must be a whole number of u32"))).py();
    }
    Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect())
}

/// Analyzes `texts` (``None`` = no tokens). Returns `(vocabulary in first-seen order, token
/// ids as u32 bytes, per-document offsets into them as u64 bytes (len(texts) + 1), token
/// positions as u32 bytes)`.
#[pyfunction]
#[pyo3(signature = (texts, base_tokenizer, max_token_length, lower_case, language, stop_words, ascii_folding))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn fts_analyze<'py>(
    py: Python<'py>,
    texts: Vec<Option<String>>,
    base_tokenizer: &str,
    max_token_length: Option<usize>,
    lower_case: bool,
    language: Option<String>,
    stop_words: Option<Vec<String>>,
    ascii_folding: bool,
) -> PyResult<(Vec<String>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let base = fts::BaseTokenizer::parse(base_tokenizer).py()?;
    let stemmer = language.as_deref().map(fts::stemmer_of).transpose().py()?;
    let analyzer = fts::Analyzer {
        base,
        max_token_length,
        lower_case,
        stemmer,
        stop_words: stop_words.map(|w| w.into_iter().collect()),
        ascii_folding,
    };
    let (vocab, ids, offsets, positions) = run(py, || {
        let docs: Vec<fts::Analyzed> = texts
            .par_iter()
            .map(|t| match t {
                Some(t) => analyzer.analyze(t),
                None => fts::Analyzed { tokens: Vec::new(), positions: Vec::new() },
            })
            .collect();
        let mut index: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
        let mut vocab: Vec<String> = Vec::new();
        let total: usize = docs.iter().map(|d| d.tokens.len()).sum();
        let mut ids: Vec<u32> = Vec::with_capacity(total);
        let mut positions: Vec<u32> = Vec::with_capacity(total);
        let mut offsets: Vec<u8> = Vec::with_capacity((docs.len() + 1) * 8);
        offsets.extend_from_slice(&0u64.to_le_bytes());
        for d in docs {
            for t in d.tokens {
                let next = vocab.len() as u32;
                let id = *index.entry(t).or_insert_with_key(|k| {
                    vocab.push(k.clone());
                    next
                });
                ids.push(id);
            }
            positions.extend_from_slice(&d.positions);
            offsets.extend_from_slice(&(ids.len() as u64).to_le_bytes());
        }
        Ok((vocab, u32_bytes(&ids), offsets, u32_bytes(&positions)))
    })?;
    Ok((vocab, PyBytes::new(py, &ids), PyBytes::new(py, &offsets), PyBytes::new(py, &positions)))
}

/// The `(tokens, token ids)` of an FST token set, in token order. Malformed bytes raise
/// `CorruptFileError`.
#[pyfunction]
pub fn fts_fst_entries(py: Python<'_>, data: Vec<u8>) -> PyResult<(Vec<String>, Vec<u64>)> {
    run(py, || {
        let entries = fts::fst_entries(data)?;
        let mut keys = Vec::with_capacity(entries.len());
        let mut values = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            keys.push(
                String::from_utf8(k).map_err(|_| crate::error::Error::Corrupt("INVERTED index token is not UTF-8".into()))?,
            );
            values.push(v);
        }
        Ok((keys, values))
    })
}

/// An FST token set mapping `tokens` (distinct) to `ids`.
#[pyfunction]
pub fn fts_fst_build<'py>(py: Python<'py>, tokens: Vec<String>, ids: Vec<u64>) -> PyResult<Bound<'py, PyBytes>> {
    if tokens.len() != ids.len() {
        return Err(crate::error::Error::InvalidInput("tokens and ids differ in length".into())).py();
    }
    let bytes = run(py, || {
        let mut entries: Vec<(Vec<u8>, u64)> = tokens.into_iter().map(String::into_bytes).zip(ids).collect();
        entries.sort_unstable();
        if entries.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(crate::error::Error::InvalidInput("token set: tokens must be distinct".into()));
        }
        fts::fst_build(&entries)
    })?;
    Ok(PyBytes::new(py, &bytes))
}

/// The `(doc ids, frequencies)` (u32 bytes) of one posting list of `length` documents.
#[pyfunction]
pub fn fts_posting_decode<'py>(
    py: Python<'py>,
    blocks: Vec<Vec<u8>>,
    length: usize,
    block_size: usize,
    varint_tail: bool,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let (docs, freqs) = run(py, || {
        let refs: Vec<&[u8]> = blocks.iter().map(|b| b.as_slice()).collect();
        let (d, f) = fts::posting_decode(&refs, length, block_size, varint_tail)?;
        Ok((u32_bytes(&d), u32_bytes(&f)))
    })?;
    Ok((PyBytes::new(py, &docs), PyBytes::new(py, &freqs)))
}

/// The blocks of one posting list: `docs` and `freqs` u32 bytes, one max score per block.
#[pyfunction]
pub fn fts_posting_encode<'py>(
    py: Python<'py>,
    docs: &[u8],
    freqs: &[u8],
    block_scores: Vec<f32>,
    block_size: usize,
    varint_tail: bool,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let docs = u32s(docs, "docs")?;
    let freqs = u32s(freqs, "freqs")?;
    let blocks = run(py, || fts::posting_encode(&docs, &freqs, &block_scores, block_size, varint_tail))?;
    Ok(blocks.iter().map(|b| PyBytes::new(py, b)).collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fts_analyze, m)?)?;
    m.add_function(wrap_pyfunction!(fts_fst_entries, m)?)?;
    m.add_function(wrap_pyfunction!(fts_fst_build, m)?)?;
    m.add_function(wrap_pyfunction!(fts_posting_decode, m)?)?;
    m.add_function(wrap_pyfunction!(fts_posting_encode, m)?)?;
    Ok(())
}
