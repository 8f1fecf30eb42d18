//! Building one partition of an INVERTED index as its texts stream in.
//!
//! [`PostingsBuilder::add`] analyzes a batch of texts and appends each (token, document)
//! pair to its token's posting list at once, so the texts of a batch are dropped after it:
//! what a partition holds is its posting lists packed as varints (2–4 bytes a (document,
//! frequency) pair, 1–2 more a position), the documents' row ids and lengths, and the
//! vocabulary. [`encode`] then writes every posting list as pylance 14's partition file
//! lays it out (blocks led by their max BM25 score, positions streams), straight into Arrow
//! arrays, a bounded group of tokens at a time.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{LargeBinaryBuilder, UInt32Builder};
use arrow_array::{ArrayRef, Float32Array, LargeBinaryArray, ListArray, RecordBatch, UInt32Array};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Schema};

use crate::error::{Error, Result};
use crate::table::fts::Analyzer;
use crate::table::fts_pos;
use crate::table::{fts_codec, fts_score};

/// One token's posting list as it grows, packed: for each document (ascending), the
/// difference from the previous document, its frequency and (with positions) its positions'
/// differences, each a LEB128 varint. A pair costs 2–4 bytes instead of 8, a position 1–2
/// instead of 4; [`PostingList::parts`] unpacks it at encode time, a group of tokens at once.
#[derive(Default)]
struct TokenList {
    bytes: Vec<u8>,
    /// documents in the list, and the last one
    docs: u32,
    last_doc: u32,
    /// positions in the list
    positions: u64,
}

fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The varint at `*at` of `bytes` (built by [`put_varint`] in this process: complete).
fn get_varint(bytes: &[u8], at: &mut usize) -> u32 {
    let mut v = 0u32;
    let mut shift = 0;
    while let Some(&b) = bytes.get(*at) {
        *at += 1;
        v |= ((b & 0x7f) as u32) << shift;
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    v
}

impl TokenList {
    fn capacity_bytes(&self) -> usize {
        self.bytes.capacity()
    }

    /// Appends document `doc` (greater than the last one) with `freq` and its positions.
    fn push(&mut self, doc: u32, freq: u32, positions: impl Iterator<Item = u32>) {
        put_varint(&mut self.bytes, doc - if self.docs == 0 { 0 } else { self.last_doc });
        put_varint(&mut self.bytes, freq);
        let mut prev = 0;
        for p in positions {
            put_varint(&mut self.bytes, p - prev);
            prev = p;
            self.positions += 1;
        }
        self.docs += 1;
        self.last_doc = doc;
    }

    /// The list unpacked: documents, frequencies, positions (`with_positions`: as it was
    /// built).
    fn unpack(&self, with_positions: bool) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
        let n = self.docs as usize;
        let (mut docs, mut freqs) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut positions = Vec::with_capacity(if with_positions { self.positions as usize } else { 0 });
        let (mut at, mut doc) = (0usize, 0u32);
        for _ in 0..n {
            doc += get_varint(&self.bytes, &mut at);
            let freq = get_varint(&self.bytes, &mut at);
            docs.push(doc);
            freqs.push(freq);
            if with_positions {
                let mut p = 0;
                for _ in 0..freq {
                    p += get_varint(&self.bytes, &mut at);
                    positions.push(p);
                }
            }
        }
        (docs, freqs, positions)
    }
}

/// A posting list's parts: documents ascending, their frequencies, their positions one
/// document's after another (empty without positions); borrowed or unpacked.
pub type Parts<'a> = (Cow<'a, [u32]>, Cow<'a, [u32]>, Cow<'a, [u32]>);

/// A token's posting list as [`encode`] reads it.
pub trait PostingList: Sync {
    /// The list's parts.
    fn parts(&self) -> Parts<'_>;
}

/// A packed list with whether it holds positions.
struct Packed(TokenList, bool);

impl PostingList for Packed {
    fn parts(&self) -> Parts<'_> {
        let (d, f, p) = self.0.unpack(self.1);
        (Cow::Owned(d), Cow::Owned(f), Cow::Owned(p))
    }
}

impl PostingList for (&[u32], &[u32], &[u32]) {
    fn parts(&self) -> Parts<'_> {
        (Cow::Borrowed(self.0), Cow::Borrowed(self.1), Cow::Borrowed(self.2))
    }
}

/// The posting lists of one partition, built batch by batch (see the module docs).
pub struct PostingsBuilder {
    analyzer: Analyzer,
    with_positions: bool,
    /// token id -> token, in first-seen order
    vocab: Vec<String>,
    ids: HashMap<String, u32>,
    lists: Vec<TokenList>,
    /// each document's row id and token count (documents: the texts with a token)
    rows: Vec<u64>,
    lens: Vec<u32>,
    /// the lists' allocated bytes
    list_bytes: usize,
    vocab_bytes: usize,
    /// whether the lists were encoded (and let go)
    encoded: bool,
}

/// Bytes a vocabulary entry costs beside its text (the string twice, the map's slot, the
/// empty list).
const PER_TOKEN_BYTES: usize = 2 * 24 + 16 + std::mem::size_of::<TokenList>();

impl PostingsBuilder {
    /// An empty builder analyzing with `analyzer`.
    pub fn new(analyzer: Analyzer, with_positions: bool) -> Self {
        Self {
            analyzer,
            with_positions,
            vocab: Vec::new(),
            ids: HashMap::new(),
            lists: Vec::new(),
            rows: Vec::new(),
            lens: Vec::new(),
            list_bytes: 0,
            vocab_bytes: 0,
            encoded: false,
        }
    }

    /// Adds the documents `texts` (`None`: no tokens), whose row ids are `rows`. Texts
    /// without a token are not documents of the index.
    pub fn add(&mut self, texts: &[Option<&str>], rows: &[u64]) -> Result<()> {
        self.check_open()?;
        if texts.len() != rows.len() {
            return Err(Error::InvalidInput(format!("INVERTED build: {} texts but {} row ids", texts.len(), rows.len())));
        }
        let (local_vocab, ids, offsets, positions) = self.analyzer.analyze_corpus(texts, self.with_positions)?;
        let global: Vec<u32> = local_vocab.into_iter().map(|t| self.token_id(t)).collect();
        let mut doc_tokens: Vec<(u32, u32)> = Vec::new();
        let with_positions = self.with_positions;
        for (t, w) in offsets.windows(2).enumerate() {
            let (a, b) = (w[0] as usize, w[1] as usize);
            if a == b {
                continue;
            }
            let doc = u32::try_from(self.rows.len())
                .map_err(|_| Error::InvalidInput("INVERTED build: over 2^32 documents in one partition".into()))?;
            self.rows.push(rows[t]);
            self.lens.push((b - a) as u32);
            doc_tokens.clear();
            // (token, position) pairs; a stable sort by token keeps each token's positions
            // ascending
            doc_tokens.extend((a..b).map(|i| (global[ids[i] as usize], if self.with_positions { positions[i] } else { 0 })));
            doc_tokens.sort_by_key(|&(tok, _)| tok);
            let mut i = 0;
            while i < doc_tokens.len() {
                let tok = doc_tokens[i].0;
                let run = doc_tokens[i..].iter().take_while(|p| p.0 == tok).count();
                let list = &mut self.lists[tok as usize];
                let before = list.capacity_bytes();
                let positions = doc_tokens[i..i + run].iter().map(|p| p.1).filter(|_| with_positions);
                list.push(doc, run as u32, positions);
                self.list_bytes = self.list_bytes + list.capacity_bytes() - before;
                i += run;
            }
        }
        Ok(())
    }

    fn check_open(&self) -> Result<()> {
        if self.encoded {
            return Err(Error::InvalidInput("INVERTED build: the partition's posting lists were encoded already".into()));
        }
        Ok(())
    }

    fn token_id(&mut self, token: String) -> u32 {
        if let Some(&id) = self.ids.get(&token) {
            return id;
        }
        let id = self.vocab.len() as u32;
        self.vocab_bytes += 2 * token.len() + PER_TOKEN_BYTES;
        self.vocab.push(token.clone());
        self.ids.insert(token, id);
        self.lists.push(TokenList::default());
        id
    }

    /// The memory the builder holds, in bytes (lists as allocated, vocabulary, documents).
    pub fn memory_bytes(&self) -> usize {
        self.list_bytes + self.vocab_bytes + 12 * self.rows.capacity()
    }

    /// Whether positions are kept.
    pub fn with_positions(&self) -> bool {
        self.with_positions
    }

    /// Number of documents so far.
    pub fn num_docs(&self) -> usize {
        self.rows.len()
    }

    /// The vocabulary, token id order.
    pub fn vocab(&self) -> &[String] {
        &self.vocab
    }

    /// Each token's number of documents (token id order), before [`Self::encode`].
    pub fn doc_freqs(&self) -> Result<Vec<u32>> {
        self.check_open()?;
        Ok(self.lists.iter().map(|l| l.docs).collect())
    }

    /// Each document's row id and token count.
    pub fn docs(&self) -> (&[u64], &[u32]) {
        (&self.rows, &self.lens)
    }

    /// The partition's posting file columns (see [`encode`]) with each token's `idf`, in
    /// batches of `chunk` tokens encoded as they are asked for (the lists are let go batch by
    /// batch); once only, and nothing can be added after.
    pub fn encode_chunks(&mut self, idf: Vec<f32>, block_size: usize, chunk: usize) -> Result<EncodeChunks> {
        self.check_open()?;
        if idf.len() != self.lists.len() {
            return Err(Error::InvalidInput(format!("posting lists: {} idf values for {} tokens", idf.len(), self.lists.len())));
        }
        if block_size == 0 || chunk == 0 {
            return Err(Error::InvalidInput("posting lists: block size or chunk 0".into()));
        }
        self.encoded = true;
        self.list_bytes = 0;
        Ok(EncodeChunks {
            lists: std::mem::take(&mut self.lists).into_iter(),
            avgdl: average_length(&self.lens),
            lens: self.lens.clone(),
            idf,
            at: 0,
            chunk,
            block_size,
            with_positions: self.with_positions,
        })
    }

    /// Encodes the partition (see [`encode`]) with each token's `idf`, letting each group of
    /// lists go once it is encoded (the vocabulary and documents stay); once only.
    pub fn encode(&mut self, idf: &[f32], block_size: usize) -> Result<RecordBatch> {
        self.check_open()?;
        if idf.len() != self.lists.len() {
            return Err(Error::InvalidInput(format!("posting lists: {} idf values for {} tokens", idf.len(), self.lists.len())));
        }
        self.encoded = true;
        self.list_bytes = 0;
        let with_positions = self.with_positions;
        let mut lists = std::mem::take(&mut self.lists).into_iter();
        let tokens = lists.len();
        encode(
            tokens,
            |r| lists.by_ref().take(r.len()).map(|l| Packed(l, with_positions)).collect(),
            &self.lens,
            average_length(&self.lens),
            idf,
            block_size,
            with_positions,
        )
    }
}

/// A partition's posting file columns a batch of tokens at a time (see
/// [`PostingsBuilder::encode_chunks`]): each batch's lists are let go once it is encoded.
pub struct EncodeChunks {
    lists: std::vec::IntoIter<TokenList>,
    lens: Vec<u32>,
    avgdl: f32,
    idf: Vec<f32>,
    at: usize,
    chunk: usize,
    block_size: usize,
    with_positions: bool,
}

impl Iterator for EncodeChunks {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        if self.at >= self.idf.len() {
            return None;
        }
        let end = self.idf.len().min(self.at + self.chunk);
        let with_positions = self.with_positions;
        let mut lists =
            self.lists.by_ref().take(end - self.at).map(|l| Packed(l, with_positions)).collect::<Vec<_>>().into_iter();
        let idf = &self.idf[self.at..end];
        self.at = end;
        Some(encode(
            idf.len(),
            |r| lists.by_ref().take(r.len()).collect(),
            &self.lens,
            self.avgdl,
            idf,
            self.block_size,
            with_positions,
        ))
    }
}

/// Tokens encoded at once: their encoded lists are moved into the Arrow builders before the
/// next group is encoded.
const ENCODE_GROUP: usize = 4096;

/// The documents' average token count, as pylance 14 computes it (a float32 quotient).
pub fn average_length(lens: &[u32]) -> f32 {
    lens.iter().map(|&l| l as u64).sum::<u64>() as f32 / lens.len() as f32
}

/// The schema of a partition's posting file (see [`encode`]).
pub fn posting_schema(with_positions: bool) -> Arc<Schema> {
    let item = |t: DataType| Arc::new(Field::new("item", t, true));
    let mut fields = vec![
        Field::new("_posting", DataType::List(item(DataType::LargeBinary)), false),
        Field::new("_max_score", DataType::Float32, false),
        Field::new("_length", DataType::UInt32, false),
    ];
    if with_positions {
        fields.push(Field::new("_compressed_position", DataType::LargeBinary, false));
        fields.push(Field::new("_position_block_offset", DataType::List(item(DataType::UInt32)), false));
    }
    Arc::new(Schema::new(fields))
}

/// The `_posting`, `_max_score`, `_length` (and with `with_positions`
/// `_compressed_position`, `_position_block_offset`) columns of a partition's posting file of
/// `tokens` lists: `group(range)` gives the lists of the tokens in `range`, a group at a
/// time (dropped once encoded). Each block is led by the highest BM25 score in it, from
/// `idf[t]`, the documents' token counts `lens` and their average `avgdl`
/// ([`average_length`]), rounded as pylance 14 rounds it (the block's largest `f / (f + norm)`, times
/// `idf * (k1 + 1)`), so that the bytes are pylance's.
pub fn encode<L, F>(
    tokens: usize,
    mut group: F,
    lens: &[u32],
    avgdl: f32,
    idf: &[f32],
    block_size: usize,
    with_positions: bool,
) -> Result<RecordBatch>
where
    L: PostingList,
    F: FnMut(std::ops::Range<usize>) -> Vec<L>,
{
    use rayon::prelude::*;
    if idf.len() != tokens {
        return Err(Error::InvalidInput(format!("posting lists: {} idf values for {tokens} tokens", idf.len())));
    }
    if block_size == 0 {
        return Err(Error::InvalidInput("posting lists: block size 0".into()));
    }
    let mut blocks = LargeBinaryBuilder::new();
    let mut block_offsets: Vec<i32> = vec![0];
    let mut maxes: Vec<f32> = Vec::with_capacity(tokens);
    let mut lengths: Vec<u32> = Vec::with_capacity(tokens);
    let mut streams = LargeBinaryBuilder::new();
    let mut starts = UInt32Builder::new();
    let mut start_offsets: Vec<i32> = vec![0];
    for first in (0..tokens).step_by(ENCODE_GROUP) {
        crate::interrupt::check()?;
        let range = first..tokens.min(first + ENCODE_GROUP);
        let lists = group(range.clone());
        if lists.len() != range.len() {
            return Err(Error::Internal("posting lists: a group of another size than asked".into()));
        }
        let encoded: Vec<Encoded> = crate::parallel::cpu_pool().install(|| {
            lists
                .par_iter()
                .enumerate()
                .map(|(i, list)| {
                    let t = first + i;
                    let (docs, freqs, positions) = list.parts();
                    let (docs, freqs, positions) = (&docs[..], &freqs[..], &positions[..]);
                    if docs.is_empty() || docs.len() != freqs.len() {
                        return Err(Error::InvalidInput("posting lists: a token without documents".into()));
                    }
                    let mut block_max = Vec::with_capacity(docs.len().div_ceil(block_size));
                    let idf_scale = idf[t] * (fts_score::K1 + 1.0);
                    for (d, f) in docs.chunks(block_size).zip(freqs.chunks(block_size)) {
                        let mut max = f32::MIN;
                        for (&doc, &freq) in d.iter().zip(f) {
                            let dl = *lens
                                .get(doc as usize)
                                .ok_or_else(|| Error::InvalidInput("posting lists: a document out of range".into()))?;
                            let freq = freq as f32;
                            max = max.max(freq / (freq + fts_score::bm25_norm(dl as f32, avgdl)));
                        }
                        block_max.push(max * idf_scale);
                    }
                    let top = block_max.iter().copied().fold(f32::MIN, f32::max);
                    let pos = if with_positions { Some(fts_pos::encode(freqs, positions, block_size)?) } else { None };
                    Ok((fts_codec::posting_encode(docs, freqs, &block_max, block_size, true)?, top, pos, docs.len() as u32))
                })
                .collect::<Result<_>>()
        })?;
        drop(lists);
        for (token_blocks, top, pos, len) in encoded {
            for b in &token_blocks {
                blocks.append_value(b);
            }
            block_offsets.push(offset(block_offsets.last().copied().unwrap_or(0), token_blocks.len())?);
            maxes.push(top);
            lengths.push(len);
            if let Some((stream, offs)) = pos {
                streams.append_value(&stream);
                starts.append_slice(&offs);
                start_offsets.push(offset(start_offsets.last().copied().unwrap_or(0), offs.len())?);
            }
        }
    }
    let item = |t: DataType| Arc::new(Field::new("item", t, true));
    let posting: LargeBinaryArray = blocks.finish();
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(ListArray::try_new(
            item(DataType::LargeBinary),
            OffsetBuffer::new(block_offsets.into()),
            Arc::new(posting),
            None,
        )?),
        Arc::new(Float32Array::from(maxes)),
        Arc::new(UInt32Array::from(lengths)),
    ];
    if with_positions {
        columns.push(Arc::new(streams.finish()));
        columns.push(Arc::new(ListArray::try_new(
            item(DataType::UInt32),
            OffsetBuffer::new(start_offsets.into()),
            Arc::new(starts.finish()),
            None,
        )?));
    }
    Ok(RecordBatch::try_new(posting_schema(with_positions), columns)?)
}

/// One token's encoded list: `(posting blocks, max score, positions stream and its block
/// offsets, number of documents)`.
type Encoded = (Vec<Vec<u8>>, f32, Option<(Vec<u8>, Vec<u32>)>, u32);

/// `at + n` as a list offset.
fn offset(at: i32, n: usize) -> Result<i32> {
    i32::try_from(n)
        .ok()
        .and_then(|n| at.checked_add(n))
        .ok_or_else(|| Error::InvalidInput("posting lists: over 2^31 blocks".into()))
}

/// The flat form of [`encode`]'s lists: token `t` holds `docs[starts[t]..starts[t + 1]]`,
/// their `freqs`, and (with positions) their positions in order.
pub fn encode_flat(
    starts: &[u64],
    docs: &[u32],
    freqs: &[u32],
    positions: Option<&[u32]>,
    lens: &[u32],
    idf: &[f32],
    block_size: usize,
) -> Result<RecordBatch> {
    let n = docs.len();
    if freqs.len() != n
        || starts.first().is_some_and(|&s| s != 0)
        || starts.windows(2).any(|w| w[0] > w[1])
        || starts.last().is_some_and(|&e| e as usize != n)
    {
        return Err(Error::InvalidInput("posting lists: starts, docs and frequencies disagree".into()));
    }
    // (each pair's first position)
    let mut pos_at: Vec<usize> = Vec::new();
    if let Some(p) = positions {
        pos_at.reserve(n + 1);
        pos_at.push(0);
        for &f in freqs {
            pos_at.push(pos_at.last().copied().unwrap_or(0) + f as usize);
        }
        if pos_at.last().copied().unwrap_or(0) != p.len() {
            return Err(Error::InvalidInput("positions: frequencies and positions disagree".into()));
        }
    }
    let tokens = starts.len().saturating_sub(1);
    let list = |t: usize| {
        let (s, e) = (starts[t] as usize, starts[t + 1] as usize);
        let pos = match positions {
            Some(p) => &p[pos_at[s]..pos_at[e]],
            None => &[][..],
        };
        (&docs[s..e], &freqs[s..e], pos)
    };
    encode(tokens, |r| r.map(list).collect(), lens, average_length(lens), idf, block_size, positions.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;

    fn analyzer() -> Analyzer {
        Analyzer {
            base: crate::table::fts::BaseTokenizer::parse("simple", None, None).unwrap(),
            max_token_length: Some(40),
            lower_case: true,
            stemmer: None,
            stop_words: None,
            ascii_folding: false,
            json: false,
        }
    }

    #[test]
    fn builder_inverts_as_the_flat_path() {
        let texts = ["a b a c", "", "c c d", "b", "a d a a"];
        let opt: Vec<Option<&str>> = texts.iter().map(|t| Some(*t)).collect();
        let mut b = PostingsBuilder::new(analyzer(), true);
        b.add(&opt[..2], &[10, 11]).unwrap();
        b.add(&opt[2..], &[12, 13, 14]).unwrap();
        assert_eq!(b.vocab(), ["a", "b", "c", "d"]);
        assert_eq!(b.docs().0, [10, 12, 13, 14]);
        assert_eq!(b.docs().1, [4, 3, 1, 4]);
        assert_eq!(b.doc_freqs().unwrap(), [2, 2, 2, 2]);
        assert_eq!(b.lists[0].unpack(true), (vec![0, 3], vec![2, 3], vec![0, 2, 0, 2, 3]));
        let idf = [0.5f32, 0.6, 0.7, 0.8];
        let mut twin = PostingsBuilder::new(analyzer(), true);
        twin.add(&opt, &[10, 11, 12, 13, 14]).unwrap();
        let chunks: Vec<RecordBatch> = twin.encode_chunks(idf.to_vec(), 128, 3).unwrap().collect::<Result<_>>().unwrap();
        assert_eq!(chunks.iter().map(|c| c.num_rows()).collect::<Vec<_>>(), [3, 1]);
        assert!(twin.encode_chunks(idf.to_vec(), 128, 3).is_err());
        let built = b.encode(&idf, 128).unwrap();
        assert_eq!(arrow_select::concat::concat_batches(&built.schema(), &chunks).unwrap(), built);
        assert!(b.encode(&idf, 128).is_err() && b.add(&opt[..1], &[20]).is_err() && b.doc_freqs().is_err());
        assert_eq!(b.memory_bytes(), b.vocab_bytes + 12 * b.rows.capacity());
        let starts = [0u64, 2, 4, 6, 8];
        let docs = [0u32, 3, 0, 2, 0, 1, 1, 3];
        let freqs = [2u32, 3, 1, 1, 1, 2, 1, 1];
        let positions = [0u32, 2, 0, 2, 3, 1, 0, 3, 0, 1, 2, 1];
        let flat = encode_flat(&starts, &docs, &freqs, Some(&positions), &[4, 3, 1, 4], &idf, 128).unwrap();
        assert_eq!(built, flat);
        assert_eq!(built.column(2).as_primitive::<arrow_array::types::UInt32Type>().values(), &[2, 2, 2, 2]);
    }

    #[test]
    fn bad_lists_are_errors() {
        assert!(encode_flat(&[0, 3], &[0, 1], &[1, 1], None, &[1, 1], &[1.0], 128).is_err());
        assert!(encode_flat(&[0, 2], &[0, 5], &[1, 1], None, &[1, 1], &[1.0], 128).is_err());
        assert!(encode_flat(&[0, 2], &[0, 1], &[1, 1], Some(&[0]), &[1, 1], &[1.0], 128).is_err());
        assert!(encode_flat(&[0, 2], &[0, 1], &[1, 1], None, &[1, 1], &[], 128).is_err());
        let mut b = PostingsBuilder::new(analyzer(), false);
        assert!(b.add(&[Some("a")], &[]).is_err());
    }
}
