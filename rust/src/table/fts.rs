//! Full-text search (INVERTED index): the text analyzer, as pylance 14 analyzes text (base
//! tokenizer `simple` / `whitespace` / `raw` / `ngram` / `code` / `icu` / `jieba` / `lindera`, then
//! long-token removal, lower-casing, stemming, stop-word removal and ASCII folding, in that
//! order, as pylance chains its filters). The on-disk token set and posting lists are
//! [`super::fts_codec`]; BM25 scoring is [`super::fts_score`].

use crate::error::{Error, Result};

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
    /// documents are JSON, flattened into `<path>,<type>,<value>` tokens, and queries are
    /// such triplets (pylance's `lance_tokenizer="json"`, see [`super::fts_json`])
    pub json: bool,
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

/// A lindera tokenizer (pylance's `lindera/<model>` tokenizers: the model directory's
/// `config.yml`, lindera's configuration naming the compiled dictionary and the segmenter's
/// mode), loaded once per process for the same configuration file (a dictionary rebuilt in
/// place under an unchanged `config.yml` is read again by a new process).
#[derive(Clone)]
pub struct LinderaModel {
    config: std::path::PathBuf,
    tokenizer: std::sync::Arc<lindera::tokenizer::Tokenizer>,
}

impl std::fmt::Debug for LinderaModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinderaModel").field("config", &self.config).finish()
    }
}

impl PartialEq for LinderaModel {
    fn eq(&self, other: &Self) -> bool {
        self.config == other.config
    }
}

impl Eq for LinderaModel {}

impl LinderaModel {
    /// The tokenizer `config` describes (a file changed since it was loaded is loaded again).
    /// A configuration with character or token filters is refused: lancepy runs lindera's
    /// segmenter and then the index's own filters.
    pub fn load(config: &std::path::Path) -> Result<Self> {
        use std::collections::HashMap;
        use std::sync::{Arc, Mutex, OnceLock};
        type Key = (std::path::PathBuf, u64, Option<std::time::SystemTime>);
        static LOADED: OnceLock<Mutex<HashMap<Key, Arc<lindera::tokenizer::Tokenizer>>>> = OnceLock::new();
        let meta = std::fs::metadata(config)
            .map_err(|e| Error::InvalidInput(format!("lindera model configuration {}: {e}", config.display())))?;
        let key = (config.to_path_buf(), meta.len(), meta.modified().ok());
        let cache = LOADED.get_or_init(Default::default);
        if let Some(tokenizer) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(Self { config: config.to_path_buf(), tokenizer: tokenizer.clone() });
        }
        let failed = |e: &dyn std::fmt::Display| {
            Error::InvalidInput(format!("Failed to load tokenizer config at {}: {e}", config.display()))
        };
        // (a dictionary lindera cannot read should fail its checks; a panic while loading one
        // is reported as a corrupt model, not unwound into Python)
        let tokenizer = crate::error::catch(|| {
            lindera::tokenizer::TokenizerBuilder::from_file(config).and_then(|b| b.build()).map_err(|e| failed(&e))
        })
        .map_err(|e| match e {
            Error::Internal(m) => Error::corrupt(format!("lindera model {}: {m}", config.display())),
            e => e,
        })?;
        if !tokenizer.character_filters.is_empty() || !tokenizer.token_filters.is_empty() {
            return Err(Error::NotSupported(format!(
                "lindera model configuration {}: character_filters and token_filters are not supported by lancepy \
                 (the index's own options lower-case, stem, drop stop words and fold)",
                config.display()
            )));
        }
        let tokenizer = Arc::new(tokenizer);
        let mut loaded = cache.lock().unwrap_or_else(|p| p.into_inner());
        if loaded.len() >= 8 {
            loaded.clear(); // (a few models at most in a process; each holds its dictionary)
        }
        loaded.insert(key, tokenizer.clone());
        Ok(Self { config: config.to_path_buf(), tokenizer })
    }

    /// lindera's words of `text`, each at its number (as pylance numbers them); a text
    /// lindera cannot segment has none, as in pylance.
    fn words<'a>(&self, text: &'a str) -> Vec<(&'a str, u32)> {
        let Ok(tokens) = self.tokenizer.tokenize(text) else { return Vec::new() };
        tokens
            .iter()
            .filter_map(|t| text.get(t.byte_start..t.byte_end).map(|w| (w, u32::try_from(t.position).unwrap_or(u32::MAX))))
            .collect()
    }
}

/// Builds a lindera dictionary (the files a `lindera/<model>` configuration names) from
/// MeCab-format sources in `input` (`*.csv` entries, `matrix.def`, `char.def`, `unk.def`),
/// described by lindera's `metadata.json` there, into `output`.
pub fn build_lindera_dictionary(input: &std::path::Path, output: &std::path::Path) -> Result<()> {
    use lindera_dictionary::dictionary::metadata::Metadata;
    let failed = |e: &dyn std::fmt::Display| Error::InvalidInput(format!("lindera dictionary from {}: {e}", input.display()));
    let described = input.join("metadata.json");
    let text = std::fs::read(&described).map_err(|e| failed(&format!("{}: {e}", described.display())))?;
    let metadata: Metadata = serde_json::from_slice(&text).map_err(|e| failed(&e))?;
    lindera_dictionary::builder::DictionaryBuilder::new(metadata).build_dictionary(input, output).map_err(|e| failed(&e))
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
    /// lindera's morphological analysis with a model's dictionary (`lindera/<model>`)
    Lindera(LinderaModel),
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
            model if model == "jieba" || model.starts_with("jieba/") || model.starts_with("lindera/") => {
                Err(Error::InvalidInput(format!("base_tokenizer {model:?} needs its model's dictionary")))
            }
            other => Err(Error::NotSupported(format!(
                "base_tokenizer {other:?}: lancepy's INVERTED index has the simple, whitespace, raw, icu, icu/split, code, jieba/<model>, lindera/<model> and ngram tokenizers"
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
#[derive(Debug)]
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
    pub(crate) fn base_tokens<'a>(&self, text: &'a str) -> Vec<(&'a str, u32)> {
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
            BaseTokenizer::Lindera(ref model) => model.words(text),
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

    /// The tokens of a query's `text`: [`Self::analyze`]'s, or for JSON documents those of
    /// its `<path>,<type>,<value>` triplets (malformed ones are an error).
    pub fn analyze_query(&self, text: &str) -> Result<Analyzed> {
        self.guarded(|| if self.json { super::fts_json::query_tokens(self, text) } else { Ok(self.analyze(text)) })
    }

    /// Runs `f`; with a lindera model, a panic inside lindera (its dictionary is damaged: it
    /// indexes past its own tables) is a [`Error::Corrupt`] naming the model, not unwound.
    fn guarded<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let BaseTokenizer::Lindera(model) = &self.base else { return f() };
        crate::error::catch(f).map_err(|e| match e {
            Error::Internal(m) => {
                Error::corrupt(format!("lindera model {}: its dictionary failed segmenting a text: {m}", model.config.display()))
            }
            e => e,
        })
    }

    /// The tokens of one document: [`Self::analyze`]'s, or for JSON documents its flattened
    /// tokens (a text that is not JSON is an error).
    pub fn analyze_doc(&self, text: &str) -> Result<Analyzed> {
        self.guarded(|| {
            if self.json {
                super::fts_json::doc_tokens(self, text, self.stemmer.map(frostem::Stemmer::new).as_ref())
            } else {
                Ok(self.analyze(text))
            }
        })
    }

    /// The tokens of plain `text`, filtered as the analyzer says.
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
    /// each token's position (its base token's number in the text; else empty). JSON
    /// documents (see [`super::fts_json`]) are flattened; one that is not JSON is an error
    /// naming its place in `texts`.
    #[allow(clippy::type_complexity)]
    pub fn analyze_corpus(
        &self,
        texts: &[Option<&str>],
        with_positions: bool,
    ) -> Result<(Vec<String>, Vec<u32>, Vec<u64>, Vec<u32>)> {
        self.guarded(|| self.analyze_corpus_unguarded(texts, with_positions))
    }

    fn analyze_corpus_unguarded(
        &self,
        texts: &[Option<&str>],
        with_positions: bool,
    ) -> Result<(Vec<String>, Vec<u32>, Vec<u64>, Vec<u32>)> {
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
                .enumerate()
                .map(|(c, chunk)| {
                    let stemmer = self.stemmer.map(frostem::Stemmer::new);
                    let mut seen: HashMap<&str, Option<u32>> = HashMap::new();
                    let mut by_token: HashMap<String, u32> = HashMap::new();
                    let mut local = Local {
                        vocab: Vec::new(),
                        ids: Vec::new(),
                        counts: Vec::with_capacity(chunk.len()),
                        positions: Vec::new(),
                    };
                    for (i, text) in chunk.iter().enumerate() {
                        let before = local.ids.len();
                        if let (true, Some(text)) = (self.json, text) {
                            let d = super::fts_json::doc_tokens(self, text, stemmer.as_ref()).map_err(|e| match e {
                                Error::InvalidInput(m) => {
                                    Error::InvalidInput(format!("{m} (document {} of the batch)", c * CHUNK + i))
                                }
                                other => other,
                            })?;
                            for (token, pos) in d.tokens.into_iter().zip(d.positions) {
                                let next = local.vocab.len() as u32;
                                let id = *by_token.entry(token).or_insert_with_key(|k| {
                                    local.vocab.push(k.clone());
                                    next
                                });
                                local.ids.push(id);
                                if with_positions {
                                    local.positions.push(pos);
                                }
                            }
                        } else if let Some(text) = text {
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
                    Ok(local)
                })
                .collect::<Result<Vec<Local>>>()
        })?;
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
        Ok((vocab, ids, offsets, positions))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            json: false,
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
            json: false,
        };
        let r = a.analyze("The quick, brown foxes jumped; café");
        assert_eq!(r.tokens, vec!["quick", "brown", "fox", "jump", "cafe"]);
        assert_eq!(r.positions, vec![1, 2, 3, 4, 5]);
    }
}
