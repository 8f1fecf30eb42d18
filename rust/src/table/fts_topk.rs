//! Exact top-k full-text search over one INVERTED index partition, with block-max pruning.
//!
//! Each posting list carries an upper bound per run of [`BOUND_BLOCK`] documents: the largest
//! BM25 weight (idf 1) of any document in the run, computed from the decoded list when it is
//! first used ([`block_bounds`]); the bounds in pylance's files are not read, so indices of
//! either library prune alike. A match query (OR of tokens) walks the lists document by
//! document in doc-id order (MaxScore: lists whose bounds together cannot reach the current
//! k-th score are only probed for documents the others found), and skips every run of
//! documents whose block bounds together stay below it; an AND query walks its shortest list.
//! A phrase query walks its shortest list the same way (its tokens' block bounds skip runs
//! of documents), scores each document holding every token from the frequencies, and checks
//! positions only for documents whose score would enter the best k phrase documents so far.
//!
//! Pruning only drops documents whose bound is below the k-th score (strictly: a document
//! scoring as much with a lower row id still wins the tie), and every kept document is scored
//! as [`crate::table::fts_score::score_docs`] scores it, in the same float32 order, so the top k
//! are exactly those of the exhaustive scorer.

use std::collections::BinaryHeap;

use crate::error::{Error, Result};
use crate::table::fts_pos::{gallop, le_u32, lower_bound, phrase_in_doc, PhraseList};
use crate::table::fts_score::{bm25_norm, bm25_weight, bm25_weight_normed, Hit};

/// Documents per block bound.
pub const BOUND_BLOCK: usize = 128;

/// Relative slack on bounds: a score is a handful of float32 operations, each off by at most
/// half an ulp, so a bound times this is above any score it bounds.
const SLACK: f32 = 1.0 + 1e-5;

#[inline]
fn le_f32(b: &[u8], i: usize) -> f32 {
    f32::from_bits(le_u32(b, i))
}

/// The block bounds of one posting list (`docs` ascending, `freqs` as many; u32 bytes): per
/// run of [`BOUND_BLOCK`] documents, the largest BM25 weight with idf 1 (`num_tokens`: u32
/// bytes, each document's token count). Raises for doc ids that do not ascend or that name a
/// document `num_tokens` does not hold.
pub fn block_bounds(docs: &[u8], freqs: &[u8], num_tokens: &[u8], avgdl: f32) -> Result<Vec<f32>> {
    let n = num_tokens.len() / 4;
    if docs.len() % 4 != 0 || freqs.len() != docs.len() || num_tokens.len() % 4 != 0 {
        return Err(Error::InvalidInput("block bounds: doc ids, frequencies and documents disagree".into()));
    }
    let len = docs.len() / 4;
    let mut out = Vec::with_capacity(len.div_ceil(BOUND_BLOCK));
    let mut prev: Option<u32> = None;
    for start in (0..len).step_by(BOUND_BLOCK) {
        let mut best = 0f32;
        for i in start..(start + BOUND_BLOCK).min(len) {
            let d = le_u32(docs, i);
            if prev.is_some_and(|p| d <= p) || d as usize >= n {
                return Err(Error::Corrupt("INVERTED index posting list: doc ids out of order or out of range".into()));
            }
            prev = Some(d);
            best = best.max(bm25_weight(1.0, le_u32(freqs, i) as f32, le_u32(num_tokens, d as usize) as f32, avgdl));
        }
        out.push(best);
    }
    Ok(out)
}

/// One query token's posting list in a partition, with its weight and block bounds.
pub struct BoundedList<'a> {
    /// doc ids (ascending, distinct), little-endian u32
    pub docs: &'a [u8],
    /// their frequencies, little-endian u32
    pub freqs: &'a [u8],
    /// [`block_bounds`] of the list, little-endian f32
    pub bounds: &'a [u8],
    /// the token's idf
    pub idf: f32,
    /// how often the query holds the token
    pub times: u32,
}

impl BoundedList<'_> {
    #[inline]
    fn len(&self) -> usize {
        self.docs.len() / 4
    }

    #[inline]
    fn blocks(&self) -> usize {
        self.bounds.len() / 4
    }

    #[inline]
    fn doc(&self, i: usize) -> u32 {
        le_u32(self.docs, i)
    }

    /// The last doc id of block `b`.
    #[inline]
    fn last_of(&self, b: usize) -> u32 {
        self.doc(((b + 1) * BOUND_BLOCK).min(self.len()) - 1)
    }

    /// The bound of block `b` on this list's part of a score.
    #[inline]
    fn bound(&self, b: usize) -> f32 {
        le_f32(self.bounds, b) * self.idf * self.times as f32 * SLACK
    }
}

/// Each document's [`bm25_norm`] (f32 bytes), from its token count (`num_tokens`: u32
/// bytes): computed once per partition, so that a query's weights divide once.
pub fn doc_norms(num_tokens: &[u8], avgdl: f32) -> Result<Vec<f32>> {
    if num_tokens.len() % 4 != 0 {
        return Err(Error::InvalidInput("doc norms: token counts are not u32 bytes".into()));
    }
    Ok((0..num_tokens.len() / 4).map(|d| bm25_norm(le_u32(num_tokens, d) as f32, avgdl)).collect())
}

/// The top `k` of a partition by the query's BM25 (as
/// [`crate::table::fts_score::score_docs`] with that `k`, exactly): documents holding at least
/// `need` of the `lists` (1: any; more: every list, `need` being the number of distinct query
/// tokens) and allowed by `allowed` (a byte per document, when given). `norms` holds each
/// document's [`doc_norms`]. Returns `(doc ids, scores)` in no particular order.
pub fn top_k(
    lists: &[BoundedList<'_>],
    norms: &[u8],
    row_ids: &[u8],
    need: usize,
    allowed: Option<&[u8]>,
    k: usize,
) -> Result<(Vec<u32>, Vec<f32>)> {
    let n = norms.len() / 4;
    if norms.len() % 4 != 0 || row_ids.len() != 8 * n || allowed.is_some_and(|a| a.len() != n) {
        return Err(Error::InvalidInput("top_k: documents, row ids and mask disagree".into()));
    }
    for l in lists {
        if l.docs.len() % 4 != 0 || l.freqs.len() != l.docs.len() || l.bounds.len() != 4 * l.len().div_ceil(BOUND_BLOCK) {
            return Err(Error::InvalidInput("top_k: doc ids, frequencies and block bounds disagree".into()));
        }
        if l.len() > 0 && l.doc(l.len() - 1) as usize >= n {
            return Err(Error::Corrupt("INVERTED index posting list names a document it does not hold".into()));
        }
    }
    let m = lists.len();
    if need > m.max(1) {
        return Ok((Vec::new(), Vec::new())); // (a token no document of the partition holds)
    }
    if need > 1 && need < m {
        return Err(Error::InvalidInput("top_k: need is 1 (any token) or every list".into()));
    }
    if k == 0 || m == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut walk = Walk {
        lists,
        norms,
        row_ids,
        allowed,
        k,
        heap: BinaryHeap::with_capacity(k + 1),
        block: vec![0; m],
        weights: vec![None; m],
        range: None,
        active: (0..m).collect(),
    };
    if need > 1 {
        walk.all_terms();
    } else {
        walk.any_term();
    }
    let found = walk.heap.into_vec();
    Ok((found.iter().map(|h| h.2).collect(), found.iter().map(|h| h.0).collect()))
}

struct Walk<'a, 'b> {
    lists: &'b [BoundedList<'a>],
    norms: &'b [u8],
    row_ids: &'b [u8],
    allowed: Option<&'b [u8]>,
    k: usize,
    heap: BinaryHeap<Hit>,
    /// per list, the first block whose last doc is at least the current document
    block: Vec<usize>,
    /// per list, its weight in the current document (`None`: not there)
    weights: Vec<Option<f32>>,
    /// the last [`Walk::range_bound`]: its bound and last document (valid up to it)
    range: Option<(f32, u32)>,
    /// the lists [`Walk::range_bound`] bounds (the others' documents are scored already)
    active: Vec<usize>,
}

impl Walk<'_, '_> {
    /// The score a document must reach to enter the top k (ties broken by row id).
    #[inline]
    fn threshold(&self) -> f32 {
        if self.heap.len() < self.k {
            f32::NEG_INFINITY
        } else {
            self.heap.peek().map_or(f32::NEG_INFINITY, |h| h.0)
        }
    }

    #[inline]
    fn row(&self, d: u32) -> u64 {
        let d = d as usize;
        u64::from_le_bytes(self.row_ids[8 * d..8 * d + 8].try_into().expect("8 bytes"))
    }

    #[inline]
    fn allowed(&self, d: u32) -> bool {
        self.allowed.is_none_or(|a| a[d as usize] != 0)
    }

    #[inline]
    fn weight(&self, i: usize, at: usize, d: u32) -> f32 {
        let l = &self.lists[i];
        bm25_weight_normed(l.idf, le_u32(l.freqs, at) as f32, le_f32(self.norms, d as usize))
    }

    /// Moves each active list's block to the first one ending at or after `d`. Returns the
    /// sum of their bounds and the last doc id they all cover (up to it, every document's
    /// score is at most that sum); `None` when some list is exhausted and `stop_if_exhausted`.
    fn range_bound(&mut self, d: u32, stop_if_exhausted: bool) -> Option<(f32, u32)> {
        // (documents come in ascending order: the last range holds until its end)
        if let Some((ub, end)) = self.range.filter(|&(_, end)| d <= end) {
            return Some((ub, end));
        }
        let mut ub = 0f32;
        let mut end = u32::MAX;
        for &i in &self.active {
            let l = &self.lists[i];
            let b = &mut self.block[i];
            while *b < l.blocks() && l.last_of(*b) < d {
                *b += 1;
            }
            if *b >= l.blocks() {
                if stop_if_exhausted {
                    return None;
                }
                continue;
            }
            ub += l.bound(*b);
            end = end.min(l.last_of(*b));
        }
        self.range = Some((ub * SLACK, end));
        self.range
    }

    /// Where `d` is in list `i` (searched within its current block), if it is there.
    #[inline]
    fn find(&self, i: usize, d: u32) -> Option<usize> {
        let l = &self.lists[i];
        let b = self.block[i];
        if b >= l.blocks() {
            return None;
        }
        let (lo, hi) = (b * BOUND_BLOCK, ((b + 1) * BOUND_BLOCK).min(l.len()));
        let at = lower_bound(l.docs, lo, hi, d);
        (at < hi && l.doc(at) == d).then_some(at)
    }

    /// Scores `d` from `weights` (in list order, each as often as the query holds its token,
    /// as the exhaustive scorer adds them) and keeps it if it is among the best k so far.
    fn offer(&mut self, d: u32) {
        let mut acc = 0f32;
        for (l, w) in self.lists.iter().zip(&self.weights) {
            if let Some(w) = w {
                for _ in 0..l.times {
                    acc += w;
                }
            }
        }
        if self.heap.len() == self.k && self.heap.peek().is_some_and(|worst| acc < worst.0) {
            return; // (below the k-th score: no tie to break)
        }
        let hit = Hit(acc, self.row(d), d);
        if self.heap.len() < self.k {
            self.heap.push(hit);
        } else if self.heap.peek().is_some_and(|worst| hit < *worst) {
            self.heap.pop();
            self.heap.push(hit);
        }
    }

    /// Scores the documents of list `s` first (each looked up in the others), so that a short
    /// list of high weights (a rare token) sets the k-th score before the walk; a document
    /// (or a block of them) whose bound with the other lists' largest weights (`whole`) stays
    /// below the k-th score is passed over. Every document of `s` is decided after it.
    fn seed(&mut self, s: usize, whole: &[f32]) {
        let lists = self.lists;
        let m = lists.len();
        let l = &lists[s];
        let others = (0..m).filter(|&i| i != s).fold(0f32, |acc, i| (acc + whole[i]) * SLACK);
        let mut cursor = vec![0usize; m];
        let mut j = 0;
        while j < l.len() {
            let threshold = self.threshold();
            let b = j / BOUND_BLOCK;
            if (l.bound(b) + others) * SLACK < threshold {
                j = (b + 1) * BOUND_BLOCK; // (no document of this block can enter the top k)
                continue;
            }
            let d = l.doc(j);
            if self.allowed(d) {
                let w = self.weight(s, j, d);
                if (w * l.times as f32 + others) * SLACK * SLACK >= threshold {
                    for (i, other) in lists.iter().enumerate() {
                        if i != s {
                            cursor[i] = gallop(other.docs, cursor[i], other.len(), d);
                            let at = cursor[i];
                            self.weights[i] = (at < other.len() && other.doc(at) == d).then(|| self.weight(i, at, d));
                        }
                    }
                    self.weights[s] = Some(w);
                    self.offer(d);
                }
            }
            j += 1;
        }
        self.weights.iter_mut().for_each(|w| *w = None);
    }

    /// OR of the lists (MaxScore with block bounds).
    fn any_term(&mut self) {
        let lists = self.lists;
        let m = lists.len();
        let whole: Vec<f32> = lists.iter().map(|l| (0..l.blocks()).map(|b| l.bound(b)).fold(0f32, f32::max)).collect();
        // (a list much shorter than the longest, with the highest bound, is scored first; the
        // walk then goes over the other lists only, passing over its documents)
        let longest = lists.iter().map(BoundedList::len).max().unwrap_or(0);
        let short = (0..m).filter(|&i| lists[i].len() * 8 <= longest).max_by(|&a, &b| whole[a].total_cmp(&whole[b]));
        if let Some(s) = short {
            self.seed(s, &whole);
        }
        let mut order: Vec<usize> = (0..m).filter(|&i| Some(i) != short).collect();
        order.sort_by(|&a, &b| whole[a].total_cmp(&whole[b]));
        self.active = order.clone();
        let mm = order.len();
        // (prefix[j]: the bound of a document only the first j lists of `order` hold)
        let mut prefix = vec![0f32; mm + 1];
        for j in 0..mm {
            prefix[j + 1] = (prefix[j] + whole[order[j]]) * SLACK;
        }
        let mut cursor = vec![0usize; m];
        let mut seeded_at = 0usize;
        let mut lazy = 0; // lists order[..lazy] are only probed
        loop {
            let threshold = self.threshold();
            while lazy < mm && prefix[lazy + 1] < threshold {
                lazy += 1;
            }
            if lazy == mm {
                return;
            }
            let Some(d) = order[lazy..].iter().filter(|&&i| cursor[i] < lists[i].len()).map(|&i| lists[i].doc(cursor[i])).min()
            else {
                return;
            };
            let (ub, end) = self.range_bound(d, false).expect("not stopping");
            if ub < threshold {
                // (no document in d..=end can reach the top k)
                for &i in &order[lazy..] {
                    let l = &lists[i];
                    cursor[i] = if end == u32::MAX { l.len() } else { gallop(l.docs, cursor[i], l.len(), end + 1) };
                }
                continue;
            }
            let seeded = short.is_some_and(|s| {
                let l = &lists[s];
                seeded_at = gallop(l.docs, seeded_at, l.len(), d);
                seeded_at < l.len() && l.doc(seeded_at) == d
            });
            if seeded || !self.allowed(d) {
                // (scored by the seed, or left out)
                for &i in &order[lazy..] {
                    if cursor[i] < lists[i].len() && lists[i].doc(cursor[i]) == d {
                        cursor[i] += 1;
                    }
                }
                continue;
            }
            let mut known = 0f32;
            for &i in &order[lazy..] {
                let l = &lists[i];
                if cursor[i] < l.len() && l.doc(cursor[i]) == d {
                    let w = self.weight(i, cursor[i], d);
                    self.weights[i] = Some(w);
                    known += w * l.times as f32;
                    cursor[i] += 1;
                } else {
                    self.weights[i] = None;
                }
            }
            // (the probed lists' bounds for this document's blocks)
            let mut rest = 0f32;
            for &i in &order[..lazy] {
                let l = &lists[i];
                let b = self.block[i];
                if b < l.blocks() {
                    rest += l.bound(b);
                }
            }
            if (known + rest) * SLACK * SLACK < threshold {
                continue;
            }
            for &i in order[..lazy].iter().rev() {
                self.weights[i] = self.find(i, d).map(|at| self.weight(i, at, d));
            }
            self.offer(d);
        }
    }

    /// AND of the lists: the shortest one leads, the others are searched (galloping from
    /// where the last search ended) for its documents.
    fn all_terms(&mut self) {
        let m = self.lists.len();
        let lead = (0..m).min_by_key(|&i| self.lists[i].len()).expect("a list");
        let len = self.lists[lead].len();
        let mut cursor = vec![0usize; m];
        let mut j = 0;
        'docs: while j < len {
            let d = self.lists[lead].doc(j);
            let threshold = self.threshold();
            let Some((ub, end)) = self.range_bound(d, true) else {
                return;
            };
            if ub < threshold {
                if end == u32::MAX {
                    return;
                }
                j = gallop(self.lists[lead].docs, j, len, end + 1);
                continue;
            }
            j += 1;
            if !self.allowed(d) {
                continue;
            }
            for i in 0..m {
                let l = &self.lists[i];
                let at = if i == lead { j - 1 } else { gallop(l.docs, cursor[i], l.len(), d) };
                cursor[i] = at;
                if at >= l.len() {
                    return;
                }
                if l.doc(at) != d {
                    continue 'docs;
                }
                self.weights[i] = Some(self.weight(i, at, d));
            }
            self.offer(d);
        }
    }
}

/// One distinct phrase token's part of the score: which of the phrase's lists holds its
/// documents, its idf, and how often the phrase holds it.
pub struct PhraseTerm<'a> {
    /// index into the phrase's lists (one whose token this is)
    pub list: usize,
    /// the token's idf
    pub idf: f32,
    /// how often the query holds the token
    pub times: u32,
    /// [`block_bounds`] of the token's posting list, little-endian f32
    pub bounds: &'a [u8],
}

impl PhraseTerm<'_> {
    fn bound(&self, b: usize) -> f32 {
        le_f32(self.bounds, b) * self.idf * self.times as f32 * SLACK
    }
}

/// The documents of a partition holding the phrase `lists` within `slop` (see
/// [`crate::table::fts_pos::phrase_docs`]), scored as an AND match of its distinct tokens
/// `terms` (in their order); with `k`, the best `k` only (score descending, then row id; see
/// [`phrase_walk`]). `norms`, `allowed` as for [`top_k`]. Returns `(doc ids, scores)`.
#[allow(clippy::too_many_arguments)]
pub fn phrase_top_k(
    lists: &[PhraseList<'_>],
    slop: u32,
    terms: &[PhraseTerm<'_>],
    norms: &[u8],
    row_ids: &[u8],
    allowed: Option<&[u8]>,
    k: Option<usize>,
) -> Result<(Vec<u32>, Vec<f32>)> {
    let n = norms.len() / 4;
    if norms.len() % 4 != 0 || row_ids.len() != 8 * n || allowed.is_some_and(|a| a.len() != n) {
        return Err(Error::InvalidInput("phrase: documents, row ids and mask disagree".into()));
    }
    for l in lists {
        if l.docs.len() % 4 != 0 || l.starts.len() != l.docs.len() + 4 || l.positions.len() % 4 != 0 {
            return Err(Error::InvalidInput("phrase: docs, position starts and positions disagree".into()));
        }
    }
    if terms.iter().any(|t| t.list >= lists.len() || t.bounds.len() != 4 * (lists[t.list].docs.len() / 4).div_ceil(BOUND_BLOCK)) {
        return Err(Error::InvalidInput("phrase: a term names no list, or its block bounds disagree with it".into()));
    }
    let slop = i32::try_from(slop).map_err(|_| Error::InvalidInput("slop too large".into()))?;
    let m = lists.len();
    if m == 0 || k == Some(0) {
        return Ok((Vec::new(), Vec::new()));
    }
    if let Some(k) = k {
        return phrase_walk(lists, slop, terms, norms, row_ids, allowed, k);
    }
    // (the documents holding every token, each with its place in every list)
    let lead = (0..m).min_by_key(|&i| lists[i].docs.len()).expect("a list");
    let mut cursor = vec![0usize; m];
    let mut places: Vec<usize> = Vec::new();
    let mut hits: Vec<Hit> = Vec::new();
    'docs: for j in 0..lists[lead].docs.len() / 4 {
        let doc = le_u32(lists[lead].docs, j);
        for (i, l) in lists.iter().enumerate() {
            let len = l.docs.len() / 4;
            let c = if i == lead { j } else { gallop(l.docs, cursor[i], len, doc) };
            cursor[i] = c;
            if c >= len {
                break 'docs;
            }
            if le_u32(l.docs, c) != doc {
                continue 'docs;
            }
        }
        if doc as usize >= n {
            return Err(Error::Corrupt("INVERTED index posting list names a document it does not hold".into()));
        }
        if allowed.is_some_and(|a| a[doc as usize] == 0) {
            continue;
        }
        let norm = le_f32(norms, doc as usize);
        let mut acc = 0f32;
        for t in terms {
            let l = &lists[t.list];
            let (from, to) = (le_u32(l.starts, cursor[t.list]), le_u32(l.starts, cursor[t.list] + 1));
            let w = bm25_weight_normed(t.idf, to.wrapping_sub(from) as f32, norm);
            for _ in 0..t.times {
                acc += w;
            }
        }
        let row = u64::from_le_bytes(row_ids[8 * doc as usize..8 * doc as usize + 8].try_into().expect("8 bytes"));
        hits.push(Hit(acc, row, (places.len() / m) as u32));
        places.extend_from_slice(&cursor);
    }
    let mut buffers: Vec<Vec<u32>> = vec![Vec::new(); m];
    let mut spans: Vec<&[u8]> = vec![&[]; m];
    let mut holds = |h: &Hit| -> Result<bool> {
        let at = &places[h.2 as usize * m..(h.2 as usize + 1) * m];
        for (i, l) in lists.iter().enumerate() {
            let (from, to) = (le_u32(l.starts, at[i]) as usize, le_u32(l.starts, at[i] + 1) as usize);
            if from > to || to * 4 > l.positions.len() {
                return Err(Error::Corrupt("INVERTED index positions: fewer than the frequencies say".into()));
            }
            spans[i] = &l.positions[4 * from..4 * to];
        }
        if slop == 0 {
            return Ok(exact_phrase(lists, &spans));
        }
        for (buffer, span) in buffers.iter_mut().zip(&spans) {
            buffer.clear();
            buffer.extend((0..span.len() / 4).map(|p| le_u32(span, p)));
        }
        let mut per: Vec<(&[u32], i32)> = buffers.iter().zip(lists).map(|(b, l)| (b.as_slice(), l.query_pos)).collect();
        Ok(phrase_in_doc(&mut per, slop))
    };
    let doc_of = |h: &Hit| le_u32(lists[lead].docs, places[h.2 as usize * m + lead]);
    let mut out_docs = Vec::new();
    let mut out_scores = Vec::new();
    for h in &hits {
        if holds(h)? {
            out_docs.push(doc_of(h));
            out_scores.push(h.0);
        }
    }
    Ok((out_docs, out_scores))
}

/// A document's positions of list `l`, where it is at `at` in the list (u32 bytes).
fn doc_positions<'a>(l: &PhraseList<'a>, at: usize) -> Result<&'a [u8]> {
    let (from, to) = (le_u32(l.starts, at) as usize, le_u32(l.starts, at + 1) as usize);
    if from > to || to * 4 > l.positions.len() {
        return Err(Error::Corrupt("INVERTED index positions: fewer than the frequencies say".into()));
    }
    Ok(&l.positions[4 * from..4 * to])
}

/// [`phrase_top_k`] with `k`: the shortest list leads, in doc order; a document is scored
/// from the frequencies first, and its positions are checked only when that score would
/// enter the best `k` found so far; runs of documents whose block bounds together stay below
/// the k-th score are skipped.
#[allow(clippy::too_many_arguments)]
fn phrase_walk(
    lists: &[PhraseList<'_>],
    slop: i32,
    terms: &[PhraseTerm<'_>],
    norms: &[u8],
    row_ids: &[u8],
    allowed: Option<&[u8]>,
    k: usize,
) -> Result<(Vec<u32>, Vec<f32>)> {
    let n = norms.len() / 4;
    let m = lists.len();
    let lead = (0..m).min_by_key(|&i| lists[i].docs.len()).expect("a list");
    let len = lists[lead].docs.len() / 4;
    let mut cursor = vec![0usize; m];
    let mut block = vec![0usize; terms.len()];
    let mut heap: BinaryHeap<Hit> = BinaryHeap::with_capacity(k + 1);
    let mut spans: Vec<&[u8]> = vec![&[]; m];
    let mut buffers: Vec<Vec<u32>> = vec![Vec::new(); m];
    let mut range: Option<(f32, u32)> = None;
    let mut j = 0;
    'docs: while j < len {
        let d = le_u32(lists[lead].docs, j);
        let threshold = if heap.len() < k { f32::NEG_INFINITY } else { heap.peek().map_or(f32::NEG_INFINITY, |h| h.0) };
        if threshold > f32::NEG_INFINITY && range.is_none_or(|(_, end)| d > end) {
            let (mut ub, mut end) = (0f32, u32::MAX);
            for (t, b) in terms.iter().zip(block.iter_mut()) {
                let l = &lists[t.list];
                let (tl, blocks) = (l.docs.len() / 4, t.bounds.len() / 4);
                while *b < blocks && le_u32(l.docs, ((*b + 1) * BOUND_BLOCK).min(tl) - 1) < d {
                    *b += 1;
                }
                if *b >= blocks {
                    break 'docs; // (a token holds no document from here on)
                }
                ub += t.bound(*b);
                end = end.min(le_u32(l.docs, ((*b + 1) * BOUND_BLOCK).min(tl) - 1));
            }
            range = Some((ub * SLACK, end));
        }
        // (the bound of the range holding d, computed when d left the last one)
        if let Some((_, end)) = range.filter(|&(ub, end)| d <= end && ub < threshold) {
            if end == u32::MAX {
                break;
            }
            j = gallop(lists[lead].docs, j, len, end + 1);
            continue;
        }
        for (i, l) in lists.iter().enumerate() {
            let ll = l.docs.len() / 4;
            let c = if i == lead { j } else { gallop(l.docs, cursor[i], ll, d) };
            cursor[i] = c;
            if c >= ll {
                break 'docs;
            }
            if le_u32(l.docs, c) != d {
                j += 1;
                continue 'docs;
            }
        }
        j += 1;
        if d as usize >= n {
            return Err(Error::Corrupt("INVERTED index posting list names a document it does not hold".into()));
        }
        if allowed.is_some_and(|a| a[d as usize] == 0) {
            continue;
        }
        let norm = le_f32(norms, d as usize);
        let mut acc = 0f32;
        for t in terms {
            let l = &lists[t.list];
            let (from, to) = (le_u32(l.starts, cursor[t.list]), le_u32(l.starts, cursor[t.list] + 1));
            let w = bm25_weight_normed(t.idf, to.wrapping_sub(from) as f32, norm);
            for _ in 0..t.times {
                acc += w;
            }
        }
        let row = u64::from_le_bytes(row_ids[8 * d as usize..8 * d as usize + 8].try_into().expect("8 bytes"));
        let hit = Hit(acc, row, d);
        if heap.len() == k && !heap.peek().is_some_and(|worst| hit < *worst) {
            continue;
        }
        for (i, l) in lists.iter().enumerate() {
            spans[i] = doc_positions(l, cursor[i])?;
        }
        let found = if slop == 0 {
            exact_phrase(lists, &spans)
        } else {
            for (buffer, span) in buffers.iter_mut().zip(&spans) {
                buffer.clear();
                buffer.extend((0..span.len() / 4).map(|p| le_u32(span, p)));
            }
            let mut per: Vec<(&[u32], i32)> = buffers.iter().zip(lists).map(|(b, l)| (b.as_slice(), l.query_pos)).collect();
            phrase_in_doc(&mut per, slop)
        };
        if found {
            heap.push(hit);
            if heap.len() > k {
                heap.pop();
            }
        }
    }
    let found = heap.into_vec();
    Ok((found.iter().map(|h| h.2).collect(), found.iter().map(|h| h.0).collect()))
}

/// Whether the u32 bytes `b` (ascending) hold `target`.
fn holds_u32(b: &[u8], target: u32) -> bool {
    let n = b.len() / 4;
    let at = lower_bound(b, 0, n, target);
    at < n && le_u32(b, at) == target
}

/// [`phrase_in_doc`] with slop 0, on one document's positions in place (`spans[i]`: list
/// `i`'s positions there, u32 bytes): some offset puts every token at its place in the query.
/// The token with the fewest positions anchors the offsets tried.
fn exact_phrase(lists: &[PhraseList<'_>], spans: &[&[u8]]) -> bool {
    let anchor = (0..spans.len()).min_by_key(|&i| spans[i].len()).expect("a list");
    let qa = i64::from(lists[anchor].query_pos);
    (0..spans[anchor].len() / 4).any(|j| {
        let p = i64::from(le_u32(spans[anchor], j));
        lists.iter().zip(spans).enumerate().all(|(i, (l, span))| {
            let want = p + i64::from(l.query_pos) - qa;
            i == anchor || (0..=i64::from(u32::MAX)).contains(&want) && holds_u32(span, want as u32)
        })
    })
}

#[cfg(test)]
mod tests;
