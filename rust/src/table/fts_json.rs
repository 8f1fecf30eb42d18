//! Full-text search over JSON documents: pylance 14's `lance_tokenizer="json"`, the document
//! tokenizer of an INVERTED index on a JSON column (or on strings holding JSON, when asked).
//!
//! A document is parsed as strict JSON and flattened into `<path>,<type>,<value>` tokens:
//! - the path joins the object keys from the root with `.` (array items keep their array's
//!   path; the root's own path is empty), in key order (keys sorted, as a JSON object is read);
//! - a string is split and filtered by the index's analyzer, one token per word kept
//!   (`title,str,quick`); numbers, booleans and nulls are one token each, their JSON text kept
//!   as it is printed (`a.b,number,1.5`, `c,bool,true`, `d,null,null`);
//! - positions count the tokens of the document, one after another (no gaps for words the
//!   analyzer drops, unlike plain text).
//!
//! A query is not JSON but triplets separated by `;` (`a.b,str,hello world;c,number,1`): a
//! `str` value is analyzed as a document's strings are; other values are kept verbatim.

use std::borrow::Cow;

use super::fts::{Analyzed, Analyzer};
use crate::error::{Error, Result};

/// How deep a document may nest (objects and arrays), as serde_json's parser allows.
const MAX_DEPTH: usize = 127;

/// The tokens of one JSON document with their positions (see the module docs). A text that
/// is not strict JSON is an error.
pub fn doc_tokens(analyzer: &Analyzer, text: &str, stemmer: Option<&frostem::Stemmer>) -> Result<Analyzed> {
    let value = Parser { text, at: 0 }.document()?;
    let mut out = Analyzed { tokens: Vec::new(), positions: Vec::new() };
    let mut path = String::new();
    flatten(analyzer, stemmer, &value, &mut path, &mut out);
    Ok(out)
}

/// A parsed JSON value. A number keeps its text as written: pylance prints a number token
/// from the document's own text (its serde_json keeps numbers as written), so `1e+22` and
/// `1.0` are tokens as they stand.
enum Node<'a> {
    Null,
    Bool(bool),
    Number(&'a str),
    Str(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    /// the members, sorted by key (a repeated key: its last value)
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

fn flatten(analyzer: &Analyzer, stemmer: Option<&frostem::Stemmer>, value: &Node<'_>, path: &mut String, out: &mut Analyzed) {
    match value {
        Node::Object(members) => {
            for (key, item) in members {
                let at = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                flatten(analyzer, stemmer, item, path, out);
                path.truncate(at);
            }
        }
        Node::Array(items) => items.iter().for_each(|item| flatten(analyzer, stemmer, item, path, out)),
        Node::Str(text) => string_tokens(analyzer, stemmer, path, text, out),
        Node::Null => push(out, format!("{path},null,null")),
        Node::Bool(b) => push(out, format!("{path},bool,{b}")),
        Node::Number(n) => push(out, format!("{path},number,{n}")),
    }
}

/// A strict JSON parser (RFC 8259, as serde_json reads documents: no comments, trailing
/// commas, leading zeros or unpaired surrogate escapes), nesting at most [`MAX_DEPTH`] deep.
struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Parser<'a> {
    fn error<T>(&self, what: &str) -> Result<T> {
        Err(Error::InvalidInput(format!("JSON document tokenizer: the document is not JSON ({what} at byte {})", self.at)))
    }

    fn document(mut self) -> Result<Node<'a>> {
        let value = self.value(0)?;
        self.skip_ws();
        if self.at != self.text.len() {
            return self.error("trailing characters");
        }
        Ok(value)
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_ws();
        let hit = self.peek() == Some(byte);
        self.at += hit as usize;
        hit
    }

    fn value(&mut self, depth: usize) -> Result<Node<'a>> {
        self.skip_ws();
        match self.peek() {
            Some(b'{') | Some(b'[') if depth >= MAX_DEPTH => self.error("recursion limit exceeded"),
            Some(b'{') => {
                self.at += 1;
                let mut members: Vec<(Cow<'a, str>, Node<'a>)> = Vec::new();
                if !self.eat(b'}') {
                    loop {
                        self.skip_ws();
                        if self.peek() != Some(b'"') {
                            return self.error("expected a key");
                        }
                        let key = self.string()?;
                        if !self.eat(b':') {
                            return self.error("expected ':'");
                        }
                        members.push((key, self.value(depth + 1)?));
                        if self.eat(b'}') {
                            break;
                        }
                        if !self.eat(b',') {
                            return self.error("expected ',' or '}'");
                        }
                    }
                }
                // (sorted by key; of a repeated key, the last value: a stable sort keeps
                // them in order, and each run keeps its last)
                members.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                let mut kept: Vec<(Cow<'a, str>, Node<'a>)> = Vec::with_capacity(members.len());
                for member in members {
                    match kept.last_mut() {
                        Some(last) if last.0 == member.0 => *last = member,
                        _ => kept.push(member),
                    }
                }
                Ok(Node::Object(kept))
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        items.push(self.value(depth + 1)?);
                        if self.eat(b']') {
                            break;
                        }
                        if !self.eat(b',') {
                            return self.error("expected ',' or ']'");
                        }
                    }
                }
                Ok(Node::Array(items))
            }
            Some(b'"') => Ok(Node::Str(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => {
                for (word, node) in [("null", Node::Null), ("true", Node::Bool(true)), ("false", Node::Bool(false))] {
                    if self.text[self.at..].starts_with(word) {
                        self.at += word.len();
                        return Ok(node);
                    }
                }
                self.error("expected a value")
            }
        }
    }

    fn digits(&mut self) -> usize {
        let from = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        self.at - from
    }

    fn number(&mut self) -> Result<Node<'a>> {
        let from = self.at;
        self.at += (self.peek() == Some(b'-')) as usize;
        match self.peek() {
            Some(b'0') => {
                self.at += 1;
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    return self.error("leading zero");
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return self.error("invalid number"),
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return self.error("invalid number");
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if self.digits() == 0 {
                return self.error("invalid number");
            }
        }
        Ok(Node::Number(&self.text[from..self.at]))
    }

    /// A string (at its opening quote), its escapes resolved.
    fn string(&mut self) -> Result<Cow<'a, str>> {
        self.at += 1;
        let from = self.at;
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.at) {
            match b {
                b'"' => {
                    self.at += 1;
                    return Ok(Cow::Borrowed(&self.text[from..self.at - 1]));
                }
                b'\\' => break,
                0..=0x1f => return self.error("control character in a string"),
                _ => self.at += 1,
            }
        }
        let mut out = String::from(&self.text[from..self.at]);
        loop {
            let Some(&b) = bytes.get(self.at) else { return self.error("unterminated string") };
            match b {
                b'"' => {
                    self.at += 1;
                    return Ok(Cow::Owned(out));
                }
                b'\\' => {
                    self.at += 1;
                    let Some(&e) = bytes.get(self.at) else { return self.error("unterminated string") };
                    self.at += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let high = self.hex4()?;
                            let c = if (0xD800..0xDC00).contains(&high) {
                                if !self.text[self.at..].starts_with("\\u") {
                                    return self.error("unpaired surrogate");
                                }
                                self.at += 2;
                                let low = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&low) {
                                    return self.error("unpaired surrogate");
                                }
                                char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
                            } else {
                                char::from_u32(high)
                            };
                            match c {
                                Some(c) => out.push(c),
                                None => return self.error("unpaired surrogate"),
                            }
                        }
                        _ => return self.error("invalid escape"),
                    }
                }
                0..=0x1f => return self.error("control character in a string"),
                _ => {
                    // (a whole UTF-8 character: the text is a str)
                    let c = self.text[self.at..].chars().next().expect("a character");
                    out.push(c);
                    self.at += c.len_utf8();
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32> {
        let digits = self.text.get(self.at..self.at + 4).filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()));
        match digits {
            Some(d) => {
                self.at += 4;
                Ok(u32::from_str_radix(d, 16).expect("hex digits"))
            }
            None => self.error("invalid \\u escape"),
        }
    }
}

/// Appends `token` at the next position.
fn push(out: &mut Analyzed, token: String) {
    out.positions.push(out.tokens.len() as u32);
    out.tokens.push(token);
}

/// The words of `text` the analyzer keeps, each as `<path>,str,<word>`.
fn string_tokens(analyzer: &Analyzer, stemmer: Option<&frostem::Stemmer>, path: &str, text: &str, out: &mut Analyzed) {
    for (raw, _) in analyzer.base_tokens(text) {
        if let Some(word) = analyzer.filter(raw, stemmer) {
            push(out, format!("{path},str,{word}"));
        }
    }
}

/// The tokens of a query: `;`-separated `<path>,<type>,<value>` triplets (`type`: `str`,
/// `number`, `bool` or `null`), with their positions.
pub fn query_tokens(analyzer: &Analyzer, text: &str) -> Result<Analyzed> {
    let stemmer = analyzer.stemmer.map(frostem::Stemmer::new);
    let mut out = Analyzed { tokens: Vec::new(), positions: Vec::new() };
    for triplet in text.split(';') {
        let mut parts = triplet.splitn(3, ',');
        let (Some(path), Some(kind), Some(value)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Error::InvalidInput(format!(
                "Invalid triple format: {triplet} (a JSON index is searched with <path>,<type>,<value> triplets, \
                 separated by ';')"
            )));
        };
        match kind {
            "number" | "bool" | "null" => push(&mut out, format!("{path},{kind},{value}")),
            "str" => string_tokens(analyzer, stemmer.as_ref(), path, value, &mut out),
            _ => return Err(Error::InvalidInput(format!("Invalid triple type: {kind} (expected str, number, bool or null)"))),
        }
    }
    Ok(out)
}

/// Where the value of a JSON token starts: after its path and type (`a.b,str,` of
/// `a.b,str,hello`). A token without two commas has no prefix.
pub fn value_start(token: &str) -> usize {
    token.find(',').and_then(|first| token[first + 1..].find(',').map(|second| first + second + 2)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::fts::BaseTokenizer;

    fn analyzer(stop: &[&str]) -> Analyzer {
        Analyzer {
            base: BaseTokenizer::Simple,
            max_token_length: Some(40),
            lower_case: true,
            stemmer: None,
            stop_words: Some(stop.iter().map(|s| s.to_string()).collect()),
            ascii_folding: false,
            json: true,
        }
    }

    #[test]
    fn documents_flatten_into_triplets() {
        let a = analyzer(&["the"]);
        let text = r#"{"b": [{"c": "Hello the World"}, {"c": "e"}], "a": 1, "c": true, "d": null,
                       "e": {"f": 1.0, "g": [], "h": {}}, "n": [1, -2, 3.5e20, 1e+22, -0, 18446744073709551616]}"#;
        let d = doc_tokens(&a, text, None).unwrap();
        assert_eq!(
            d.tokens,
            [
                "a,number,1",
                "b.c,str,hello",
                "b.c,str,world",
                "b.c,str,e",
                "c,bool,true",
                "d,null,null",
                "e.f,number,1.0",
                "n,number,1",
                "n,number,-2",
                "n,number,3.5e20",
                "n,number,1e+22",
                "n,number,-0",
                "n,number,18446744073709551616",
            ]
        );
        assert_eq!(d.positions, (0..13).collect::<Vec<u32>>()); // (no gap for the dropped "the")
        assert_eq!(doc_tokens(&a, "\"Top Level\"", None).unwrap().tokens, [",str,top", ",str,level"]);
        // keys sorted by their bytes; a repeated key keeps its last value; escapes resolved
        let d = doc_tokens(&a, r#"{"é": 1, "b": 2, "B": 3, "b": 4, "k\u00e9y": "x\ud83d\ude00y"}"#, None).unwrap();
        assert_eq!(d.tokens, ["B,number,3", "b,number,4", "kéy,str,x", "kéy,str,y", "é,number,1"]);
        let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        assert_eq!(doc_tokens(&a, &deep(127), None).unwrap().tokens, [",number,1"]);
        for bad in [
            "{'a': 1}",
            "",
            "{\"a\": 01}",
            "[1,]",
            "{\"a\" 1}",
            "[1] x",
            "\"\\ud800\"",
            "\"\\x\"",
            "-",
            "1.",
            "1e",
            "tru",
            "\"a\u{1}\"",
            "[",
            "{\"a\":1,}",
            "NaN",
        ] {
            assert!(doc_tokens(&a, bad, None).is_err(), "{bad:?}");
        }
        assert!(doc_tokens(&a, &deep(128), None).is_err());
    }

    #[test]
    fn queries_are_triplets() {
        let a = analyzer(&[]);
        let q = query_tokens(&a, "a,number,1;b.c,str,Hello World;e,number,1.0;t,str,x,y").unwrap();
        assert_eq!(q.tokens, ["a,number,1", "b.c,str,hello", "b.c,str,world", "e,number,1.0", "t,str,x", "t,str,y"]);
        assert_eq!(q.positions, [0, 1, 2, 3, 4, 5]);
        let e = query_tokens(&a, "brown").unwrap_err().to_string();
        assert!(e.contains("Invalid triple format: brown"), "{e}");
        let e = query_tokens(&a, "title,string,brown").unwrap_err().to_string();
        assert!(e.contains("Invalid triple type: string"), "{e}");
        assert!(query_tokens(&a, "a,number,1;").is_err());
        assert_eq!(value_start("a.b,str,x,y"), 8);
        assert_eq!(value_start("plain"), 0);
    }
}
