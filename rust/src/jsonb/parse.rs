//! JSON text → [`Value`], with the lenient syntax pylance 14 accepts when it stores JSON (its
//! vendored Databend parser), so that lancepy stores the same bytes for the same text:
//!
//! - literals in any mix of cases per letter (`True`, `NULL`), `NaN` and `Infinity`
//!   (optionally signed; `-NaN` is refused); empty or blank text is `null`;
//! - numbers with a leading `+`, leading zeros, a bare `.` on either side (`.5`, `5.`) and
//!   hexadecimal (`0x1F`, `-0x10`, `0x1.8`); a non-negative integer that fits 64 bits is
//!   unsigned, a negative one signed, everything else (fractions, exponents, larger
//!   integers) a float — `1.0` stays a float, `1.` is the integer 1;
//! - strings in double or single quotes; escapes `\" \\ \/ \b \f \n \r \t`, `\uXXXX` and
//!   `\u{XXXX}`; a lone or unpaired surrogate escape is kept as its six characters of text;
//! - object keys quoted either way or bare (letters, digits, `_`, `$` and non-ASCII, not
//!   starting with a digit); duplicate keys are refused; keys end up sorted by their bytes;
//! - empty array elements are `null` (`[1,,3]`, `[1,]`);
//! - between tokens, besides ASCII white space, the two-character texts `\n`, `\r`, `\t` and
//!   the four-character `\x0C` are skipped.

use std::borrow::Cow;

use super::{Number, Value, MAX_DEPTH};
use crate::error::{Error, Result};

/// Parses JSON text (see the module's documentation for the syntax accepted).
pub fn parse(text: &[u8]) -> Result<Value<'_>> {
    let mut p = Parser { buf: text, idx: 0, depth: 0 };
    let value = p.value()?;
    p.skip_unused();
    if p.idx < p.buf.len() {
        return Err(p.error("unexpected characters after the value"));
    }
    Ok(value)
}

struct Parser<'a> {
    buf: &'a [u8],
    idx: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn error(&self, what: &str) -> Error {
        Error::invalid_input(format!("invalid JSON at byte {}: {what}", self.idx))
    }

    fn peek(&self) -> Option<u8> {
        self.buf.get(self.idx).copied()
    }

    fn next(&self) -> Result<u8> {
        self.peek().ok_or_else(|| self.error("unexpected end of text"))
    }

    fn skip_unused(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_ascii_whitespace() {
                self.idx += 1;
            } else if c == b'\\' && matches!(self.buf.get(self.idx + 1), Some(b'n' | b'r' | b't')) {
                self.idx += 2;
            } else if c == b'\\' && self.buf.get(self.idx + 1..self.idx + 4) == Some(b"x0C") {
                self.idx += 4;
            } else {
                break;
            }
        }
    }

    /// Consumes `word`, each letter in its lower or upper case.
    fn word(&mut self, word: &[u8]) -> Result<()> {
        for &w in word {
            let c = self.next()?;
            self.idx += 1;
            if c != w && c != w.to_ascii_uppercase() {
                return Err(self.error("unknown literal"));
            }
        }
        Ok(())
    }

    fn value(&mut self) -> Result<Value<'a>> {
        self.skip_unused();
        let Some(c) = self.peek() else {
            return Ok(Value::Null);
        };
        match c {
            b'n' | b'N' => {
                let at = self.idx;
                if self.word(b"null").is_ok() {
                    return Ok(Value::Null);
                }
                self.idx = at;
                self.word(b"nan")?;
                Ok(Value::Number(Number::Float(f64::NAN)))
            }
            b't' | b'T' => self.word(b"true").map(|()| Value::Bool(true)),
            b'f' | b'F' => self.word(b"false").map(|()| Value::Bool(false)),
            b'i' | b'I' => self.word(b"infinity").map(|()| Value::Number(Number::Float(f64::INFINITY))),
            b'0'..=b'9' | b'-' | b'+' | b'.' => self.number().map(Value::Number),
            b'"' | b'\'' => {
                self.idx += 1;
                self.quoted(c).map(Value::String)
            }
            b'[' | b'{' => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return Err(self.error(&format!("nested deeper than {MAX_DEPTH} levels")));
                }
                let v = if c == b'[' { self.array() } else { self.object() };
                self.depth -= 1;
                v
            }
            _ => {
                self.idx += 1;
                Err(self.error("expected a value"))
            }
        }
    }

    fn digits(&mut self, radix: u32) -> usize {
        let start = self.idx;
        while self.peek().is_some_and(|c| (c as char).is_digit(radix)) {
            self.idx += 1;
        }
        self.idx - start
    }

    fn number(&mut self) -> Result<Number> {
        const MAX_EXACT_DIGITS: usize = 38;
        const MAX_COUNTED_DIGITS: usize = 76;
        let start = self.idx;
        let negative = self.peek() == Some(b'-');
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.idx += 1;
        }
        let mut leading_zeros = 0;
        while self.peek() == Some(b'0') {
            leading_zeros += 1;
            self.idx += 1;
        }
        // Significant digits (after the leading zeros) and those after the point.
        let mut value: i128 = 0;
        let (mut precision, mut scale, mut fraction) = (0usize, 0usize, false);
        while precision < MAX_COUNTED_DIGITS {
            match self.peek() {
                Some(d @ b'0'..=b'9') => {
                    if precision < MAX_EXACT_DIGITS {
                        value = value * 10 + (d - b'0') as i128;
                    }
                    self.idx += 1;
                    precision += 1;
                    scale += fraction as usize;
                }
                Some(b'.') => {
                    if fraction {
                        return Err(self.error("a number with two points"));
                    }
                    fraction = true;
                    self.idx += 1;
                }
                _ => break,
            }
        }
        if precision == MAX_COUNTED_DIGITS {
            if !fraction {
                precision += self.digits(10);
                if self.peek() == Some(b'.') {
                    fraction = true;
                    self.idx += 1;
                }
            }
            if fraction {
                let n = self.digits(10);
                precision += n;
                scale += n;
            }
        }
        if leading_zeros == 0 && precision == 0 {
            if !fraction {
                match self.peek() {
                    Some(b'i' | b'I') => {
                        self.word(b"infinity")?;
                        return Ok(Number::Float(if negative { f64::NEG_INFINITY } else { f64::INFINITY }));
                    }
                    Some(b'n' | b'N') if !negative => {
                        self.word(b"nan")?;
                        return Ok(Number::Float(f64::NAN));
                    }
                    _ => {}
                }
            }
            return Err(self.error("invalid number"));
        }
        if leading_zeros == 1 && precision == 0 && !fraction && matches!(self.peek(), Some(b'x' | b'X')) {
            return self.hex(negative);
        }
        let mut exponent = false;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            exponent = true;
            self.idx += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.idx += 1;
            }
            if self.digits(10) == 0 {
                return Err(self.error("an exponent without digits"));
            }
        }
        if !exponent && precision <= MAX_EXACT_DIGITS && scale == 0 {
            let value = if negative { -value } else { value };
            if let Ok(v) = u64::try_from(value) {
                return Ok(Number::UInt(v));
            }
            if let Ok(v) = i64::try_from(value) {
                return Ok(Number::Int(v));
            }
        }
        // The number's text as written (sign, zeros, point and exponent as they are).
        let text = std::str::from_utf8(&self.buf[start..self.idx]).map_err(|_| self.error("invalid number"))?;
        text.parse::<f64>().map(Number::Float).map_err(|_| self.error("invalid number"))
    }

    fn hex(&mut self, negative: bool) -> Result<Number> {
        self.idx += 1; // the x
        let int_start = self.idx;
        if self.digits(16) == 0 {
            return Err(self.error("a hexadecimal number without digits"));
        }
        let int_text = std::str::from_utf8(&self.buf[int_start..self.idx]).map_err(|_| self.error("invalid number"))?;
        let int = u128::from_str_radix(int_text, 16).map_err(|_| self.error("hexadecimal number too large"))?;
        if self.peek() == Some(b'.') {
            self.idx += 1;
            let frac_start = self.idx;
            let len = self.digits(16);
            if len == 0 {
                return Err(self.error("a hexadecimal fraction without digits"));
            }
            let frac_text = std::str::from_utf8(&self.buf[frac_start..self.idx]).map_err(|_| self.error("invalid number"))?;
            let frac = u128::from_str_radix(frac_text, 16).map_err(|_| self.error("hexadecimal number too large"))?;
            let v = int as f64 + frac as f64 / 16f64.powi(len as i32);
            return Ok(Number::Float(if negative { -v } else { v }));
        }
        Ok(if negative {
            if int <= i64::MAX as u128 + 1 {
                // (2^63 wraps to i64::MIN, which is its negation)
                Number::Int((int as i64).wrapping_neg())
            } else {
                Number::Float(-(int as f64))
            }
        } else {
            match u64::try_from(int) {
                Ok(v) => Number::UInt(v),
                Err(_) => Number::Float(int as f64),
            }
        })
    }

    /// A string after its opening `quote`.
    fn quoted(&mut self, quote: u8) -> Result<Cow<'a, str>> {
        let start = self.idx;
        let mut escaped = false;
        loop {
            let c = self.next()?;
            if c == b'\\' {
                escaped = true;
                self.idx += 1;
                let e = self.next()?;
                if e == b'u' {
                    self.idx += 1;
                    self.idx += if self.next()? == b'{' { 6 } else { 4 };
                } else {
                    self.idx += 1;
                }
            } else {
                self.idx += 1;
                if c == quote {
                    break;
                }
            }
        }
        let data = &self.buf[start..self.idx - 1];
        if !escaped {
            return std::str::from_utf8(data).map(Cow::Borrowed).map_err(|_| self.error("a string that is not UTF-8"));
        }
        unescape(data).map(Cow::Owned).map_err(|what| self.error(what))
    }

    fn bare_key(&mut self) -> Result<Cow<'a, str>> {
        let start = self.idx;
        if self.next()?.is_ascii_digit() {
            return Err(self.error("a bare object key starting with a digit"));
        }
        loop {
            let c = self.next()?;
            if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' {
                self.idx += 1;
            } else if c >= 0x80 {
                self.idx += match c {
                    0xF0.. => 4,
                    0xE0.. => 3,
                    0xC0.. => 2,
                    _ => return Err(self.error("invalid character in an object key")),
                };
            } else {
                break;
            }
        }
        if self.idx == start {
            return Err(self.error("expected an object key"));
        }
        let data = self.buf.get(start..self.idx).ok_or_else(|| self.error("unexpected end of text"))?;
        std::str::from_utf8(data).map(Cow::Borrowed).map_err(|_| self.error("an object key that is not UTF-8"))
    }

    /// Before a container's next item: `false` (and past it) at the closing `close`, else
    /// past the comma that must follow an earlier item (`after_item`) and any space.
    fn next_item(&mut self, close: u8, after_item: bool) -> Result<bool> {
        self.skip_unused();
        let c = self.next()?;
        if c == close {
            self.idx += 1;
            return Ok(false);
        }
        if after_item {
            if c != b',' {
                return Err(self.error(&format!("expected ',' or '{}'", close as char)));
            }
            self.idx += 1;
        }
        self.skip_unused();
        Ok(true)
    }

    fn array(&mut self) -> Result<Value<'a>> {
        self.idx += 1; // [
        let mut items = Vec::new();
        while self.next_item(b']', !items.is_empty())? {
            if matches!(self.peek(), Some(b',' | b']')) {
                items.push(Value::Null);
            } else {
                items.push(self.value()?);
            }
        }
        Ok(Value::Array(items))
    }

    fn object(&mut self) -> Result<Value<'a>> {
        self.idx += 1; // {
        let mut entries: Vec<(Cow<'a, str>, Value<'a>, usize)> = Vec::new();
        while self.next_item(b'}', !entries.is_empty())? {
            let key = match self.peek() {
                Some(q @ (b'"' | b'\'')) => {
                    self.idx += 1;
                    self.quoted(q)?
                }
                _ => self.bare_key()?,
            };
            let at = self.idx;
            self.skip_unused();
            if self.next()? != b':' {
                return Err(self.error("expected ':'"));
            }
            self.idx += 1;
            let value = self.value()?;
            entries.push((key, value, at));
        }
        entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        if let Some(w) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(Error::invalid_input(format!("invalid JSON at byte {}: duplicate object key {:?}", w[1].2, w[1].0)));
        }
        Ok(Value::Object(entries.into_iter().map(|(k, v, _)| (k, v)).collect()))
    }
}

fn hex4(digits: &[u8]) -> Option<u16> {
    digits.iter().try_fold(0u16, |n, &d| Some((n << 4) | (d as char).to_digit(16)? as u16))
}

/// Reads a `\u` escape's four digits (`XXXX` or `{XXXX}`) from `data`, returning them and
/// the bytes after.
fn unicode_digits(data: &[u8]) -> std::result::Result<(&[u8], &[u8]), &'static str> {
    if data.len() < 4 {
        return Err("a \\u escape cut short");
    }
    if data[0] == b'{' {
        if data.len() < 6 || data[5] != b'}' {
            return Err("a \\u{...} escape cut short");
        }
        return Ok((&data[1..5], &data[6..]));
    }
    Ok((&data[..4], &data[4..]))
}

fn push_literal_escape(digits: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"\\u");
    out.extend_from_slice(digits);
}

/// A quoted string's contents (between its quotes) with its escapes resolved.
fn unescape(mut data: &[u8]) -> std::result::Result<String, &'static str> {
    let mut out = Vec::with_capacity(data.len());
    while let Some((&b, rest)) = data.split_first() {
        data = rest;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let (&e, rest) = data.split_first().ok_or("a string ending in a backslash")?;
        data = rest;
        let simple = match e {
            b'\\' => b'\\',
            b'"' => b'"',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0C,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => 0,
            _ => return Err("an invalid escape"),
        };
        if e != b'u' {
            out.push(simple);
            continue;
        }
        let (digits, rest) = unicode_digits(data)?;
        data = rest;
        let n = hex4(digits).ok_or("an invalid hexadecimal digit in a \\u escape")?;
        let c = match n {
            0xDC00..=0xDFFF => None,
            0xD800..=0xDBFF => {
                if data.len() >= 2 && data[0] == b'\\' && data[1] == b'u' {
                    let (low_digits, rest) = unicode_digits(&data[2..])?;
                    data = rest;
                    let low = hex4(low_digits).ok_or("an invalid hexadecimal digit in a \\u escape")?;
                    if (0xDC00..=0xDFFF).contains(&low) {
                        char::from_u32((((n - 0xD800) as u32) << 10 | (low - 0xDC00) as u32) + 0x1_0000)
                    } else {
                        push_literal_escape(digits, &mut out);
                        push_literal_escape(low_digits, &mut out);
                        continue;
                    }
                } else {
                    None
                }
            }
            n => char::from_u32(n as u32),
        };
        match c {
            Some(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            None => push_literal_escape(digits, &mut out),
        }
    }
    String::from_utf8(out).map_err(|_| "a string that is not UTF-8")
}
