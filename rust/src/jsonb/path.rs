//! JSONPath selection and the JSON filter functions pylance 14 registers (`json_extract`,
//! `json_exists`, `json_get`, `json_get_string` / `_int` / `_float` / `_bool`,
//! `json_array_contains`, `json_array_length`), over JSON text or JSONB values.
//!
//! Paths: an optional root `$` (or a bare first name, `a.b` meaning `$.a.b`), then steps:
//! `.name` or `."name"` or `:name` (a member of an object), `["name"]`, `.*` (every member's
//! value), `[*]` (every element; a value that is not an array passes as it is, JSONPath's
//! lax mode), and `[i, j, last, last-1, i to j]` (elements by position). Selection follows
//! pylance: a member step selects nothing from a non-object, a position step nothing from a
//! non-array; `.**` selects the value and everything inside it (`.**{n}`, `.**{n to m}`,
//! `.**{n to last}`: at those levels). Filter expressions (`?(...)`) and arithmetic are
//! refused as not supported.

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, LargeBinaryBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use super::{item_to_jsonb, Item, Kind, Number, Raw};
use crate::error::{Error, Result};

/// One position in an array step: from the start, or from the end (`last` is `Last(0)`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Index {
    At(i32),
    Last(i32),
}

impl Index {
    fn resolve(self, len: i32) -> i64 {
        match self {
            Index::At(i) => i as i64,
            Index::Last(k) => len as i64 + k as i64 - 1,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Member(String),
    AllMembers,
    AllElements,
    Positions(Vec<(Index, Option<Index>)>),
    /// `.**`, `.**{n}`, `.**{n to m}`, `.**{n to last}`: the value and everything inside it,
    /// at the levels given (the value itself is level 0).
    Descendants(Option<Levels>),
}

/// A `.**` step's levels: the first, and the last (`Some(None)`: to the last).
type Levels = (u8, Option<Option<u8>>);

/// Whether level `level` of a `.**` step matches, and whether to look deeper.
fn level_check(spec: Option<Levels>, level: u8) -> (bool, bool) {
    match spec {
        None => (true, true),
        Some((start, None)) => (level == start, level < start),
        Some((start, Some(None))) => (level >= start, true),
        Some((start, Some(Some(end)))) => {
            if level < start && start <= end {
                (false, true)
            } else if level >= start && level <= end {
                (true, true)
            } else {
                (false, false)
            }
        }
    }
}

fn descendants<'a>(item: Item<'a>, level: u8, spec: Option<Levels>, out: &mut Vec<Item<'a>>) -> Result<()> {
    let (matched, deeper) = level_check(spec, level);
    if matched {
        out.push(item);
    }
    if !deeper || level as usize > super::MAX_DEPTH {
        return Ok(());
    }
    if let Item::Container(raw) = item {
        let items = raw.items()?;
        let children = match raw.kind()? {
            Kind::Object(n) => &items[n..],
            _ => &items[..],
        };
        for c in children {
            // (levels past 255 wrap, as pylance counts them in a byte)
            descendants(*c, level.wrapping_add(1), spec, out)?;
        }
    }
    Ok(())
}

/// A parsed JSONPath (the subset in the module's documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

struct PathParser<'a> {
    s: &'a [u8],
    i: usize,
    text: &'a str,
}

impl<'a> PathParser<'a> {
    fn err(&self, what: &str) -> Error {
        Error::invalid_input(format!("invalid JSONPath {:?}: {what}", self.text))
    }

    fn unsupported(&self, what: &str) -> Error {
        Error::not_supported(format!(
            "JSONPath {:?}: {what} (lancepy supports $, .name, [\"name\"], .*, [*], .** and [positions])",
            self.text
        ))
    }

    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// A double-quoted name (escapes as in JSON strings).
    fn quoted(&mut self) -> Result<String> {
        let start = self.i; // at the quote
        self.i += 1;
        loop {
            match self.s.get(self.i) {
                None => return Err(self.err("an unterminated name")),
                Some(b'\\') => self.i += 2,
                Some(b'"') => break,
                Some(_) => self.i += 1,
            }
        }
        self.i += 1;
        let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|_| self.err("a name that is not UTF-8"))?;
        match super::parse(text.as_bytes()) {
            Ok(super::Value::String(s)) if !s.is_empty() => Ok(s.into_owned()),
            _ => Err(self.err("an invalid quoted name")),
        }
    }

    /// A bare name: up to the next character JSONPath gives a meaning to.
    fn bare(&mut self) -> Result<String> {
        let start = self.i;
        while let Some(&c) = self.s.get(self.i) {
            if b" ,.:{}[]()?@$|<>!=+-*/%\"'".contains(&c) {
                break;
            }
            if c == b'\\' {
                return Err(self.unsupported("escapes in bare names"));
            }
            self.i += 1;
        }
        if self.i == start {
            return Err(self.err("expected a name"));
        }
        std::str::from_utf8(&self.s[start..self.i]).map(str::to_string).map_err(|_| self.err("a name that is not UTF-8"))
    }

    fn name(&mut self) -> Result<String> {
        if self.s.get(self.i) == Some(&b'"') {
            self.quoted()
        } else {
            self.bare()
        }
    }

    fn int(&mut self) -> Result<i32> {
        let start = self.i;
        if matches!(self.s.get(self.i), Some(b'-' | b'+')) {
            self.i += 1;
        }
        while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i])
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| self.err("expected a position"))
    }

    fn index(&mut self) -> Result<Index> {
        if self.s[self.i..].len() >= 4 && self.s[self.i..self.i + 4].eq_ignore_ascii_case(b"last") {
            self.i += 4;
            let save = self.i;
            self.ws();
            let sign = if self.eat(b'-') {
                -1
            } else if self.eat(b'+') {
                1
            } else {
                self.i = save;
                return Ok(Index::Last(0));
            };
            self.ws();
            let k = self.int()?;
            return Ok(Index::Last(if sign < 0 { k.saturating_neg() } else { k }));
        }
        self.int().map(Index::At)
    }

    fn positions(&mut self) -> Result<Step> {
        let mut out = Vec::new();
        loop {
            self.ws();
            let from = self.index()?;
            let save = self.i;
            self.ws();
            let to = if self.s[self.i..].len() >= 2 && self.s[self.i..self.i + 2].eq_ignore_ascii_case(b"to") {
                self.i += 2;
                self.ws();
                Some(self.index()?)
            } else {
                self.i = save;
                None
            };
            out.push((from, to));
            self.ws();
            if self.eat(b']') {
                return Ok(Step::Positions(out));
            }
            if !self.eat(b',') {
                return Err(self.err("expected ',' or ']'"));
            }
        }
    }

    fn level(&mut self) -> Result<u8> {
        let start = self.i;
        while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i]).ok().and_then(|t| t.parse().ok()).ok_or_else(|| self.err("expected a level"))
    }

    fn keyword(&mut self, word: &[u8]) -> bool {
        let found = self.s.get(self.i..self.i + word.len()).is_some_and(|w| w.eq_ignore_ascii_case(word));
        if found {
            self.i += word.len();
        }
        found
    }

    /// The optional `{n}`, `{n to m}` or `{n to last}` after `.**`.
    fn levels(&mut self) -> Result<Option<Levels>> {
        if !self.eat(b'{') {
            return Ok(None);
        }
        self.ws();
        let start = self.level()?;
        self.ws();
        let end = if self.keyword(b"to") {
            self.ws();
            Some(if self.keyword(b"last") { None } else { Some(self.level()?) })
        } else {
            None
        };
        self.ws();
        if !self.eat(b'}') {
            return Err(self.err("expected '}'"));
        }
        Ok(Some((start, end)))
    }

    fn parse(mut self) -> Result<JsonPath> {
        let mut steps = Vec::new();
        self.ws();
        if !self.eat(b'$') {
            match self.s.get(self.i) {
                None => return Ok(JsonPath { steps }),
                Some(b'.' | b'[' | b':') => {}
                Some(b'@') => return Err(self.unsupported("'@' outside a filter")),
                Some(_) => steps.push(Step::Member(self.bare()?)),
            }
        }
        loop {
            self.ws();
            let Some(&c) = self.s.get(self.i) else { break };
            match c {
                b'.' if self.s.get(self.i + 1..self.i + 3) == Some(b"**") => {
                    self.i += 3;
                    steps.push(Step::Descendants(self.levels()?));
                }
                b'.' if self.s.get(self.i + 1) == Some(&b'*') => {
                    self.i += 2;
                    steps.push(Step::AllMembers);
                }
                b'.' | b':' => {
                    self.i += 1;
                    steps.push(Step::Member(self.name()?));
                }
                b'[' => {
                    self.i += 1;
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b'*') => {
                            self.i += 1;
                            self.ws();
                            if !self.eat(b']') {
                                return Err(self.err("expected ']'"));
                            }
                            steps.push(Step::AllElements);
                        }
                        Some(b'?') => return Err(self.unsupported("filter expressions")),
                        Some(b'"') => {
                            let name = self.quoted()?;
                            self.ws();
                            if !self.eat(b']') {
                                return Err(self.err("expected ']'"));
                            }
                            steps.push(Step::Member(name));
                        }
                        _ => steps.push(self.positions()?),
                    }
                }
                b'?' => return Err(self.unsupported("filter expressions")),
                _ => return Err(self.unsupported("expressions")),
            }
        }
        Ok(JsonPath { steps })
    }
}

impl JsonPath {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<JsonPath> {
        PathParser { s: text.as_bytes(), i: 0, text }.parse()
    }

    /// The items `self` selects in `root`, in order.
    pub fn select<'a>(&self, root: Raw<'a>) -> Result<Vec<Item<'a>>> {
        let mut items = vec![root.as_item()?];
        for step in &self.steps {
            let mut next = Vec::new();
            for item in items {
                let container = match item {
                    Item::Container(raw) => Some((raw, raw.kind()?)),
                    _ => None,
                };
                match step {
                    Step::Member(name) => {
                        if let Some((raw, Kind::Object(n))) = container {
                            let all = raw.items()?;
                            if let Some(k) = (0..n).find(|&k| all[k] == Item::String(name)) {
                                next.push(all[n + k]);
                            }
                        }
                    }
                    Step::AllMembers => {
                        if let Some((raw, Kind::Object(n))) = container {
                            next.extend_from_slice(&raw.items()?[n..]);
                        }
                    }
                    Step::AllElements => match container {
                        Some((raw, Kind::Array(_))) => next.extend(raw.items()?),
                        _ => next.push(item),
                    },
                    Step::Descendants(spec) => descendants(item, 0, *spec, &mut next)?,
                    Step::Positions(specs) => {
                        if let Some((raw, Kind::Array(n))) = container {
                            let all = raw.items()?;
                            let len = n as i32;
                            for &(from, to) in specs {
                                let (lo, hi) = match to {
                                    None => (from.resolve(len), from.resolve(len)),
                                    Some(to) => (from.resolve(len).max(0), to.resolve(len).min(len as i64 - 1)),
                                };
                                for (k, it) in all.iter().enumerate() {
                                    if (lo..=hi).contains(&(k as i64)) {
                                        next.push(*it);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            items = next;
        }
        Ok(items)
    }
}

/// A column of JSON values as the functions take it: JSON text (parsed per row) or JSONB.
pub(super) enum Values<'a> {
    Text(Box<dyn Fn(usize) -> Option<&'a str> + 'a>),
    Jsonb(&'a arrow_array::LargeBinaryArray),
}

impl<'a> Values<'a> {
    pub(super) fn of(array: &'a dyn Array) -> Result<Values<'a>> {
        Ok(match array.data_type() {
            DataType::Utf8 => {
                let a = array.as_string::<i32>();
                Values::Text(Box::new(move |i| a.is_valid(i).then(|| a.value(i))))
            }
            DataType::LargeUtf8 => {
                let a = array.as_string::<i64>();
                Values::Text(Box::new(move |i| a.is_valid(i).then(|| a.value(i))))
            }
            DataType::LargeBinary => Values::Jsonb(array.as_binary::<i64>()),
            other => return Err(Error::invalid_input(format!("JSON functions take JSON values, not {other}"))),
        })
    }

    /// Row `i` as JSONB (`None` when null).
    pub(super) fn jsonb<'b>(&'b self, i: usize, buf: &'b mut Vec<u8>) -> Result<Option<&'b [u8]>> {
        match self {
            Values::Jsonb(a) => Ok(a.is_valid(i).then(|| a.value(i))),
            Values::Text(get) => match get(i) {
                None => Ok(None),
                Some(text) => {
                    buf.clear();
                    super::parse(text.as_bytes())?.encode_into(buf);
                    Ok(Some(buf.as_slice()))
                }
            },
        }
    }
}

/// What the functions return for each row.
enum Out {
    Text(StringBuilder),
    Bool(BooleanBuilder),
    Int(Int64Builder),
    Float(Float64Builder),
    Jsonb(LargeBinaryBuilder),
}

/// One row's answer (`None` is null).
enum Answer {
    Text(Option<String>),
    Bool(Option<bool>),
    Int(Option<i64>),
    Float(Option<f64>),
    Jsonb(Option<Vec<u8>>),
}

impl Out {
    fn push(&mut self, a: Answer) {
        match (self, a) {
            (Out::Text(b), Answer::Text(v)) => b.append_option(v),
            (Out::Bool(b), Answer::Bool(v)) => b.append_option(v),
            (Out::Int(b), Answer::Int(v)) => b.append_option(v),
            (Out::Float(b), Answer::Float(v)) => b.append_option(v),
            (Out::Jsonb(b), Answer::Jsonb(v)) => b.append_option(v),
            _ => unreachable!("answers match their builder"),
        }
    }

    fn push_null(&mut self) {
        match self {
            Out::Text(b) => b.append_null(),
            Out::Bool(b) => b.append_null(),
            Out::Int(b) => b.append_null(),
            Out::Float(b) => b.append_null(),
            Out::Jsonb(b) => b.append_null(),
        }
    }

    fn finish(self) -> ArrayRef {
        match self {
            Out::Text(mut b) => Arc::new(b.finish()),
            Out::Bool(mut b) => Arc::new(b.finish()),
            Out::Int(mut b) => Arc::new(b.finish()),
            Out::Float(mut b) => Arc::new(b.finish()),
            Out::Jsonb(mut b) => Arc::new(b.finish()),
        }
    }
}

/// `json_get`'s lookup: an object's member, or an array's element when `key` is a position.
fn get_by_key<'a>(root: Raw<'a>, key: &str) -> Result<Option<Item<'a>>> {
    Ok(match root.kind()? {
        Kind::Object(n) => {
            let all = root.items()?;
            (0..n).find(|&k| all[k] == Item::String(key)).map(|k| all[n + k])
        }
        Kind::Array(_) => match key.parse::<usize>() {
            Ok(i) => root.items()?.get(i).copied(),
            Err(_) => None,
        },
        Kind::Scalar => None,
    })
}

fn cast_error(function: &str, item: Item<'_>, to: &str) -> Error {
    let mut text = Vec::new();
    let _ = super::write_item(item, &mut text, 0);
    Error::invalid_input(format!("{function}: cannot convert {} to {to}", String::from_utf8_lossy(&text)))
}

/// A number as pylance's `json_get_string` prints it (floats as `zmij` prints them: NaN as
/// `NaN`, infinities as `inf` / `-inf`).
fn number_string(n: Number) -> String {
    match n {
        Number::Float(v) if v.is_nan() => "NaN".into(),
        Number::Float(v) if v.is_infinite() => if v > 0.0 { "inf" } else { "-inf" }.into(),
        n => {
            let mut out = Vec::new();
            n.write_text(&mut out);
            String::from_utf8_lossy(&out).into_owned()
        }
    }
}

fn float_to_i64(v: f64) -> Option<i64> {
    let r = v.round();
    (v.is_finite() && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&r)).then_some(r as i64)
}

fn number_to_i64(n: Number) -> Option<i64> {
    match n {
        Number::Int(v) => Some(v),
        Number::UInt(v) => i64::try_from(v).ok(),
        Number::Float(v) => float_to_i64(v),
    }
}

/// Evaluates JSON function `name` over `values` (JSON text or JSONB) with its constant
/// arguments `args` (a path or key, and for `json_array_contains` the value).
pub fn evaluate(name: &str, values: &dyn Array, args: &[&str]) -> Result<ArrayRef> {
    let want = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(Error::invalid_input(format!("{name} takes {} arguments, got {}", n + 1, args.len() + 1)))
        }
    };
    let takes_path = match name {
        "json_extract" | "json_exists" | "json_array_length" => want(1).map(|()| true)?,
        "json_array_contains" => want(2).map(|()| true)?,
        "json_get" | "json_get_string" | "json_get_int" | "json_get_float" | "json_get_bool" => want(1).map(|()| false)?,
        other => return Err(Error::not_supported(format!("JSON function {other}"))),
    };
    // The path is parsed at the first value (as pylance: all-null input never reads it).
    let mut path: Option<JsonPath> = None;
    let n = values.len();
    let mut out = match name {
        "json_extract" | "json_get_string" => Out::Text(StringBuilder::with_capacity(n, 0)),
        "json_exists" | "json_array_contains" | "json_get_bool" => Out::Bool(BooleanBuilder::with_capacity(n)),
        "json_array_length" | "json_get_int" => Out::Int(Int64Builder::with_capacity(n)),
        "json_get_float" => Out::Float(Float64Builder::with_capacity(n)),
        _ => Out::Jsonb(LargeBinaryBuilder::with_capacity(n, 0)),
    };
    let input = Values::of(values)?;
    let mut buf = Vec::new();
    for i in 0..n {
        let Some(bytes) = input.jsonb(i, &mut buf)? else {
            out.push_null();
            continue;
        };
        let root = Raw(bytes);
        if takes_path && path.is_none() {
            path = Some(JsonPath::parse(args[0])?);
        }
        let answer = match (name, &path) {
            ("json_extract", Some(p)) => {
                let found = p.select(root)?;
                Answer::Text(match found.len() {
                    0 => None,
                    1 => Some(super::item_text(found[0])?),
                    _ => {
                        let mut text = vec![b'['];
                        for (k, it) in found.iter().enumerate() {
                            if k > 0 {
                                text.push(b',');
                            }
                            super::write_item(*it, &mut text, 0)?;
                        }
                        text.push(b']');
                        Some(String::from_utf8_lossy(&text).into_owned())
                    }
                })
            }
            ("json_exists", Some(p)) => Answer::Bool(Some(!p.select(root)?.is_empty())),
            ("json_array_length", Some(p)) => match p.select(root)?.first() {
                None => Answer::Int(None),
                Some(Item::Container(raw)) if matches!(raw.kind()?, Kind::Array(_)) => {
                    Answer::Int(Some(raw.items()?.len() as i64))
                }
                // (not an array: no elements, as pylance counts them)
                Some(_) => Answer::Int(Some(0)),
            },
            ("json_array_contains", Some(p)) => {
                let wanted = args[1];
                let quoted = format!("\"{wanted}\"");
                let mut found = false;
                for it in p.select(root)? {
                    if let Item::Container(raw) = it {
                        if matches!(raw.kind()?, Kind::Array(_)) {
                            for e in raw.items()? {
                                let text = super::item_text(e)?;
                                if text == wanted || text == quoted {
                                    found = true;
                                }
                            }
                        }
                    }
                }
                Answer::Bool(Some(found))
            }
            _ => {
                let found = get_by_key(root, args[0])?;
                match (name, found) {
                    (_, None) | (_, Some(Item::Null)) if name != "json_get" => match name {
                        "json_get_string" => Answer::Text(None),
                        "json_get_int" => Answer::Int(None),
                        "json_get_float" => Answer::Float(None),
                        _ => Answer::Bool(None),
                    },
                    ("json_get", found) => Answer::Jsonb(found.map(item_to_jsonb)),
                    ("json_get_string", Some(it)) => Answer::Text(Some(match it {
                        Item::Bool(v) => v.to_string(),
                        Item::Number(n) => number_string(n),
                        Item::String(s) => s.to_string(),
                        other => return Err(cast_error(name, other, "a string")),
                    })),
                    ("json_get_int", Some(it)) => Answer::Int(Some(match it {
                        Item::Bool(v) => v as i64,
                        Item::Number(n) => number_to_i64(n).ok_or_else(|| cast_error(name, it, "an integer"))?,
                        Item::String(s) => s
                            .parse::<i64>()
                            .ok()
                            .or_else(|| s.parse::<f64>().ok().and_then(float_to_i64))
                            .ok_or_else(|| cast_error(name, it, "an integer"))?,
                        other => return Err(cast_error(name, other, "an integer")),
                    })),
                    ("json_get_float", Some(it)) => Answer::Float(Some(match it {
                        Item::Bool(v) => v as i64 as f64,
                        Item::Number(n) => n.as_f64(),
                        Item::String(s) => s.parse::<f64>().map_err(|_| cast_error(name, it, "a float"))?,
                        other => return Err(cast_error(name, other, "a float")),
                    })),
                    (_, None) => unreachable!("handled above"),
                    (_, Some(it)) => Answer::Bool(Some(match it {
                        Item::Bool(v) => v,
                        Item::String(s) if s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("yes") => true,
                        Item::String(s) if s.eq_ignore_ascii_case("false") || s.eq_ignore_ascii_case("no") => false,
                        other => return Err(cast_error(name, other, "a boolean")),
                    })),
                }
            }
        };
        out.push(answer);
    }
    Ok(out.finish())
}
