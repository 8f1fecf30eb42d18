//! Full-text search (INVERTED index) codecs in pylance 14's on-disk format.
//!
//! * the text analyzer (base tokenizer `simple` / `whitespace` / `raw` / `ngram`, then long-token
//!   removal, lower-casing, stemming, stop-word removal and ASCII folding, in that order, as
//!   pylance chains its filters);
//! * the token set: an FST (the `fst` crate's map format) from token to token id;
//! * posting lists: blocks of `block_size` (a multiple of 128) documents, each a little-endian
//!   `f32` block max score, then per 128 documents the first doc id (`u32`), the bit width and
//!   the bit-packed (BitPacker4x) doc-id deltas, the bit width and the bit-packed frequencies;
//!   the last, partial block holds its doc ids as varint deltas then its frequencies as
//!   varints (codec `varint_delta_v1`), or both as little-endian `u32` (`fixed32`).

use bitpacking::{BitPacker, BitPacker4x};

use crate::error::{Error, Result};
use crate::table::fts_pos::le_u32;

/// Documents per BitPacker4x sub-block.
pub const PACK_LEN: usize = 128;

/// How the text of one document is split and filtered.
#[derive(Debug, Clone)]
pub struct Analyzer {
    /// how the text is split into tokens
    pub base: BaseTokenizer,
    /// tokens of this many bytes or more are dropped
    pub max_token_length: Option<usize>,
    /// lower-case each token
    pub lower_case: bool,
    /// the stemming algorithm, if tokens are stemmed
    pub stemmer: Option<frostem::Algorithm>,
    /// the (stemmed) tokens to drop
    pub stop_words: Option<std::collections::HashSet<String>>,
    /// fold accented Latin letters to their ASCII base letters
    pub ascii_folding: bool,
}

/// A jieba dictionary (pylance's `jieba/<model>` tokenizers: the model directory's main
/// dictionary and user dictionaries, in jieba's `word frequency [tag]` lines), loaded once per
/// process for the same files.
#[derive(Clone)]
pub struct JiebaModel {
    files: Vec<std::path::PathBuf>,
    jieba: std::sync::Arc<jieba_rs::Jieba>,
}

impl std::fmt::Debug for JiebaModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JiebaModel").field("files", &self.files).finish()
    }
}

impl PartialEq for JiebaModel {
    fn eq(&self, other: &Self) -> bool {
        self.files == other.files
    }
}

impl Eq for JiebaModel {}

impl JiebaModel {
    /// The dictionary of `main` with the words of `users` added (a file changed since it was
    /// loaded is loaded again).
    pub fn load(main: &std::path::Path, users: &[std::path::PathBuf]) -> Result<Self> {
        use std::collections::HashMap;
        use std::sync::{Arc, Mutex, OnceLock};
        type Key = Vec<(std::path::PathBuf, u64, Option<std::time::SystemTime>)>;
        static LOADED: OnceLock<Mutex<HashMap<Key, Arc<jieba_rs::Jieba>>>> = OnceLock::new();
        let files: Vec<std::path::PathBuf> = std::iter::once(main.to_path_buf()).chain(users.iter().cloned()).collect();
        let mut key = Key::with_capacity(files.len());
        for f in &files {
            let meta = std::fs::metadata(f).map_err(|e| Error::InvalidInput(format!("jieba dictionary {}: {e}", f.display())))?;
            key.push((f.clone(), meta.len(), meta.modified().ok()));
        }
        let cache = LOADED.get_or_init(Default::default);
        if let Some(jieba) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(Self { files, jieba: jieba.clone() });
        }
        let open = |f: &std::path::Path| -> Result<std::io::BufReader<std::fs::File>> {
            let file =
                std::fs::File::open(f).map_err(|e| Error::InvalidInput(format!("jieba dictionary {}: {e}", f.display())))?;
            Ok(std::io::BufReader::new(file))
        };
        let mut jieba = jieba_rs::Jieba::with_dict(&mut open(main)?)
            .map_err(|e| Error::InvalidInput(format!("Failed to load Jieba dictionary from {}: {e}", main.display())))?;
        for user in users {
            jieba
                .load_dict(&mut open(user)?)
                .map_err(|e| Error::InvalidInput(format!("Failed to load Jieba user dictionary from {}: {e}", user.display())))?;
        }
        let jieba = Arc::new(jieba);
        let mut loaded = cache.lock().unwrap_or_else(|p| p.into_inner());
        if loaded.len() >= 8 {
            loaded.clear(); // (a few models at most in a process; each is tens of MB)
        }
        loaded.insert(key, jieba.clone());
        Ok(Self { files, jieba })
    }

    /// jieba's words of `text` in search mode (a long word's shorter words too), each at its
    /// first character's number, as pylance numbers them.
    fn words<'a>(&self, text: &'a str) -> Vec<(&'a str, u32)> {
        self.jieba
            .tokenize(text, jieba_rs::TokenizeMode::Search, true)
            .into_iter()
            .map(|t| (t.word, u32::try_from(t.start).unwrap_or(u32::MAX)))
            .collect()
    }
}

/// pylance's `base_tokenizer`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseTokenizer {
    /// maximal runs of alphanumeric characters
    Simple,
    /// maximal runs of non-whitespace characters
    Whitespace,
    /// the whole text, one token
    Raw,
    /// Unicode word segments (UAX #29, with dictionaries for scripts written without spaces)
    /// holding an alphanumeric character; with `split`, each segment's maximal runs of
    /// alphanumeric characters instead (pylance's `icu` and `icu/split`)
    Icu {
        /// split segments at non-alphanumeric characters
        split: bool,
    },
    /// code: identifiers (runs of alphanumeric characters and `_`) and, with
    /// `index_operators`, operators (the longest of [`CODE_OPERATORS`] that starts there, else
    /// one operator character); with `split`, identifiers are split into their words too
    /// (pylance's `code` tokenizer and word-delimiter filter)
    Code {
        /// operators are tokens too
        index_operators: bool,
        /// how identifiers are split (`None`: not at all)
        split: Option<IdentifierSplit>,
    },
    /// jieba's Chinese word segmentation with a model's dictionary (`jieba/<model>`)
    Jieba(JiebaModel),
    /// every run of `min` to `max` characters of the whole text (spaces included), shortest
    /// first at each start; with `prefix_only`, those starting at the first character only
    Ngram {
        /// fewest characters of a token (at least 1)
        min: usize,
        /// most characters of a token (at least `min`)
        max: usize,
        /// only the text's prefixes
        prefix_only: bool,
    },
}

/// How the `code` tokenizer splits an identifier into words: at `_`, between a lower-case
/// and an upper-case letter, before the last capital of a run followed by a lower-case
/// letter (`HTMLParser`: `HTML`, `Parser`) and, with `split_on_numerics`, between ASCII
/// digits and other characters. An identifier of several words gives them at consecutive
/// positions (after the identifier itself, at the first one's, with `preserve_original`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdentifierSplit {
    /// keep the whole identifier as well
    pub preserve_original: bool,
    /// split between digits and other characters
    pub split_on_numerics: bool,
}

/// The `code` tokenizer's operators of several characters (pylance 14's).
const CODE_OPERATORS: &[&str] = &[
    ">>>=", "<<=", ">>=", "&&=", "||=", "??=", "**=", "//=", "===", "!==", ">>>", "<=>", "::", "->", "=>", "==", "!=", "<=",
    ">=", "&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<", ">>", "**", "//", "??", ":=", "<-", "|>",
    "~=",
];

fn is_identifier_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn is_operator_char(c: char) -> bool {
    matches!(c, '!' | '%' | '&' | '*' | '+' | '-' | '/' | ':' | '<' | '=' | '>' | '?' | '^' | '|' | '~')
}

/// The identifiers (and operators) of `text` for [`BaseTokenizer::Code`], unsplit.
fn code_lex(text: &str, index_operators: bool) -> Vec<&str> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((from, c)) = chars.next() {
        let to = if is_identifier_char(c) {
            let mut to = from + c.len_utf8();
            while let Some(&(at, d)) = chars.peek() {
                if !is_identifier_char(d) {
                    break;
                }
                to = at + d.len_utf8();
                chars.next();
            }
            to
        } else if index_operators && is_operator_char(c) {
            let rest = &text[from..];
            // (operator characters are ASCII: one byte each)
            let to = from + CODE_OPERATORS.iter().filter(|op| rest.starts_with(**op)).map(|op| op.len()).max().unwrap_or(1);
            while chars.peek().is_some_and(|&(at, _)| at < to) {
                chars.next();
            }
            to
        } else {
            continue;
        };
        out.push(&text[from..to]);
    }
    out
}

/// The words of one identifier (itself alone when it is one word).
fn identifier_words(ident: &str, split_on_numerics: bool) -> Vec<&str> {
    let mut out = Vec::new();
    for segment in ident.split('_').filter(|s| !s.is_empty()) {
        let chars: Vec<(usize, char)> = segment.char_indices().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1].1, chars[i].1);
            let boundary = (split_on_numerics && prev.is_ascii_digit() != cur.is_ascii_digit())
                || (prev.is_lowercase() && cur.is_uppercase())
                || (prev.is_uppercase() && cur.is_uppercase() && chars.get(i + 1).is_some_and(|n| n.1.is_lowercase()));
            if boundary {
                out.push(&segment[start..chars[i].0]);
                start = chars[i].0;
            }
        }
        out.push(&segment[start..]);
    }
    out
}

/// The tokens of `text` for [`BaseTokenizer::Code`], with their positions.
fn code_tokens(text: &str, index_operators: bool, split: Option<IdentifierSplit>) -> Vec<(&str, u32)> {
    let lexed = code_lex(text, index_operators);
    let Some(split) = split else {
        return lexed.into_iter().zip(0u32..).collect();
    };
    let mut out = Vec::with_capacity(lexed.len());
    let mut shift = 0u32;
    for (i, token) in lexed.into_iter().enumerate() {
        let pos = u32::try_from(i).unwrap_or(u32::MAX).saturating_add(shift);
        let words =
            if token.chars().any(is_identifier_char) { identifier_words(token, split.split_on_numerics) } else { Vec::new() };
        if words.len() <= 1 {
            out.push((token, pos));
            continue;
        }
        if split.preserve_original {
            out.push((token, pos));
        }
        let n = u32::try_from(words.len()).unwrap_or(u32::MAX);
        out.extend(words.into_iter().zip(0u32..).map(|(w, k)| (w, pos.saturating_add(k))));
        shift = shift.saturating_add(n - 1);
    }
    out
}

impl BaseTokenizer {
    /// The tokenizer pylance names `name` (`ngram`: `(min_ngram_length, max_ngram_length,
    /// prefix_only)`, pylance's defaults `(3, 3, false)` when `None`; `code`: `(index_operators,
    /// split_identifiers, preserve_original, split_on_numerics)`, all `false` when `None`).
    pub fn parse(name: &str, ngram: Option<(usize, usize, bool)>, code: Option<(bool, bool, bool, bool)>) -> Result<Self> {
        let (index_operators, split_identifiers, preserve_original, split_on_numerics) = code.unwrap_or_default();
        if name != "code" && (index_operators || split_identifiers || preserve_original || split_on_numerics) {
            return Err(Error::InvalidInput("code analyzer flags require base_tokenizer='code'".into()));
        }
        match name {
            "code" => Ok(Self::Code {
                index_operators,
                split: split_identifiers.then_some(IdentifierSplit { preserve_original, split_on_numerics }),
            }),
            "simple" => Ok(Self::Simple),
            "whitespace" => Ok(Self::Whitespace),
            "raw" => Ok(Self::Raw),
            "icu" => Ok(Self::Icu { split: false }),
            "icu/split" => Ok(Self::Icu { split: true }),
            "ngram" => {
                let (min, max, prefix_only) = ngram.unwrap_or((3, 3, false));
                if min == 0 || max < min {
                    return Err(Error::InvalidInput(format!(
                        "ngram tokenizer: min_ngram_length ({min}) must be at least 1 and at most max_ngram_length ({max})"
                    )));
                }
                Ok(Self::Ngram { min, max, prefix_only })
            }
            jieba if jieba == "jieba" || jieba.starts_with("jieba/") => {
                Err(Error::InvalidInput(format!("base_tokenizer {jieba:?} needs its model's dictionary")))
            }
            other => Err(Error::NotSupported(format!(
                "base_tokenizer {other:?}: lancepy's INVERTED index has the simple, whitespace, raw, icu, icu/split, code, jieba/<model> and ngram tokenizers"
            ))),
        }
    }
}

/// The words of `text` for [`BaseTokenizer::Icu`].
fn icu_words(text: &str, split: bool) -> Vec<&str> {
    let segmenter = icu_segmenter::WordSegmenter::new_dictionary(icu_segmenter::options::WordBreakInvariantOptions::default());
    let mut out = Vec::new();
    let mut bounds = segmenter.segment_str(text);
    let Some(mut from) = bounds.next() else {
        return out;
    };
    for to in bounds {
        let segment = &text[from..to];
        if split {
            out.extend(segment.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()));
        } else if segment.chars().any(char::is_alphanumeric) {
            out.push(segment);
        }
        from = to;
    }
    out
}

/// The n-grams of `text` for [`BaseTokenizer::Ngram`].
fn ngrams(text: &str, min: usize, max: usize, prefix_only: bool) -> Vec<&str> {
    // (byte offsets of every character start, and of the end)
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain(std::iter::once(text.len())).collect();
    let chars = bounds.len() - 1;
    let starts = if prefix_only { chars.min(1) } else { chars };
    let mut out = Vec::new();
    for start in 0..starts {
        for n in min..=max {
            if start + n > chars {
                break;
            }
            out.push(&text[bounds[start]..bounds[start + n]]);
        }
    }
    out
}

/// The stemming algorithm of a pylance `language` name.
pub fn stemmer_of(language: &str) -> Result<frostem::Algorithm> {
    use frostem::Algorithm::*;
    Ok(match language.to_ascii_lowercase().as_str() {
        "arabic" => Arabic,
        "danish" => Danish,
        "dutch" => Dutch,
        "english" => English,
        "finnish" => Finnish,
        "french" => French,
        "german" => German,
        "greek" => Greek,
        "hungarian" => Hungarian,
        "italian" => Italian,
        "norwegian" => Norwegian,
        "portuguese" => Portuguese,
        "romanian" => Romanian,
        "russian" => Russian,
        "spanish" => Spanish,
        "swedish" => Swedish,
        "tamil" => Tamil,
        "turkish" => Turkish,
        other => return Err(Error::InvalidInput(format!("unknown language {other:?}"))),
    })
}

/// Appends what ASCII folding makes of `c` (itself when the table has no ASCII form for it).
fn fold_char(c: char, out: &mut String) {
    if c.is_ascii() {
        out.push(c);
        return;
    }
    match super::fts_fold::FOLD.binary_search_by(|(k, _)| k.cmp(&c)) {
        Ok(i) => out.push_str(super::fts_fold::FOLD[i].1),
        Err(_) => out.push(c),
    }
}

/// One analyzed document: its tokens and their positions (the base tokenizer's token
/// numbers, so removed tokens leave gaps).
pub struct Analyzed {
    /// the tokens, in order
    pub tokens: Vec<String>,
    /// each token's position
    pub positions: Vec<u32>,
}

impl Analyzer {
    /// The base tokens of `text` with their positions: each token's number, except for
    /// n-grams, which all sit at position 0 (as tantivy's n-gram tokenizer numbers them), and
    /// for split identifiers (see [`IdentifierSplit`]).
    fn base_tokens<'a>(&self, text: &'a str) -> Vec<(&'a str, u32)> {
        let numbered = |tokens: Vec<&'a str>| tokens.into_iter().zip(0u32..).collect();
        match self.base {
            BaseTokenizer::Raw => vec![(text, 0)],
            BaseTokenizer::Simple => numbered(text.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()).collect()),
            BaseTokenizer::Whitespace => {
                numbered(text.split(|c: char| c.is_ascii_whitespace()).filter(|t| !t.is_empty()).collect())
            }
            BaseTokenizer::Icu { split } => numbered(icu_words(text, split)),
            BaseTokenizer::Code { index_operators, split } => code_tokens(text, index_operators, split),
            BaseTokenizer::Jieba(ref model) => model.words(text),
            BaseTokenizer::Ngram { min, max, prefix_only } => {
                ngrams(text, min, max, prefix_only).into_iter().map(|t| (t, 0)).collect()
            }
        }
    }

    /// What the filters make of one base token (`None`: dropped).
    pub fn filter(&self, raw: &str, stemmer: Option<&frostem::Stemmer>) -> Option<String> {
        if let Some(limit) = self.max_token_length {
            if raw.len() >= limit {
                return None;
            }
        }
        let mut token = if self.lower_case {
            if raw.is_ascii() {
                raw.to_ascii_lowercase()
            } else {
                raw.chars().flat_map(char::to_lowercase).collect()
            }
        } else {
            raw.to_string()
        };
        if let Some(s) = stemmer {
            // (a stem equal to the token comes back borrowed: nothing to replace)
            let stemmed = match s.stem(&token) {
                std::borrow::Cow::Owned(stem) => Some(stem),
                std::borrow::Cow::Borrowed(_) => None,
            };
            if let Some(stem) = stemmed {
                token = stem;
            }
        }
        if let Some(stop) = &self.stop_words {
            if stop.contains(&token) {
                return None;
            }
        }
        if self.ascii_folding && !token.is_ascii() {
            let mut folded = String::with_capacity(token.len());
            token.chars().for_each(|c| fold_char(c, &mut folded));
            token = folded;
        }
        Some(token)
    }

    /// The tokens of `text`, filtered as the analyzer says.
    pub fn analyze(&self, text: &str) -> Analyzed {
        let stemmer = self.stemmer.map(frostem::Stemmer::new);
        let mut out = Analyzed { tokens: Vec::new(), positions: Vec::new() };
        for (raw, pos) in self.base_tokens(text) {
            if let Some(token) = self.filter(raw, stemmer.as_ref()) {
                out.tokens.push(token);
                out.positions.push(pos);
            }
        }
        out
    }

    /// Analyzes many texts (`None`: no tokens) in parallel chunks, each base token filtered
    /// once per chunk. Returns the vocabulary in first-seen order, every text's token ids in
    /// order, the offsets of each text's ids (`texts.len() + 1`) and, with `with_positions`,
    /// each token's position (its base token's number in the text; else empty).
    pub fn analyze_corpus(&self, texts: &[Option<&str>], with_positions: bool) -> (Vec<String>, Vec<u32>, Vec<u64>, Vec<u32>) {
        use rayon::prelude::*;
        use std::collections::HashMap;
        const CHUNK: usize = 2048;
        struct Local {
            vocab: Vec<String>,
            ids: Vec<u32>,
            counts: Vec<u32>,
            positions: Vec<u32>,
        }
        // (on the process's CPU pool, which a forked DataLoader worker rebuilds; rayon's
        // global pool has no threads in a fork)
        let chunks: Vec<Local> = crate::parallel::cpu_pool().install(|| {
            texts
                .par_chunks(CHUNK)
                .map(|chunk| {
                    let stemmer = self.stemmer.map(frostem::Stemmer::new);
                    let mut seen: HashMap<&str, Option<u32>> = HashMap::new();
                    let mut by_token: HashMap<String, u32> = HashMap::new();
                    let mut local = Local {
                        vocab: Vec::new(),
                        ids: Vec::new(),
                        counts: Vec::with_capacity(chunk.len()),
                        positions: Vec::new(),
                    };
                    for text in chunk {
                        let before = local.ids.len();
                        if let Some(text) = text {
                            for (raw, pos) in self.base_tokens(text) {
                                let id = match seen.get(raw) {
                                    Some(id) => *id,
                                    None => {
                                        let id = self.filter(raw, stemmer.as_ref()).map(|t| {
                                            let next = local.vocab.len() as u32;
                                            *by_token.entry(t).or_insert_with_key(|k| {
                                                local.vocab.push(k.clone());
                                                next
                                            })
                                        });
                                        seen.insert(raw, id);
                                        id
                                    }
                                };
                                if let Some(id) = id {
                                    local.ids.push(id);
                                    if with_positions {
                                        local.positions.push(pos);
                                    }
                                }
                            }
                        }
                        local.counts.push((local.ids.len() - before) as u32);
                    }
                    local
                })
                .collect()
        });
        let mut global: HashMap<String, u32> = HashMap::new();
        let mut vocab: Vec<String> = Vec::new();
        let mut ids: Vec<u32> = Vec::with_capacity(chunks.iter().map(|c| c.ids.len()).sum());
        let mut offsets: Vec<u64> = Vec::with_capacity(texts.len() + 1);
        let mut positions: Vec<u32> = Vec::new();
        offsets.push(0);
        for chunk in chunks {
            positions.extend_from_slice(&chunk.positions);
            let map: Vec<u32> = chunk
                .vocab
                .into_iter()
                .map(|t| {
                    let next = vocab.len() as u32;
                    *global.entry(t).or_insert_with_key(|k| {
                        vocab.push(k.clone());
                        next
                    })
                })
                .collect();
            ids.extend(chunk.ids.iter().map(|&i| map[i as usize]));
            let mut at = *offsets.last().expect("one offset");
            for c in chunk.counts {
                at += c as u64;
                offsets.push(at);
            }
        }
        (vocab, ids, offsets, positions)
    }
}

/// Every `(key, value)` of an FST map, in key order.
pub fn fst_entries(bytes: Vec<u8>) -> Result<Vec<(Vec<u8>, u64)>> {
    use fst::Streamer;
    let map = fst::Map::new(bytes).map_err(|e| Error::Corrupt(format!("INVERTED index token set: {e}")))?;
    let mut stream = map.stream();
    let mut out = Vec::with_capacity(map.len());
    while let Some((k, v)) = stream.next() {
        out.push((k.to_vec(), v));
    }
    Ok(out)
}

/// An FST map of `entries` (keys ascending and distinct).
pub fn fst_build(entries: &[(Vec<u8>, u64)]) -> Result<Vec<u8>> {
    let mut builder = fst::MapBuilder::memory();
    for (k, v) in entries {
        builder.insert(k, *v).map_err(|e| Error::InvalidInput(format!("token set: {e}")))?;
    }
    builder.into_inner().map_err(|e| Error::Internal(format!("token set: {e}")))
}

fn read_varint(src: &[u8], at: &mut usize) -> Result<u32> {
    let mut value = 0u32;
    let mut shift = 0u32;
    while *at < src.len() {
        let byte = src[*at];
        *at += 1;
        value |= u32::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
        if shift >= 35 {
            break;
        }
    }
    Err(Error::Corrupt("INVERTED index posting list: bad varint".into()))
}

fn write_varint(dst: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        dst.push((value as u8) | 0x80);
        value >>= 7;
    }
    dst.push(value as u8);
}

fn take<'a>(src: &'a [u8], at: &mut usize, n: usize) -> Result<&'a [u8]> {
    let end = at.checked_add(n).filter(|&e| e <= src.len());
    let Some(end) = end else {
        return Err(Error::Corrupt("INVERTED index posting block is truncated".into()));
    };
    let out = &src[*at..end];
    *at = end;
    Ok(out)
}

/// The doc ids and frequencies of one posting list of `length` documents, stored as `blocks`.
pub fn posting_decode(blocks: &[&[u8]], length: usize, block_size: usize, varint_tail: bool) -> Result<(Vec<u32>, Vec<u32>)> {
    if block_size == 0 || block_size % PACK_LEN != 0 {
        return Err(Error::Corrupt(format!("INVERTED index block size {block_size} is not a multiple of 128")));
    }
    let mut docs = Vec::with_capacity(length);
    let mut freqs = Vec::with_capacity(length);
    let packer = BitPacker4x::new();
    let mut unpacked = [0u32; PACK_LEN];
    for block in blocks {
        let left = length.saturating_sub(docs.len());
        if left == 0 {
            break;
        }
        let mut at = 4; // the block's max score
        if left >= block_size {
            for _ in 0..block_size / PACK_LEN {
                let first = u32::from_le_bytes(take(block, &mut at, 4)?.try_into().expect("4 bytes"));
                let bits = take(block, &mut at, 1)?[0];
                if bits > 32 {
                    return Err(Error::Corrupt(format!("INVERTED index posting block: {bits} bits")));
                }
                let packed = take(block, &mut at, bits as usize * PACK_LEN / 8)?;
                packer.decompress_sorted(first, packed, &mut unpacked, bits);
                docs.extend_from_slice(&unpacked);
                let bits = take(block, &mut at, 1)?[0];
                if bits > 32 {
                    return Err(Error::Corrupt(format!("INVERTED index posting block: {bits} bits")));
                }
                let packed = take(block, &mut at, bits as usize * PACK_LEN / 8)?;
                packer.decompress(packed, &mut unpacked, bits);
                freqs.extend_from_slice(&unpacked);
            }
        } else if varint_tail {
            let mut prev = 0u32;
            for i in 0..left {
                let d = read_varint(block, &mut at)?;
                prev = if i == 0 { d } else { prev.wrapping_add(d) };
                docs.push(prev);
            }
            for _ in 0..left {
                freqs.push(read_varint(block, &mut at)?);
            }
        } else {
            let d = take(block, &mut at, 4 * left)?;
            docs.extend(d.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))));
            let f = take(block, &mut at, 4 * left)?;
            freqs.extend(f.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))));
        }
    }
    if docs.len() != length {
        return Err(Error::Corrupt(format!(
            "INVERTED index posting list holds {} documents, its length says {length}",
            docs.len()
        )));
    }
    Ok((docs, freqs))
}

/// The blocks of one posting list (`docs` ascending), each led by its max score
/// (`block_scores`, one per block).
pub fn posting_encode(
    docs: &[u32],
    freqs: &[u32],
    block_scores: &[f32],
    block_size: usize,
    varint_tail: bool,
) -> Result<Vec<Vec<u8>>> {
    if block_size == 0 || block_size % PACK_LEN != 0 {
        return Err(Error::InvalidInput(format!("block size {block_size} is not a multiple of 128")));
    }
    if docs.len() != freqs.len() || block_scores.len() != docs.len().div_ceil(block_size) {
        return Err(Error::InvalidInput("posting list: docs, frequencies and block scores disagree".into()));
    }
    let packer = BitPacker4x::new();
    let mut buffer = [0u8; PACK_LEN * 4];
    let mut out = Vec::with_capacity(block_scores.len());
    for (b, score) in block_scores.iter().enumerate() {
        let start = b * block_size;
        let end = (start + block_size).min(docs.len());
        let mut block = score.to_le_bytes().to_vec();
        if end - start == block_size {
            for s in (start..end).step_by(PACK_LEN) {
                let d = &docs[s..s + PACK_LEN];
                if d.windows(2).any(|w| w[0] > w[1]) {
                    return Err(Error::InvalidInput("posting list doc ids must ascend".into()));
                }
                let bits = packer.num_bits_sorted(d[0], d);
                let n = packer.compress_sorted(d[0], d, &mut buffer, bits);
                block.extend_from_slice(&d[0].to_le_bytes());
                block.push(bits);
                block.extend_from_slice(&buffer[..n]);
                let f = &freqs[s..s + PACK_LEN];
                let bits = packer.num_bits(f);
                let n = packer.compress(f, &mut buffer, bits);
                block.push(bits);
                block.extend_from_slice(&buffer[..n]);
            }
        } else if varint_tail {
            let mut prev = 0u32;
            for (i, &d) in docs[start..end].iter().enumerate() {
                if i > 0 && d < prev {
                    return Err(Error::InvalidInput("posting list doc ids must ascend".into()));
                }
                write_varint(&mut block, if i == 0 { d } else { d - prev });
                prev = d;
            }
            freqs[start..end].iter().for_each(|&f| write_varint(&mut block, f));
        } else {
            docs[start..end].iter().for_each(|d| block.extend_from_slice(&d.to_le_bytes()));
            freqs[start..end].iter().for_each(|f| block.extend_from_slice(&f.to_le_bytes()));
        }
        out.push(block);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn code_tokens_split_identifiers_and_operators() {
        let words = |text, ops, split: Option<(bool, bool)>| {
            let split =
                split.map(|(preserve_original, split_on_numerics)| IdentifierSplit { preserve_original, split_on_numerics });
            code_tokens(text, ops, split)
        };
        assert_eq!(
            words("std::vector user-name parse.HTML2JSON", false, None),
            vec![("std", 0), ("vector", 1), ("user", 2), ("name", 3), ("parse", 4), ("HTML2JSON", 5)]
        );
        assert_eq!(
            words("a::b != c->d >>>= x", true, None),
            vec![("a", 0), ("::", 1), ("b", 2), ("!=", 3), ("c", 4), ("->", 5), ("d", 6), (">>>=", 7), ("x", 8)]
        );
        assert_eq!(words("parseHTML2JSON", false, Some((false, false))), vec![("parse", 0), ("HTML2JSON", 1)]);
        assert_eq!(
            words("parseHTML2JSON next", false, Some((true, true))),
            vec![("parseHTML2JSON", 0), ("parse", 0), ("HTML", 1), ("2", 2), ("JSON", 3), ("next", 4)]
        );
        assert_eq!(
            words("my_var __init__ _x HTMLParser", false, Some((false, false))),
            vec![("my", 0), ("var", 1), ("__init__", 2), ("_x", 3), ("HTML", 4), ("Parser", 5)]
        );
        assert!(BaseTokenizer::parse("simple", None, Some((false, true, false, false))).is_err());
    }

    #[test]
    fn icu_words_follow_unicode_word_boundaries() {
        let text = "Hello, world! it's 4.5 -- ok";
        assert_eq!(icu_words(text, false), vec!["Hello", "world", "it's", "4.5", "ok"]);
        assert_eq!(icu_words(text, true), vec!["Hello", "world", "it", "s", "4", "5", "ok"]);
        assert!(icu_words("", false).is_empty() && icu_words(" ,; ", true).is_empty());
        // a script written without spaces is segmented by its dictionary, not kept whole
        let words = icu_words("我们的数据格式", false);
        assert!(words.len() > 1 && words.concat() == "我们的数据格式", "{words:?}");
    }

    use super::*;

    #[test]
    fn posting_round_trip() {
        let docs: Vec<u32> = (0..300u32).map(|i| i * 8 + (i % 7)).collect();
        let freqs: Vec<u32> = (0..300u32).map(|i| 1 + i % 5).collect();
        for varint in [true, false] {
            let blocks = posting_encode(&docs, &freqs, &[1.0, 2.0, 3.0], 128, varint).unwrap();
            let refs: Vec<&[u8]> = blocks.iter().map(|b| b.as_slice()).collect();
            let (d, f) = posting_decode(&refs, 300, 128, varint).unwrap();
            assert_eq!((d, f), (docs.clone(), freqs.clone()));
        }
    }

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

    #[test]
    fn ngram_tokens() {
        let tri = BaseTokenizer::parse("ngram", None, None).unwrap();
        assert_eq!(tri, BaseTokenizer::Ngram { min: 3, max: 3, prefix_only: false });
        let a = Analyzer {
            base: tri,
            max_token_length: None,
            lower_case: true,
            stemmer: None,
            stop_words: None,
            ascii_folding: true,
        };
        let d = a.analyze("Café x");
        assert_eq!(d.tokens, ["caf", "afe", "fe ", "e x"]); // (accents folded after the split; spaces kept)
        assert_eq!(d.positions, [0, 0, 0, 0]);
        assert!(a.analyze("ab").tokens.is_empty());
        let pre = Analyzer { base: BaseTokenizer::parse("ngram", Some((1, 3, true)), None).unwrap(), ..a.clone() };
        assert_eq!(pre.analyze("日本語x").tokens, ["日", "日本", "日本語"]);
        let two = Analyzer { base: BaseTokenizer::parse("ngram", Some((1, 2, false)), None).unwrap(), ..a };
        assert_eq!(two.analyze("abc").tokens, ["a", "ab", "b", "bc", "c"]);
        assert!(BaseTokenizer::parse("ngram", Some((0, 2, false)), None).is_err());
        assert!(BaseTokenizer::parse("ngram", Some((3, 2, false)), None).is_err());
    }

    #[test]
    fn analyzer_simple() {
        let a = Analyzer {
            base: BaseTokenizer::Simple,
            max_token_length: Some(40),
            lower_case: true,
            stemmer: Some(frostem::Algorithm::English),
            stop_words: Some(["the".to_string()].into_iter().collect()),
            ascii_folding: true,
        };
        let r = a.analyze("The quick, brown foxes jumped; café");
        assert_eq!(r.tokens, vec!["quick", "brown", "fox", "jump", "cafe"]);
        assert_eq!(r.positions, vec![1, 2, 3, 4, 5]);
    }

    #[test]
    fn fst_round_trip() {
        let entries = vec![(b"a".to_vec(), 3u64), (b"bc".to_vec(), 1), (b"bd".to_vec(), 0)];
        assert_eq!(fst_entries(fst_build(&entries).unwrap()).unwrap(), entries);
    }
}

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
