//! JSON values as Lance stores them: columns of Arrow extension `lance.json`, whose values are
//! JSONB, the binary layout pylance 14 writes (Databend's JSONB as vendored in `lance-jsonb`).
//!
//! Callers read and write such a column as JSON text (Arrow's canonical extension
//! `arrow.json`, pyarrow's `pa.json_()`); [`arrow`] converts between the two forms, [`parse`]
//! turns text into JSONB and [`to_text`] turns it back.
//!
//! # Layout (all integers big-endian)
//! A value is a *container*: a 4-byte header, whose top 3 bits say scalar (`0x2`), object
//! (`0x4`) or array (`0x8`) and whose low 29 bits count its entries, then one 4-byte *entry*
//! per item (a scalar has one; an object has one per key, then one per value), then the
//! items' payloads, back to back. An entry's bits 28–30 give the item's type (null, string,
//! number, false, true, container, extension) and its low 28 bits the payload's length; a
//! nested array or object is a container payload. Object keys are sorted by their bytes and
//! unique. Numbers are a tag byte (`0x00` zero, `0x10` NaN, `0x20` +∞, `0x30` −∞, `0x40`
//! signed, `0x50` unsigned, `0x60` float64, `0x70` decimal) and the value in the fewest of 1,
//! 2, 4 or 8 bytes (a float64 always 8; a decimal its value and a scale byte).
//!
//! # Text
//! [`to_text`] writes what pylance's reads return: compact JSON (no spaces), keys in stored
//! order, strings escaped and floats printed as `serde_json` does (NaN and ±∞ as `null`).
//! A value whose bytes are not valid JSONB reads as its bytes taken as UTF-8 (lossy), `null`
//! when empty, as pylance reads it; it never panics or reads out of bounds.

pub mod arrow;
pub mod index;
mod parse;
pub mod path;

use std::io::Write;

use crate::error::{Error, Result};

pub use parse::parse;

const HEADER_TYPE: u32 = 0xE000_0000;
const HEADER_LEN: u32 = 0x1FFF_FFFF;
const ARRAY: u32 = 0x8000_0000;
const OBJECT: u32 = 0x4000_0000;
const SCALAR: u32 = 0x2000_0000;

const ENTRY_TYPE: u32 = 0x7000_0000;
const ENTRY_LEN: u32 = 0x0FFF_FFFF;
const NULL: u32 = 0x0000_0000;
const STRING: u32 = 0x1000_0000;
const NUMBER: u32 = 0x2000_0000;
const FALSE: u32 = 0x3000_0000;
const TRUE: u32 = 0x4000_0000;
const CONTAINER: u32 = 0x5000_0000;

const NUM_ZERO: u8 = 0x00;
const NUM_NAN: u8 = 0x10;
const NUM_INF: u8 = 0x20;
const NUM_NEG_INF: u8 = 0x30;
const NUM_INT: u8 = 0x40;
const NUM_UINT: u8 = 0x50;
const NUM_FLOAT: u8 = 0x60;
const NUM_DECIMAL: u8 = 0x70;

/// Containers nested deeper than this are refused (parsing) or not valid JSONB (reading):
/// recursion stays far from the end of a thread's stack.
pub const MAX_DEPTH: usize = 1000;

/// A JSON number as JSONB keeps it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// A negative integer (or one written as a signed integer).
    Int(i64),
    /// A non-negative integer.
    UInt(u64),
    /// Anything else: fractions, exponents, integers beyond 64 bits, NaN and ±∞.
    Float(f64),
}

impl Number {
    fn encode(self, out: &mut Vec<u8>) {
        match self {
            Number::Int(0) | Number::UInt(0) => out.push(NUM_ZERO),
            Number::Int(v) => {
                out.push(NUM_INT);
                if let Ok(v) = i8::try_from(v) {
                    out.extend_from_slice(&v.to_be_bytes());
                } else if let Ok(v) = i16::try_from(v) {
                    out.extend_from_slice(&v.to_be_bytes());
                } else if let Ok(v) = i32::try_from(v) {
                    out.extend_from_slice(&v.to_be_bytes());
                } else {
                    out.extend_from_slice(&v.to_be_bytes());
                }
            }
            Number::UInt(v) => {
                out.push(NUM_UINT);
                if let Ok(v) = u8::try_from(v) {
                    out.extend_from_slice(&v.to_be_bytes());
                } else if let Ok(v) = u16::try_from(v) {
                    out.extend_from_slice(&v.to_be_bytes());
                } else if let Ok(v) = u32::try_from(v) {
                    out.extend_from_slice(&v.to_be_bytes());
                } else {
                    out.extend_from_slice(&v.to_be_bytes());
                }
            }
            Number::Float(v) if v.is_nan() => out.push(NUM_NAN),
            Number::Float(v) if v.is_infinite() => out.push(if v > 0.0 { NUM_INF } else { NUM_NEG_INF }),
            Number::Float(v) => {
                out.push(NUM_FLOAT);
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
    }

    /// Decodes a number's payload; decimals (which lance never writes, but reads) become
    /// floats, as pylance prints them.
    fn decode(bytes: &[u8]) -> Result<Number> {
        let bad = || Error::corrupt(format!("invalid JSONB number ({} bytes)", bytes.len()));
        let (&tag, v) = bytes.split_first().ok_or_else(bad)?;
        Ok(match (tag, v.len()) {
            (NUM_ZERO, _) => Number::UInt(0),
            (NUM_NAN, _) => Number::Float(f64::NAN),
            (NUM_INF, _) => Number::Float(f64::INFINITY),
            (NUM_NEG_INF, _) => Number::Float(f64::NEG_INFINITY),
            (NUM_INT, 1) => Number::Int(i8::from_be_bytes([v[0]]) as i64),
            (NUM_INT, 2) => Number::Int(i16::from_be_bytes([v[0], v[1]]) as i64),
            (NUM_INT, 4) => Number::Int(i32::from_be_bytes(v.try_into().map_err(|_| bad())?) as i64),
            (NUM_INT, 8) => Number::Int(i64::from_be_bytes(v.try_into().map_err(|_| bad())?)),
            (NUM_UINT, 1) => Number::UInt(v[0] as u64),
            (NUM_UINT, 2) => Number::UInt(u16::from_be_bytes([v[0], v[1]]) as u64),
            (NUM_UINT, 4) => Number::UInt(u32::from_be_bytes(v.try_into().map_err(|_| bad())?) as u64),
            (NUM_UINT, 8) => Number::UInt(u64::from_be_bytes(v.try_into().map_err(|_| bad())?)),
            (NUM_FLOAT, 8) => Number::Float(f64::from_be_bytes(v.try_into().map_err(|_| bad())?)),
            // Decimal64: value, scale.
            (NUM_DECIMAL, 9) => {
                let value = i64::from_be_bytes(v[..8].try_into().map_err(|_| bad())?);
                Number::Float(value as f64 / 10f64.powi(v[8] as i32))
            }
            // Decimal128: value, scale (17) or value, precision, scale (18, an older form).
            (NUM_DECIMAL, 17 | 18) => {
                let value = i128::from_be_bytes(v[..16].try_into().map_err(|_| bad())?);
                Number::Float(value as f64 / 10f64.powi(v[v.len() - 1] as i32))
            }
            // Decimal256, the same two forms: the value's high and low halves.
            (NUM_DECIMAL, 33 | 34) => {
                let hi = i128::from_be_bytes(v[..16].try_into().map_err(|_| bad())?);
                let lo = u128::from_be_bytes(v[16..32].try_into().map_err(|_| bad())?);
                let value = hi as f64 * 2f64.powi(128) + lo as f64;
                Number::Float(value / 10f64.powi(v[v.len() - 1] as i32))
            }
            _ => return Err(bad()),
        })
    }

    /// The number as JSON text, as pylance prints it (`serde_json`: shortest round-trip
    /// floats, `null` for NaN and ±∞).
    fn write_text(self, out: &mut Vec<u8>) {
        // (writes to a Vec cannot fail)
        let _ = match self {
            Number::Int(v) => write!(out, "{v}"),
            Number::UInt(v) => write!(out, "{v}"),
            Number::Float(v) => serde_json::to_writer(&mut *out, &v).map_err(std::io::Error::other),
        };
    }

    /// The number as an `f64`.
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Int(v) => v as f64,
            Number::UInt(v) => v as f64,
            Number::Float(v) => v,
        }
    }
}

/// A parsed JSON value, borrowing from the text where it can.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number.
    Number(Number),
    /// A string.
    String(std::borrow::Cow<'a, str>),
    /// An array.
    Array(Vec<Value<'a>>),
    /// An object, its keys sorted by their bytes and unique.
    Object(Vec<(std::borrow::Cow<'a, str>, Value<'a>)>),
}

impl Value<'_> {
    /// This value as JSONB.
    pub fn to_jsonb(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// Appends this value as JSONB to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        match self {
            Value::Array(items) => encode_array(items, out),
            Value::Object(entries) => encode_object(entries, out),
            scalar => {
                out.extend_from_slice(&SCALAR.to_be_bytes());
                let at = reserve(out, 1);
                let entry = encode_item(scalar, out);
                put_entry(out, at, entry);
            }
        }
    }
}

fn reserve(out: &mut Vec<u8>, entries: usize) -> usize {
    let at = out.len();
    out.resize(at + 4 * entries, 0);
    at
}

fn put_entry(out: &mut [u8], at: usize, entry: u32) {
    out[at..at + 4].copy_from_slice(&entry.to_be_bytes());
}

/// Appends `value`'s payload and returns its entry (type and length).
fn encode_item(value: &Value<'_>, out: &mut Vec<u8>) -> u32 {
    let start = out.len();
    let kind = match value {
        Value::Null => NULL,
        Value::Bool(true) => TRUE,
        Value::Bool(false) => FALSE,
        Value::Number(n) => {
            n.encode(out);
            NUMBER
        }
        Value::String(s) => {
            out.extend_from_slice(s.as_bytes());
            STRING
        }
        Value::Array(items) => {
            encode_array(items, out);
            CONTAINER
        }
        Value::Object(entries) => {
            encode_object(entries, out);
            CONTAINER
        }
    };
    kind | ((out.len() - start) as u32 & ENTRY_LEN)
}

fn encode_array(items: &[Value<'_>], out: &mut Vec<u8>) {
    out.extend_from_slice(&(ARRAY | (items.len() as u32 & HEADER_LEN)).to_be_bytes());
    let at = reserve(out, items.len());
    for (k, item) in items.iter().enumerate() {
        let entry = encode_item(item, out);
        put_entry(out, at + 4 * k, entry);
    }
}

fn encode_object(entries: &[(std::borrow::Cow<'_, str>, Value<'_>)], out: &mut Vec<u8>) {
    let n = entries.len();
    out.extend_from_slice(&(OBJECT | (n as u32 & HEADER_LEN)).to_be_bytes());
    let at = reserve(out, 2 * n);
    for (k, (key, _)) in entries.iter().enumerate() {
        out.extend_from_slice(key.as_bytes());
        put_entry(out, at + 4 * k, STRING | (key.len() as u32 & ENTRY_LEN));
    }
    for (k, (_, value)) in entries.iter().enumerate() {
        let entry = encode_item(value, out);
        put_entry(out, at + 4 * (n + k), entry);
    }
}

/// JSON text as JSONB: `text` parsed as pylance parses it (see [`parse`]).
pub fn encode(text: &str) -> Result<Vec<u8>> {
    Ok(parse(text.as_bytes())?.to_jsonb())
}

/// One item of a container, borrowed from the JSONB bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Item<'a> {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number.
    Number(Number),
    /// A string.
    String(&'a str),
    /// An array or object: its whole container.
    Container(Raw<'a>),
}

/// A JSONB value (a container's bytes), read without copying; every read checks bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Raw<'a>(pub &'a [u8]);

/// What kind of container a [`Raw`] is, with its entry count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A single scalar.
    Scalar,
    /// An array of `n` items.
    Array(usize),
    /// An object of `n` keys.
    Object(usize),
}

impl<'a> Raw<'a> {
    fn u32_at(&self, at: usize) -> Result<u32> {
        let b = self.0.get(at..at + 4).ok_or_else(|| Error::corrupt("truncated JSONB value"))?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The container's kind.
    pub fn kind(&self) -> Result<Kind> {
        let h = self.u32_at(0)?;
        let n = (h & HEADER_LEN) as usize;
        match h & HEADER_TYPE {
            SCALAR => Ok(Kind::Scalar),
            ARRAY => Ok(Kind::Array(n)),
            OBJECT => Ok(Kind::Object(n)),
            other => Err(Error::corrupt(format!("invalid JSONB container header {other:#x}"))),
        }
    }

    /// The items of this container: a scalar's one value, an array's elements, or an
    /// object's keys followed by its values (keys as [`Item::String`]).
    pub fn items(&self) -> Result<Vec<Item<'a>>> {
        let count = match self.kind()? {
            Kind::Scalar => 1,
            Kind::Array(n) => n,
            Kind::Object(n) => n.checked_mul(2).ok_or_else(|| Error::corrupt("JSONB object too large"))?,
        };
        // Each entry takes 4 bytes: a count beyond the bytes present is corrupt, refused
        // before anything is allocated for it.
        if count > self.0.len() / 4 {
            return Err(Error::corrupt("JSONB container counts more entries than its bytes hold"));
        }
        let mut payload = 4 + 4 * count;
        let mut items = Vec::with_capacity(count);
        for k in 0..count {
            let entry = self.u32_at(4 + 4 * k)?;
            let len = (entry & ENTRY_LEN) as usize;
            let bytes = self.0.get(payload..payload + len).ok_or_else(|| Error::corrupt("JSONB item past its container"))?;
            payload += len;
            items.push(match entry & ENTRY_TYPE {
                NULL => Item::Null,
                TRUE => Item::Bool(true),
                FALSE => Item::Bool(false),
                NUMBER => Item::Number(Number::decode(bytes)?),
                STRING => Item::String(std::str::from_utf8(bytes).map_err(|_| Error::corrupt("JSONB string not UTF-8"))?),
                CONTAINER => Item::Container(Raw(bytes)),
                other => return Err(Error::not_supported(format!("JSONB item type {other:#x} (extension values)"))),
            });
        }
        Ok(items)
    }

    /// This value as a single item: a scalar's value, or the container itself.
    pub fn as_item(&self) -> Result<Item<'a>> {
        match self.kind()? {
            Kind::Scalar => match self.items()?[0] {
                Item::Container(_) => Err(Error::corrupt("JSONB scalar holds a container")),
                item => Ok(item),
            },
            _ => Ok(Item::Container(*self)),
        }
    }

    fn write_text(&self, out: &mut Vec<u8>, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(Error::corrupt("JSONB nested too deeply"));
        }
        let items = self.items()?;
        match self.kind()? {
            Kind::Scalar => match items[0] {
                Item::Container(_) => Err(Error::corrupt("JSONB scalar holds a container")),
                item => write_item(item, out, depth),
            },
            Kind::Array(_) => {
                out.push(b'[');
                for (k, item) in items.into_iter().enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    write_item(item, out, depth)?;
                }
                out.push(b']');
                Ok(())
            }
            Kind::Object(n) => {
                out.push(b'{');
                for k in 0..n {
                    if k > 0 {
                        out.push(b',');
                    }
                    match items[k] {
                        Item::String(key) => write_string(key, out),
                        _ => return Err(Error::corrupt("JSONB object key is not a string")),
                    }
                    out.push(b':');
                    write_item(items[n + k], out, depth)?;
                }
                out.push(b'}');
                Ok(())
            }
        }
    }
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    // serde_json's escaping, as pylance prints strings.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn write_item(item: Item<'_>, out: &mut Vec<u8>, depth: usize) -> Result<()> {
    match item {
        Item::Null => out.extend_from_slice(b"null"),
        Item::Bool(true) => out.extend_from_slice(b"true"),
        Item::Bool(false) => out.extend_from_slice(b"false"),
        Item::Number(n) => n.write_text(out),
        Item::String(s) => write_string(s, out),
        Item::Container(raw) => return raw.write_text(out, depth + 1),
    }
    Ok(())
}

/// JSONB bytes as JSON text, as pylance reads them (see the module's documentation).
pub fn to_text(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    match write_text_checked(bytes, &mut out) {
        Ok(()) => String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        Err(_) if bytes.is_empty() => "null".to_string(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// Appends `bytes` as JSON text to `out`; on an error `out` may hold part of it.
pub fn write_text_checked(bytes: &[u8], out: &mut Vec<u8>) -> Result<()> {
    Raw(bytes).write_text(out, 0)
}

/// An item as JSON text (what [`to_text`] prints for it), written straight from its bytes.
pub fn item_text(item: Item<'_>) -> Result<String> {
    let mut out = Vec::new();
    write_item(item, &mut out, 0)?;
    String::from_utf8(out).map_err(|_| Error::corrupt("JSONB text not UTF-8"))
}

/// An item as its own JSONB value (a container is already one; a scalar gets a scalar
/// container).
pub fn item_to_jsonb(item: Item<'_>) -> Vec<u8> {
    match item {
        Item::Container(raw) => raw.0.to_vec(),
        Item::Null => Value::Null.to_jsonb(),
        Item::Bool(b) => Value::Bool(b).to_jsonb(),
        Item::Number(n) => Value::Number(n).to_jsonb(),
        Item::String(s) => Value::String(s.into()).to_jsonb(),
    }
}

#[cfg(test)]
mod tests;
