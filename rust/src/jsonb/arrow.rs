//! JSON columns in Arrow: as stored (`lance.json`: JSONB in `LargeBinary`) and as callers
//! read and write them (`arrow.json`, Arrow's canonical JSON extension: text in `Utf8` or
//! `LargeUtf8`), at any depth inside structs and lists, as pylance converts them.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{GenericStringBuilder, LargeBinaryBuilder};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, FixedSizeListArray, LargeListArray, ListArray, MapArray, StructArray};
use arrow_schema::{DataType, Field, Fields, Metadata};

use crate::error::{Error, Result};

/// The extension name of a stored JSON column.
pub const LANCE_JSON: &str = "lance.json";
/// The extension name of JSON text (pyarrow's `pa.json_()`).
pub const ARROW_JSON: &str = "arrow.json";
const EXT_NAME: &str = "ARROW:extension:name";
const EXT_METADATA: &str = "ARROW:extension:metadata";

fn extension_is(metadata: &Metadata, name: &str) -> bool {
    metadata.get(EXT_NAME).is_some_and(|n| n == name)
}

/// Whether `field` is a stored JSON column (`LargeBinary`, extension `lance.json`).
pub fn is_lance_json(field: &Field) -> bool {
    field.data_type() == &DataType::LargeBinary && extension_is(field.metadata(), LANCE_JSON)
}

/// Whether `field` is JSON text (`Utf8` / `LargeUtf8`, extension `arrow.json`).
pub fn is_arrow_json(field: &Field) -> bool {
    matches!(field.data_type(), DataType::Utf8 | DataType::LargeUtf8) && extension_is(field.metadata(), ARROW_JSON)
}

/// Whether `metadata` and `data_type` make a stored JSON field (for Lance fields).
pub fn is_lance_json_parts(data_type: &DataType, metadata: &HashMap<String, String>) -> bool {
    data_type == &DataType::LargeBinary && metadata.get(EXT_NAME).is_some_and(|n| n == LANCE_JSON)
}

fn children_of(dt: &DataType) -> Vec<&Field> {
    match dt {
        DataType::Struct(fields) => fields.iter().map(|f| f.as_ref()).collect(),
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) | DataType::Map(f, _) => vec![f.as_ref()],
        _ => vec![],
    }
}

/// Whether `field` or a field inside it satisfies `leaf`.
fn contains(field: &Field, leaf: &dyn Fn(&Field) -> bool) -> bool {
    leaf(field) || children_of(field.data_type()).into_iter().any(|c| contains(c, leaf))
}

/// Whether `field` holds stored JSON anywhere.
pub fn has_lance_json(field: &Field) -> bool {
    contains(field, &is_lance_json)
}

/// Whether `field` holds JSON text anywhere.
pub fn has_arrow_json(field: &Field) -> bool {
    contains(field, &is_arrow_json)
}

fn with_extension(field: &Field, data_type: DataType, name: &str) -> Field {
    let mut metadata = field.metadata().clone();
    metadata.insert(EXT_NAME.to_string(), name.to_string());
    if !metadata.contains_key(EXT_METADATA) {
        metadata.insert(EXT_METADATA, "");
    }
    Field::new(field.name(), data_type, field.is_nullable()).with_metadata(metadata)
}

/// `field` with each field inside it that `leaf` maps replaced.
fn map_field(field: &Field, leaf: &dyn Fn(&Field) -> Option<Field>) -> Field {
    if let Some(f) = leaf(field) {
        return f;
    }
    let item = |f: &Arc<Field>| Arc::new(map_field(f, leaf));
    let data_type = match field.data_type() {
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(item).collect::<Fields>()),
        DataType::List(f) => DataType::List(item(f)),
        DataType::LargeList(f) => DataType::LargeList(item(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(item(f), *n),
        DataType::Map(f, sorted) => DataType::Map(item(f), *sorted),
        _ => return field.clone(),
    };
    Field::new(field.name(), data_type, field.is_nullable()).with_metadata(field.metadata().clone())
}

/// The field as reads return it: stored JSON (`lance.json`) as JSON text (`arrow.json` over
/// `Utf8`), at any depth; other fields as they are.
pub fn text_field(field: &Field) -> Field {
    if !has_lance_json(field) {
        return field.clone();
    }
    map_field(field, &|f| is_lance_json(f).then(|| with_extension(f, DataType::Utf8, ARROW_JSON)))
}

/// The field as stored: JSON text (`arrow.json`) as JSONB (`lance.json` over `LargeBinary`),
/// at any depth; other fields as they are.
pub fn stored_field(field: &Field) -> Field {
    if !has_arrow_json(field) {
        return field.clone();
    }
    map_field(field, &|f| is_arrow_json(f).then(|| with_extension(f, DataType::LargeBinary, LANCE_JSON)))
}

type Leaf<'a> = &'a dyn Fn(&ArrayRef, &Field) -> Result<Option<ArrayRef>>;

/// `array` rebuilt with each column inside it that `leaf` converts (for `target`, the field
/// its values become) converted; the nesting, offsets and validity are kept.
fn map_array(array: &ArrayRef, target: &Field, leaf: Leaf<'_>) -> Result<ArrayRef> {
    if let Some(done) = leaf(array, target)? {
        return Ok(done);
    }
    let mismatch = || {
        Error::SchemaMismatch(format!(
            "column {:?}: {} values for a {} field",
            target.name(),
            array.data_type(),
            target.data_type()
        ))
    };
    Ok(match target.data_type() {
        DataType::Struct(fields) => {
            let s = array.as_struct_opt().filter(|s| s.num_columns() == fields.len()).ok_or_else(mismatch)?;
            let columns =
                s.columns().iter().zip(fields.iter()).map(|(c, f)| map_array(c, f, leaf)).collect::<Result<Vec<_>>>()?;
            Arc::new(StructArray::try_new(fields.clone(), columns, s.nulls().cloned())?)
        }
        DataType::List(item) => {
            let l = array.as_list_opt::<i32>().ok_or_else(mismatch)?;
            Arc::new(ListArray::try_new(
                item.clone(),
                l.offsets().clone(),
                map_array(l.values(), item, leaf)?,
                l.nulls().cloned(),
            )?)
        }
        DataType::LargeList(item) => {
            let l = array.as_list_opt::<i64>().ok_or_else(mismatch)?;
            let values = map_array(l.values(), item, leaf)?;
            Arc::new(LargeListArray::try_new(item.clone(), l.offsets().clone(), values, l.nulls().cloned())?)
        }
        DataType::FixedSizeList(item, n) => {
            let l = array.as_fixed_size_list_opt().ok_or_else(mismatch)?;
            let values = map_array(l.values(), item, leaf)?;
            Arc::new(FixedSizeListArray::try_new(item.clone(), *n, values, l.nulls().cloned())?)
        }
        DataType::Map(entries, sorted) => {
            let m = array.as_any().downcast_ref::<MapArray>().ok_or_else(mismatch)?;
            let converted = map_array(&(Arc::new(m.entries().clone()) as ArrayRef), entries, leaf)?;
            let converted = converted.as_struct_opt().ok_or_else(mismatch)?.clone();
            Arc::new(MapArray::try_new(entries.clone(), m.offsets().clone(), converted, m.nulls().cloned(), *sorted)?)
        }
        _ => array.clone(),
    })
}

/// JSONB values as JSON text (`Utf8`; a batch whose text passes 2 GiB is refused).
pub fn jsonb_to_text(array: &dyn Array) -> Result<ArrayRef> {
    let values = array
        .as_binary_opt::<i64>()
        .ok_or_else(|| Error::SchemaMismatch(format!("JSON column stored as {}, not large_binary", array.data_type())))?;
    let mut out = GenericStringBuilder::<i32>::with_capacity(values.len(), values.value_data().len());
    let mut total = 0usize;
    let mut text = Vec::new();
    for v in values.iter() {
        match v {
            Some(bytes) => {
                text.clear();
                if super::write_text_checked(bytes, &mut text).is_err() {
                    text.clear();
                    text.extend_from_slice(super::to_text(bytes).as_bytes());
                }
                let s = std::str::from_utf8(&text).map_err(|_| Error::corrupt("JSONB text not UTF-8"))?;
                total += s.len();
                if total > i32::MAX as usize {
                    return Err(Error::invalid_input(
                        "a batch of JSON values holds over 2 GiB of text: read fewer rows at a time (batch_size)",
                    ));
                }
                out.append_value(s);
            }
            None => out.append_null(),
        }
    }
    Ok(Arc::new(out.finish()))
}

/// JSON text (`Utf8` / `LargeUtf8`) as JSONB; invalid JSON is an error naming the column.
pub fn text_to_jsonb(array: &dyn Array, column: &str) -> Result<ArrayRef> {
    fn encode_all<'a>(values: impl Iterator<Item = Option<&'a str>>, n: usize, column: &str) -> Result<ArrayRef> {
        let mut out = LargeBinaryBuilder::with_capacity(n, 0);
        let mut buf = Vec::new();
        for (row, v) in values.enumerate() {
            match v {
                Some(text) => {
                    let value = super::parse(text.as_bytes())
                        .map_err(|e| Error::invalid_input(format!("column {column:?}, row {row}: not JSON: {e}")))?;
                    buf.clear();
                    value.encode_into(&mut buf);
                    out.append_value(&buf);
                }
                None => out.append_null(),
            }
        }
        Ok(Arc::new(out.finish()))
    }
    match array.data_type() {
        DataType::Utf8 => encode_all(array.as_string::<i32>().iter(), array.len(), column),
        DataType::LargeUtf8 => encode_all(array.as_string::<i64>().iter(), array.len(), column),
        other => Err(Error::SchemaMismatch(format!("column {column:?}: JSON values must be strings, got {other}"))),
    }
}

/// `array` (values of a stored field) as reads return it for `target` ([`text_field`] of
/// the stored field): JSONB inside it becomes JSON text.
pub fn to_text_array(array: &ArrayRef, target: &Field) -> Result<ArrayRef> {
    map_array(array, target, &|a, f| {
        if is_arrow_json(f) && a.data_type() == &DataType::LargeBinary {
            return jsonb_to_text(a.as_ref()).map(Some);
        }
        Ok(None)
    })
}

/// `array` (values for a stored field `target`) as stored: JSON text inside it becomes
/// JSONB; values already JSONB (`LargeBinary`) are kept.
pub fn to_stored_array(array: &ArrayRef, target: &Field) -> Result<ArrayRef> {
    map_array(array, target, &|a, f| {
        if is_lance_json(f) && matches!(a.data_type(), DataType::Utf8 | DataType::LargeUtf8) {
            return text_to_jsonb(a.as_ref(), f.name()).map(Some);
        }
        Ok(None)
    })
}
