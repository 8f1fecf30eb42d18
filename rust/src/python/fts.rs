//! Full-text search bindings: the text analyzer, the token set (FST) and posting-list codecs
//! of pylance 14's INVERTED index (see [`crate::table::fts`]).

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyBytes;

use super::errors::{run, IntoPyResult};
use crate::table::fts;
use crate::table::fts_topk;
use crate::table::{fts_codec, fts_score};

fn u32_bytes(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A phrase's per-token lists handed over from Python as `(doc ids, position starts,
/// positions, place in the query)`, viewed in place.
type PhraseArgs<'py> = (Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, i32);

fn phrase_views<'a>(lists: &'a [PhraseArgs<'_>]) -> Vec<crate::table::fts_pos::PhraseList<'a>> {
    lists
        .iter()
        .map(|(d, f, p, q)| crate::table::fts_pos::PhraseList {
            docs: d.as_bytes(),
            starts: f.as_bytes(),
            positions: p.as_bytes(),
            query_pos: *q,
        })
        .collect()
}

fn u32s(bytes: &[u8], what: &str) -> PyResult<Vec<u32>> {
    if bytes.len() % 4 != 0 {
        return Err(crate::error::Error::InvalidInput(format!("{what} must be a whole number of u32"))).py();
    }
    Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect())
}

/// The texts [`fts_analyze`] is given.
enum Texts {
    Owned(Vec<Option<String>>),
    Arrow(arrow_array::ArrayRef),
}

impl Texts {
    /// A list of str (copied), or an Arrow string array (read in place); an Arrow list of
    /// strings is one document per list, its items joined as pylance joins them (see
    /// [`join_items`]).
    fn of(texts: &Bound<'_, PyAny>) -> PyResult<Self> {
        if texts.is_instance_of::<pyo3::types::PyList>() {
            return Ok(Texts::Owned(texts.extract()?));
        }
        let array = super::ffi::import_array(texts)?;
        use arrow_array::cast::AsArray;
        use arrow_schema::DataType;
        Ok(match array.data_type() {
            DataType::List(_) => Texts::Owned(join_items(array.as_list::<i32>()).py()?),
            DataType::LargeList(_) => Texts::Owned(join_items(array.as_list::<i64>()).py()?),
            _ => Texts::Arrow(array),
        })
    }

    /// The texts, borrowed (null: `None`); an Arrow array of another type than strings is
    /// an error.
    fn refs(&self) -> crate::error::Result<Vec<Option<&str>>> {
        use arrow_array::cast::AsArray;
        use arrow_schema::DataType;
        Ok(match self {
            Texts::Owned(texts) => texts.iter().map(|t| t.as_deref()).collect(),
            Texts::Arrow(a) => match a.data_type() {
                DataType::Utf8 => a.as_string::<i32>().iter().collect(),
                DataType::LargeUtf8 => a.as_string::<i64>().iter().collect(),
                DataType::Utf8View => a.as_string_view().iter().collect(),
                other => return Err(crate::error::Error::InvalidInput(format!("texts must be strings, got {other}"))),
            },
        })
    }
}

/// One document per list of strings, as pylance 14 makes an INVERTED index's document of a
/// `list<string>` row: its non-null items, each after a space unless the text so far is
/// empty; a null list is no document (`None`).
fn join_items<O: arrow_array::OffsetSizeTrait>(
    lists: &arrow_array::GenericListArray<O>,
) -> crate::error::Result<Vec<Option<String>>> {
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    use arrow_schema::DataType;
    let items: Vec<Option<&str>> = match lists.values().data_type() {
        DataType::Utf8 => lists.values().as_string::<i32>().iter().collect(),
        DataType::LargeUtf8 => lists.values().as_string::<i64>().iter().collect(),
        other => {
            return Err(crate::error::Error::InvalidInput(format!(
                "INVERTED index documents: list items must be strings, got {other}"
            )))
        }
    };
    let offsets = lists.value_offsets();
    Ok((0..lists.len())
        .map(|i| {
            if lists.is_null(i) {
                return None;
            }
            let mut doc = String::new();
            for item in items[offsets[i].as_usize()..offsets[i + 1].as_usize()].iter().flatten() {
                if !doc.is_empty() {
                    doc.push(' ');
                }
                doc.push_str(item);
            }
            Some(doc)
        })
        .collect())
}

#[allow(clippy::too_many_arguments)]
fn analyzer_of(
    base_tokenizer: &str,
    max_token_length: Option<usize>,
    lower_case: bool,
    language: Option<String>,
    stop_words: Option<Vec<String>>,
    ascii_folding: bool,
    ngram: Option<(usize, usize, bool)>,
    code: Option<(bool, bool, bool, bool)>,
    model: Option<(String, Vec<String>)>,
    json: bool,
) -> PyResult<fts::Analyzer> {
    // (`model`, found by the caller: a jieba model's main dictionary and user dictionaries,
    // or a lindera model's configuration)
    let base = match model {
        Some((config, _)) if base_tokenizer.starts_with("lindera/") => {
            fts::BaseTokenizer::Lindera(fts::LinderaModel::load(std::path::Path::new(&config)).py()?)
        }
        Some((main, users)) => {
            let users: Vec<std::path::PathBuf> = users.into_iter().map(Into::into).collect();
            fts::BaseTokenizer::Jieba(fts::JiebaModel::load(std::path::Path::new(&main), &users).py()?)
        }
        None => fts::BaseTokenizer::parse(base_tokenizer, ngram, code).py()?,
    };
    let stemmer = language.as_deref().map(fts::stemmer_of).transpose().py()?;
    Ok(fts::Analyzer {
        base,
        max_token_length,
        lower_case,
        stemmer,
        stop_words: stop_words.map(|w| w.into_iter().collect()),
        ascii_folding,
        json,
    })
}

/// An analyzer built once (from an index's parameters, as [`fts_analyze`] takes them), for
/// query texts (`json`: the index's documents are JSON, its queries `<path>,<type>,<value>`
/// triplets).
#[pyclass(name = "FtsAnalyzer", module = "lancepy._lancepy", frozen)]
pub struct PyFtsAnalyzer {
    inner: fts::Analyzer,
}

#[pymethods]
impl PyFtsAnalyzer {
    #[new]
    #[pyo3(signature = (base_tokenizer, max_token_length, lower_case, language, stop_words, ascii_folding, ngram=None, code=None, model=None, json=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        base_tokenizer: &str,
        max_token_length: Option<usize>,
        lower_case: bool,
        language: Option<String>,
        stop_words: Option<Vec<String>>,
        ascii_folding: bool,
        ngram: Option<(usize, usize, bool)>,
        code: Option<(bool, bool, bool, bool)>,
        model: Option<(String, Vec<String>)>,
        json: bool,
    ) -> PyResult<Self> {
        Ok(Self {
            inner: analyzer_of(
                base_tokenizer,
                max_token_length,
                lower_case,
                language,
                stop_words,
                ascii_folding,
                ngram,
                code,
                model,
                json,
            )?,
        })
    }

    /// `(tokens, positions)` of one query text, in order (repeats kept). A JSON index's
    /// malformed triplets raise `InvalidArgumentError`.
    fn tokens(&self, text: &str) -> PyResult<(Vec<String>, Vec<u32>)> {
        let d = self.inner.analyze_query(text).py()?;
        Ok((d.tokens, d.positions))
    }
}

/// Builds a lindera dictionary (what a `lindera/<model>` configuration names) from the
/// MeCab-format sources and lindera `metadata.json` in `input`, into `output`.
#[pyfunction]
pub fn build_lindera_dictionary(py: Python<'_>, input: std::path::PathBuf, output: std::path::PathBuf) -> PyResult<()> {
    py.allow_threads(|| fts::build_lindera_dictionary(&input, &output)).py()
}

/// Analyzes the documents `texts` (``None`` = no tokens; `json`: JSON documents, flattened).
/// Returns `(vocabulary in first-seen order, token
/// ids as u32 bytes, per-document offsets into them as u64 bytes (len(texts) + 1), token
/// positions as u32 bytes (for a single text, or with `with_positions`; empty otherwise))`.
#[pyfunction]
#[pyo3(signature = (texts, base_tokenizer, max_token_length, lower_case, language, stop_words, ascii_folding, with_positions=false, ngram=None, code=None, model=None, json=false))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn fts_analyze<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    base_tokenizer: &str,
    max_token_length: Option<usize>,
    lower_case: bool,
    language: Option<String>,
    stop_words: Option<Vec<String>>,
    ascii_folding: bool,
    with_positions: bool,
    ngram: Option<(usize, usize, bool)>,
    code: Option<(bool, bool, bool, bool)>,
    model: Option<(String, Vec<String>)>,
    json: bool,
) -> PyResult<(Vec<String>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let analyzer =
        analyzer_of(base_tokenizer, max_token_length, lower_case, language, stop_words, ascii_folding, ngram, code, model, json)?;
    // (a list of str, or an Arrow string array read in place: a build's texts are not copied)
    let source = Texts::of(texts)?;
    let (vocab, ids, offsets, positions) = run(py, || {
        let texts = source.refs()?;
        if texts.len() == 1 && !with_positions {
            // (one text: positions too)
            let d = texts[0].map(|t| analyzer.analyze_doc(t)).transpose()?;
            let d = d.unwrap_or(fts::Analyzed { tokens: Vec::new(), positions: Vec::new() });
            let mut vocab: Vec<String> = Vec::new();
            let mut ids = Vec::with_capacity(d.tokens.len());
            for t in d.tokens {
                let id = vocab.iter().position(|v| *v == t).unwrap_or_else(|| {
                    vocab.push(t);
                    vocab.len() - 1
                });
                ids.push(id as u32);
            }
            let offsets: Vec<u8> = [0u64, ids.len() as u64].iter().flat_map(|v| v.to_le_bytes()).collect();
            return Ok((vocab, u32_bytes(&ids), offsets, u32_bytes(&d.positions)));
        }
        let (vocab, ids, offsets, positions) = analyzer.analyze_corpus(&texts, with_positions)?;
        let offsets: Vec<u8> = offsets.iter().flat_map(|v| v.to_le_bytes()).collect();
        Ok((vocab, u32_bytes(&ids), offsets, u32_bytes(&positions)))
    })?;
    Ok((vocab, PyBytes::new(py, &ids), PyBytes::new(py, &offsets), PyBytes::new(py, &positions)))
}

/// The `(tokens, token ids)` of an FST token set, in token order. Malformed bytes raise
/// `CorruptFileError`.
#[pyfunction]
pub fn fts_fst_entries(py: Python<'_>, data: &[u8]) -> PyResult<(Vec<String>, Vec<u64>)> {
    let data = data.to_vec();
    run(py, || {
        let entries = fts_codec::fst_entries(data)?;
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
        fts_codec::fst_build(&entries)
    })?;
    Ok(PyBytes::new(py, &bytes))
}

/// The `(doc ids, frequencies)` (u32 bytes) of one posting list of `length` documents.
#[pyfunction]
pub fn fts_posting_decode<'py>(
    py: Python<'py>,
    blocks: Vec<Bound<'py, PyBytes>>,
    length: usize,
    block_size: usize,
    varint_tail: bool,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let blocks: Vec<Vec<u8>> = blocks.iter().map(|b| b.as_bytes().to_vec()).collect();
    let (docs, freqs) = run(py, || {
        let refs: Vec<&[u8]> = blocks.iter().map(|b| b.as_slice()).collect();
        let (d, f) = fts_codec::posting_decode(&refs, length, block_size, varint_tail)?;
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
    let blocks = run(py, || fts_codec::posting_encode(&docs, &freqs, &block_scores, block_size, varint_tail))?;
    Ok(blocks.iter().map(|b| PyBytes::new(py, b)).collect())
}

/// Each token's BM25 idf (f32 bytes) from its number of documents (`doc_freqs`, u32 bytes)
/// among `num_docs`, as pylance computes it (see [`fts_score::idf`]).
#[pyfunction]
pub fn fts_idf<'py>(py: Python<'py>, doc_freqs: PyBackedBytes, num_docs: u64) -> PyResult<Bound<'py, PyBytes>> {
    let df = u32s(&doc_freqs, "doc_freqs")?;
    let out: Vec<f32> = df.iter().map(|&n| fts_score::idf(n as u64, num_docs)).collect();
    Ok(PyBytes::new(py, &f32_bytes(&out)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fts_idf, m)?)?;
    m.add_function(wrap_pyfunction!(fts_analyze, m)?)?;
    m.add_function(wrap_pyfunction!(build_lindera_dictionary, m)?)?;
    m.add_class::<PyFtsAnalyzer>()?;
    m.add_function(wrap_pyfunction!(fts_fst_entries, m)?)?;
    m.add_function(wrap_pyfunction!(fts_fst_build, m)?)?;
    m.add_function(wrap_pyfunction!(fts_posting_decode, m)?)?;
    m.add_function(wrap_pyfunction!(fts_posting_encode, m)?)?;
    m.add_function(wrap_pyfunction!(fts_score_docs, m)?)?;
    m.add_function(wrap_pyfunction!(fts_positions_decode, m)?)?;
    m.add_function(wrap_pyfunction!(fts_phrase_docs, m)?)?;
    m.add_function(wrap_pyfunction!(fts_block_bounds, m)?)?;
    m.add_function(wrap_pyfunction!(fts_doc_norms, m)?)?;
    m.add_function(wrap_pyfunction!(fts_top_k_partitions, m)?)?;
    m.add_function(wrap_pyfunction!(fts_phrase_top_k_partitions, m)?)?;
    m.add_class::<PyPostingsBuilder>()?;
    m.add_function(wrap_pyfunction!(fts_encode_partition, m)?)?;
    Ok(())
}

/// BM25 of one partition's documents for a query (see [`fts_score::score_docs`]): `lists` holds,
/// per distinct query token, `(doc ids u32 bytes, frequencies u32 bytes, idf, times)`;
/// `num_tokens` u32 bytes, `row_ids` u64 bytes, `allowed` a byte per document. Returns
/// `(doc ids u32 bytes, scores f32 bytes)`.
#[pyfunction]
#[pyo3(signature = (lists, num_tokens, row_ids, avgdl, need, allowed, k))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn fts_score_docs<'py>(
    py: Python<'py>,
    lists: Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, f32, u32)>,
    num_tokens: &[u8],
    row_ids: &[u8],
    avgdl: f32,
    need: usize,
    allowed: Option<&[u8]>,
    k: Option<usize>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let views: Vec<(&[u8], &[u8], f32, u32)> =
        lists.iter().map(|(d, f, idf, times)| (d.as_bytes(), f.as_bytes(), *idf, *times)).collect();
    let scored: Vec<fts_score::ScoredList<'_>> =
        views.iter().map(|&(docs, freqs, idf, times)| fts_score::ScoredList { docs, freqs, idf, times }).collect();
    let (docs, scores) = run(py, || fts_score::score_docs(&scored, num_tokens, row_ids, avgdl, need, allowed, k))?;
    let scores = f32_bytes(&scores);
    Ok((PyBytes::new(py, &u32_bytes(&docs)), PyBytes::new(py, &scores)))
}

/// The absolute positions (u32 bytes) of one token's documents, `freqs` (u32 bytes) per
/// document, from its positions `stream` and block `offsets`.
#[pyfunction]
pub fn fts_positions_decode<'py>(
    py: Python<'py>,
    stream: &[u8],
    offsets: Vec<u32>,
    freqs: &[u8],
    block_size: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let freqs = u32s(freqs, "freqs")?;
    let out = run(py, || crate::table::fts_pos::decode(stream, &offsets, &freqs, block_size))?;
    Ok(PyBytes::new(py, &u32_bytes(&out)))
}

/// The documents (u32 bytes, ascending) holding a phrase: `lists` holds, per query token,
/// `(doc ids, position starts (one more than the docs), positions)` (u32 bytes, read in
/// place) and its place in the query.
#[pyfunction]
pub fn fts_phrase_docs<'py>(py: Python<'py>, lists: Vec<PhraseArgs<'py>>, slop: u32) -> PyResult<Bound<'py, PyBytes>> {
    let views = phrase_views(&lists);
    let out = crate::table::fts_pos::phrase_docs(&views, slop).py()?;
    Ok(PyBytes::new(py, &u32_bytes(&out)))
}

/// The block bounds (f32 bytes) of one posting list, `docs` and `freqs` u32 bytes, over the
/// documents' token counts `num_tokens` (u32 bytes) (see [`fts_topk::block_bounds`]).
#[pyfunction]
pub fn fts_block_bounds<'py>(
    py: Python<'py>,
    docs: &[u8],
    freqs: &[u8],
    num_tokens: &[u8],
    avgdl: f32,
) -> PyResult<Bound<'py, PyBytes>> {
    let bounds = fts_topk::block_bounds(docs, freqs, num_tokens, avgdl).py()?;
    let out = f32_bytes(&bounds);
    Ok(PyBytes::new(py, &out))
}

/// Postings (over every partition and list) below which a search runs its partitions on the
/// calling thread: waking the pool costs more than it saves there.
const PARALLEL_POSTINGS: usize = 1 << 16;

/// Each document's BM25 length norm (f32 bytes) from its token count (`num_tokens`: u32
/// bytes) and the index's average document length (see [`fts_topk::doc_norms`]).
#[pyfunction]
pub fn fts_doc_norms<'py>(py: Python<'py>, num_tokens: &[u8], avgdl: f32) -> PyResult<Bound<'py, PyBytes>> {
    let norms = fts_topk::doc_norms(num_tokens, avgdl).py()?;
    Ok(PyBytes::new(py, &f32_bytes(&norms)))
}

/// One partition's search as [`fts_top_k_partitions`] takes it: `(lists, norms, row ids,
/// allowed)`.
type TopKPart =
    (Vec<(PyBackedBytes, PyBackedBytes, PyBackedBytes, f32, u32)>, PyBackedBytes, PyBackedBytes, Option<PyBackedBytes>);

/// The exact top `k` of several partitions with block-max pruning (see
/// [`fts_topk::top_k`]), in parallel with the GIL released: `parts` holds, per partition,
/// `(lists, norms, row_ids, allowed)`: per distinct query token `(doc ids, frequencies, block
/// bounds, idf, times)`, the documents' [`fts_doc_norms`], their row ids (u64 bytes) and a
/// byte per document (0: left out) or `None`. Returns each partition's `(doc ids u32 bytes,
/// scores f32 bytes)`, in order.
#[pyfunction]
#[pyo3(signature = (parts, need, k))]
#[allow(clippy::type_complexity)]
pub fn fts_top_k_partitions<'py>(
    py: Python<'py>,
    parts: Vec<TopKPart>,
    need: usize,
    k: usize,
) -> PyResult<Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
    // (`PyBackedBytes`: immutable bytes kept alive by `parts` until the end of the call, read
    // without the GIL)
    let search = |(lists, norms, row_ids, allowed): &TopKPart| {
        let views: Vec<fts_topk::BoundedList<'_>> = lists
            .iter()
            .map(|(d, f, b, idf, times)| fts_topk::BoundedList { docs: d, freqs: f, bounds: b, idf: *idf, times: *times })
            .collect();
        fts_topk::top_k(&views, norms, row_ids, need, allowed.as_deref(), k)
    };
    let work: usize = parts.iter().flat_map(|p| p.0.iter().map(|l| l.0.len() / 4)).sum();
    over_partitions(py, &parts, work, search)
}

/// Runs `search` on each of `parts` with the GIL released: in parallel on the CPU pool
/// ([`crate::parallel::map`]: rebuilt in a forked DataLoader worker, interruptible) when the
/// partitions hold [`PARALLEL_POSTINGS`] or more postings (`work`), else on the calling
/// thread. Returns each partition's `(doc ids u32 bytes, scores f32 bytes)`, in order.
fn over_partitions<'py, P: Sync>(
    py: Python<'py>,
    parts: &[P],
    work: usize,
    search: impl Fn(&P) -> crate::error::Result<(Vec<u32>, Vec<f32>)> + Sync + Send,
) -> PyResult<Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
    let found: Vec<(Vec<u32>, Vec<f32>)> =
        run(py, || crate::parallel::map(parts.iter().collect(), work >= PARALLEL_POSTINGS, &search).into_iter().collect())?;
    Ok(found.iter().map(|(docs, scores)| (PyBytes::new(py, &u32_bytes(docs)), PyBytes::new(py, &f32_bytes(scores)))).collect())
}

/// One partition's phrase search as [`fts_phrase_top_k_partitions`] takes it: `(lists,
/// terms, norms, row ids, allowed)`.
type PhrasePart = (
    Vec<(PyBackedBytes, PyBackedBytes, PyBackedBytes, i32)>,
    Vec<(usize, f32, u32, PyBackedBytes)>,
    PyBackedBytes,
    PyBackedBytes,
    Option<PyBackedBytes>,
);

/// The documents of several partitions holding a phrase, scored, best first up to `k` per
/// partition (see [`fts_topk::phrase_top_k`]), in parallel with the GIL released: `parts`
/// holds, per partition, `(lists, terms, norms, row_ids, allowed)`: `lists` as for
/// [`fts_phrase_docs`], `terms` per distinct token `(index of one of its lists, idf, times,
/// block bounds)`, the rest as for [`fts_top_k_partitions`]. Returns each partition's `(doc
/// ids u32 bytes, scores f32 bytes)`, in order.
#[pyfunction]
#[pyo3(signature = (parts, slop, k))]
pub fn fts_phrase_top_k_partitions<'py>(
    py: Python<'py>,
    parts: Vec<PhrasePart>,
    slop: u32,
    k: Option<usize>,
) -> PyResult<Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
    let search = |(lists, terms, norms, row_ids, allowed): &PhrasePart| {
        let views: Vec<crate::table::fts_pos::PhraseList<'_>> = lists
            .iter()
            .map(|(d, f, p, q)| crate::table::fts_pos::PhraseList { docs: d, starts: f, positions: p, query_pos: *q })
            .collect();
        let terms: Vec<fts_topk::PhraseTerm<'_>> = terms
            .iter()
            .map(|(list, idf, times, bounds)| fts_topk::PhraseTerm { list: *list, idf: *idf, times: *times, bounds })
            .collect();
        fts_topk::phrase_top_k(&views, slop, &terms, norms, row_ids, allowed.as_deref(), k)
    };
    let work: usize = parts.iter().flat_map(|p| p.0.iter().map(|l| l.0.len() / 4)).sum();
    over_partitions(py, &parts, work, search)
}

/// One partition of an INVERTED index built as its texts stream in (see
/// [`crate::table::fts_build`]): `add` each batch of texts, then `encode` the posting lists.
/// Its methods take a lock with the GIL released.
#[pyclass(name = "FtsPostingsBuilder", module = "lancepy._lancepy", frozen)]
pub struct PyPostingsBuilder {
    inner: std::sync::Mutex<crate::table::fts_build::PostingsBuilder>,
}

impl PyPostingsBuilder {
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut crate::table::fts_build::PostingsBuilder) -> crate::error::Result<T> + Send,
    ) -> PyResult<T> {
        run(py, || f(&mut self.inner.lock().unwrap_or_else(|p| p.into_inner())))
    }
}

#[pymethods]
impl PyPostingsBuilder {
    /// An empty builder analyzing with `analyzer`, keeping positions with `with_positions`.
    #[new]
    #[pyo3(signature = (analyzer, with_positions=false))]
    fn new(analyzer: &PyFtsAnalyzer, with_positions: bool) -> Self {
        let inner = crate::table::fts_build::PostingsBuilder::new(analyzer.inner.clone(), with_positions);
        Self { inner: std::sync::Mutex::new(inner) }
    }

    /// Adds documents: `texts` (an Arrow string array, read in place, or a list of str;
    /// null / ``None``: no tokens) and their row ids (u64 bytes).
    fn add(&self, py: Python<'_>, texts: &Bound<'_, PyAny>, row_ids: PyBackedBytes) -> PyResult<()> {
        let source = Texts::of(texts)?;
        if row_ids.len() % 8 != 0 {
            return Err(crate::error::Error::InvalidInput("row ids must be u64 bytes".into())).py();
        }
        let rows: Vec<u64> = row_ids.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        self.with(py, |b| b.add(&source.refs()?, &rows))
    }

    /// Bytes the builder holds.
    #[getter]
    fn memory_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |b| Ok(b.memory_bytes()))
    }

    /// Documents so far (texts with a token).
    #[getter]
    fn num_docs(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |b| Ok(b.num_docs()))
    }

    /// The vocabulary, in token id order (first seen first).
    fn vocab(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.with(py, |b| Ok(b.vocab().to_vec()))
    }

    /// Each token's number of documents, u32 bytes in token id order.
    fn doc_freqs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let df = self.with(py, |b| Ok(u32_bytes(&b.doc_freqs()?)))?;
        Ok(PyBytes::new(py, &df))
    }

    /// `(row ids u64 bytes, token counts u32 bytes)`, one per document.
    fn docs<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let (rows, lens) = self.with(py, |b| {
            let (rows, lens) = b.docs();
            Ok((rows.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>(), u32_bytes(lens)))
        })?;
        Ok((PyBytes::new(py, &rows), PyBytes::new(py, &lens)))
    }

    /// The partition's posting file columns (see [`crate::table::fts_build::encode`]) from
    /// each token's `idf` (f32 bytes, token id order), as Arrow (no copy on export). The
    /// lists are let go as they are encoded: once only, and nothing can be added after.
    fn encode(&self, py: Python<'_>, idf: PyBackedBytes, block_size: usize) -> PyResult<super::ffi::ArrowBatches> {
        let idf: Vec<f32> = u32s(&idf, "idf")?.into_iter().map(f32::from_bits).collect();
        let batch = self.with(py, |b| b.encode(&idf, block_size))?;
        Ok(super::ffi::ArrowBatches::new(batch.schema(), vec![batch]))
    }

    /// [`Self::encode`] as a stream of batches of `chunk` tokens, each encoded when it is
    /// read (so that a writer holds one batch's encoded lists at a time, not all of them).
    fn encode_chunks(
        &self,
        py: Python<'_>,
        idf: PyBackedBytes,
        block_size: usize,
        chunk: usize,
    ) -> PyResult<super::ffi::BatchStream> {
        let idf: Vec<f32> = u32s(&idf, "idf")?.into_iter().map(f32::from_bits).collect();
        let (chunks, with_positions) = self.with(py, |b| Ok((b.encode_chunks(idf, block_size, chunk)?, b.with_positions())))?;
        Ok(super::ffi::BatchStream::new(crate::table::fts_build::posting_schema(with_positions), chunks))
    }
}

/// [`crate::table::fts_build::encode_flat`]: the posting file columns of flat lists
/// (`starts` u64 bytes; `docs`, `freqs`, `positions`, `lens` u32 bytes; `idf` f32 bytes).
#[pyfunction]
#[pyo3(signature = (starts, docs, freqs, positions, lens, idf, block_size))]
#[allow(clippy::too_many_arguments)]
pub fn fts_encode_partition(
    py: Python<'_>,
    starts: PyBackedBytes,
    docs: PyBackedBytes,
    freqs: PyBackedBytes,
    positions: Option<PyBackedBytes>,
    lens: PyBackedBytes,
    idf: PyBackedBytes,
    block_size: usize,
) -> PyResult<super::ffi::ArrowBatches> {
    if starts.len() % 8 != 0 {
        return Err(crate::error::Error::InvalidInput("starts must be u64 bytes".into())).py();
    }
    let starts: Vec<u64> = starts.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
    let docs = u32s(&docs, "docs")?;
    let freqs = u32s(&freqs, "freqs")?;
    let positions = positions.map(|p| u32s(&p, "positions")).transpose()?;
    let lens = u32s(&lens, "lens")?;
    let idf: Vec<f32> = u32s(&idf, "idf")?.into_iter().map(f32::from_bits).collect();
    let batch =
        run(py, || crate::table::fts_build::encode_flat(&starts, &docs, &freqs, positions.as_deref(), &lens, &idf, block_size))?;
    Ok(super::ffi::ArrowBatches::new(batch.schema(), vec![batch]))
}
