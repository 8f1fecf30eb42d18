//! The values a JSON-path scalar index holds (pylance's `JsonIndexDetails` indices): the
//! value at one JSONPath of each row, typed as pylance's `json_extract_with_type` types it,
//! then converted to the one Arrow type the index was trained on.
//!
//! The type is the JSON type of the first non-null value met (see [`first_type`]); every
//! other non-null value must have it, except that a `Float64` index also takes integers. A
//! path that selects several values selects them as one array. Arrays and objects are
//! never indexed.

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use super::path::{JsonPath, Values};
use super::{Item, Kind, Number};
use crate::error::{Error, Result};

/// The JSON type of a value at a path (pylance's `JsonbType`; the names are its `Debug`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonType {
    /// Nothing found, or JSON `null`.
    Null,
    /// `true` / `false`.
    Boolean,
    /// An integer that fits `i64`.
    Int64,
    /// Any other number.
    Float64,
    /// A string.
    String,
    /// An array, or several values found.
    Array,
    /// An object.
    Object,
}

impl JsonType {
    fn of(item: Option<Item<'_>>) -> Result<JsonType> {
        Ok(match item {
            None | Some(Item::Null) => JsonType::Null,
            Some(Item::Bool(_)) => JsonType::Boolean,
            // (an integer beyond i64 is typed as a float, as pylance types it)
            Some(Item::Number(Number::Int(_))) => JsonType::Int64,
            Some(Item::Number(Number::UInt(v))) if i64::try_from(v).is_ok() => JsonType::Int64,
            Some(Item::Number(_)) => JsonType::Float64,
            Some(Item::String(_)) => JsonType::String,
            Some(Item::Container(raw)) => match raw.kind()? {
                Kind::Object(_) => JsonType::Object,
                _ => JsonType::Array,
            },
        })
    }

    /// The Arrow type an index of values of this JSON type holds.
    fn index_type(self, path: &str) -> Result<DataType> {
        Ok(match self {
            JsonType::Boolean => DataType::Boolean,
            JsonType::Int64 => DataType::Int64,
            JsonType::Float64 => DataType::Float64,
            JsonType::String | JsonType::Null => DataType::Utf8,
            JsonType::Array | JsonType::Object => {
                return Err(Error::invalid_input(format!(
                    "Cannot create a JSON index for JSON path '{path}' with JSON type {self:?}; only scalar values are supported"
                )))
            }
        })
    }
}

/// Selects `path` in row `i`: `None` for a null row or nothing found; several values found
/// come back as `Err(())` (an array, which no index holds).
fn select<'b>(path: &JsonPath, values: &'b Values<'_>, i: usize, buf: &'b mut Vec<u8>) -> Result<(bool, Option<Item<'b>>)> {
    let Some(bytes) = values.jsonb(i, buf)? else {
        return Ok((false, None));
    };
    let mut found = path.select(super::Raw(bytes))?;
    Ok(match found.len() {
        0 => (false, None),
        1 => (false, found.pop()),
        _ => (true, None),
    })
}

/// The Arrow type of the index over `path` of `values` (JSON text or JSONB): that of the
/// first value found that is not null; `None` when every value is null (the caller reads on,
/// and types an index of nulls only `Utf8`, as pylance does). An array or object first is
/// an error.
pub fn first_type(values: &dyn Array, path: &str) -> Result<Option<DataType>> {
    let input = Values::of(values)?;
    let path_parsed = JsonPath::parse(path)?;
    let mut buf = Vec::new();
    for i in 0..values.len() {
        let (several, item) = select(&path_parsed, &input, i, &mut buf)?;
        let kind = if several { JsonType::Array } else { JsonType::of(item)? };
        if kind != JsonType::Null {
            return kind.index_type(path).map(Some);
        }
    }
    Ok(None)
}

enum Out {
    Bool(BooleanBuilder),
    Int(Int64Builder),
    Float(Float64Builder),
    Text(StringBuilder),
}

/// The value at `path` of each of `values` (JSON text or JSONB) as `target` (`Boolean`,
/// `Int64`, `Float64` or `Utf8`): null where the row is null, nothing is found or the value
/// is JSON `null`. A value of another JSON type is an error naming its row (pylance's
/// message); a `Float64` target takes integers too.
pub fn index_values(values: &dyn Array, path: &str, target: &DataType) -> Result<ArrayRef> {
    let input = Values::of(values)?;
    let n = values.len();
    let mut out = match target {
        DataType::Boolean => Out::Bool(BooleanBuilder::with_capacity(n)),
        DataType::Int64 => Out::Int(Int64Builder::with_capacity(n)),
        DataType::Float64 => Out::Float(Float64Builder::with_capacity(n)),
        DataType::Utf8 => Out::Text(StringBuilder::with_capacity(n, 0)),
        other => return Err(Error::invalid_input(format!("Unsupported JSON index target type: {other:?}"))),
    };
    let path_parsed = JsonPath::parse(path)?;
    let mut buf = Vec::new();
    for i in 0..n {
        let (several, item) = select(&path_parsed, &input, i, &mut buf)?;
        let kind = if several { JsonType::Array } else { JsonType::of(item)? };
        let mismatch =
            || Error::invalid_input(format!("JSON path '{path}' expected {target:?}, but batch row {i} has JSON type {kind:?}"));
        if kind == JsonType::Null {
            match &mut out {
                Out::Bool(b) => b.append_null(),
                Out::Int(b) => b.append_null(),
                Out::Float(b) => b.append_null(),
                Out::Text(b) => b.append_null(),
            }
            continue;
        }
        match (&mut out, item) {
            (Out::Bool(b), Some(Item::Bool(v))) => b.append_value(v),
            (Out::Int(b), Some(Item::Number(num))) if kind == JsonType::Int64 => b.append_value(match num {
                Number::Int(v) => v,
                Number::UInt(v) => v as i64, // (at most i64::MAX: typed Int64)
                Number::Float(_) => return Err(mismatch()),
            }),
            (Out::Float(b), Some(Item::Number(num))) => b.append_value(num.as_f64()),
            (Out::Text(b), Some(Item::String(s))) => b.append_value(s),
            _ => return Err(mismatch()),
        }
    }
    Ok(match out {
        Out::Bool(mut b) => Arc::new(b.finish()),
        Out::Int(mut b) => Arc::new(b.finish()),
        Out::Float(mut b) => Arc::new(b.finish()),
        Out::Text(mut b) => Arc::new(b.finish()),
    })
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use arrow_array::StringArray;

    use super::*;

    fn docs(texts: &[Option<&str>]) -> StringArray {
        StringArray::from(texts.to_vec())
    }

    #[test]
    fn typed_by_the_first_value_found() {
        let a = docs(&[None, Some(r#"{"y":1}"#), Some(r#"{"x":null}"#), Some(r#"{"x":3}"#), Some(r#"{"x":2.5}"#)]);
        assert_eq!(first_type(&a, "x").unwrap(), Some(DataType::Int64));
        assert_eq!(first_type(&a, "$.y").unwrap(), Some(DataType::Int64));
        assert_eq!(first_type(&a, "z").unwrap(), None);
        let e = index_values(&a, "x", &DataType::Int64).unwrap_err().to_string();
        assert!(e.contains("JSON path 'x' expected Int64, but batch row 4 has JSON type Float64"), "{e}");
        let f = index_values(&a, "x", &DataType::Float64).unwrap();
        let f = f.as_primitive::<Float64Type>();
        assert_eq!(f.iter().collect::<Vec<_>>(), vec![None, None, None, Some(3.0), Some(2.5)]);
        // integers beyond i64 are floats; several values are an array
        let big = docs(&[Some(r#"{"x":18446744073709551615}"#)]);
        assert_eq!(first_type(&big, "x").unwrap(), Some(DataType::Float64));
        let e = first_type(&docs(&[Some(r#"{"x":[1,2]}"#)]), "x").unwrap_err().to_string();
        assert!(e.contains("with JSON type Array; only scalar values"), "{e}");
        let e = first_type(&docs(&[Some(r#"{"a":[{"b":1},{"b":2}]}"#)]), "$.a[*].b").unwrap_err().to_string();
        assert!(e.contains("JSON type Array"), "{e}");
        let i = index_values(&docs(&[Some(r#"{"n":{"y":-7}}"#), None]), "$.n.y", &DataType::Int64).unwrap();
        assert_eq!(i.as_primitive::<Int64Type>().iter().collect::<Vec<_>>(), vec![Some(-7), None]);
        let s = index_values(&docs(&[Some(r#"{"s":"\u00e9"}"#)]), "s", &DataType::Utf8).unwrap();
        assert_eq!(s.as_string::<i32>().value(0), "é");
        assert!(index_values(&docs(&[Some(r#"{"s":1}"#)]), "s", &DataType::Utf8).is_err());
        assert!(index_values(&docs(&[Some("not json")]), "s", &DataType::Utf8).is_err());
    }
}
