//! Arrow schema ↔ Lance schema, and what a field says about its pages: the physical shape of
//! its leaf values ([`LeafKind`]) and the writer hints in its metadata ([`FieldHints`]).
//! Below both the page layouts (`structural`) and the file container (`file`).
//!
//! A Lance schema is a flat list of `lance.file.Field` messages in depth-first pre-order,
//! parents before children, linked by `parent_id` (−1 at the top level). Types are spelled as
//! "logical type" strings (`int64`, `timestamp:us:UTC`, `fixed_size_list:float:128`, ...).
//! [`LanceSchema`] is the tree form used by the reader and writer; it converts both ways.
//!
//! Conventions (as pylance writes them): a fixed-size list of a primitive has no child field
//! (its item type is inside the logical type string and reads back as a nullable child named
//! `item`); `list`/`large_list` have one child; `map` has one child `entries` (a non-null
//! struct of `key`, `value`); a dictionary is `dict:{value}:{key}:false`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

use crate::error::{Error, Result};
use crate::format::filepb;

mod leaf;
pub use leaf::{FieldHints, LeafKind, Structural};

/// One field of a Lance schema, with its children.
#[derive(Debug, Clone, PartialEq)]
pub struct LanceField {
    /// Field id (unique in a schema; dataset ids need not be contiguous).
    pub id: i32,
    /// Field name.
    pub name: String,
    /// The Arrow type this field reads as.
    pub data_type: DataType,
    /// Whether nulls are allowed.
    pub nullable: bool,
    /// Field metadata (Arrow's string map; Lance stores bytes).
    pub metadata: HashMap<String, String>,
    /// Child fields (struct members, list item, map entries).
    pub children: Vec<LanceField>,
    /// Pylance 14's `unenforced_primary_key` flag, carried through unchanged.
    pub unenforced_primary_key: bool,
    /// Pylance 14's `unenforced_primary_key_position`, carried through unchanged.
    pub unenforced_primary_key_position: u32,
}

/// A Lance schema: top-level fields and schema metadata.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LanceSchema {
    /// Top-level fields in order.
    pub fields: Vec<LanceField>,
    /// Schema-level metadata.
    pub metadata: HashMap<String, String>,
}

fn time_unit_str(unit: &TimeUnit) -> &'static str {
    match unit {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    }
}

fn parse_time_unit(s: &str, logical: &str) -> Result<TimeUnit> {
    Ok(match s {
        "s" => TimeUnit::Second,
        "ms" => TimeUnit::Millisecond,
        "us" => TimeUnit::Microsecond,
        "ns" => TimeUnit::Nanosecond,
        _ => return Err(Error::corrupt(format!("unknown time unit in logical type {logical:?}"))),
    })
}

/// The Lance logical type string of an Arrow type.
pub fn logical_type_of(dt: &DataType) -> Result<String> {
    use DataType::*;
    Ok(match dt {
        Null => "null".into(),
        Boolean => "bool".into(),
        Int8 => "int8".into(),
        UInt8 => "uint8".into(),
        Int16 => "int16".into(),
        UInt16 => "uint16".into(),
        Int32 => "int32".into(),
        UInt32 => "uint32".into(),
        Int64 => "int64".into(),
        UInt64 => "uint64".into(),
        Float16 => "halffloat".into(),
        Float32 => "float".into(),
        Float64 => "double".into(),
        Decimal128(p, s) => format!("decimal:128:{p}:{s}"),
        Decimal256(p, s) => format!("decimal:256:{p}:{s}"),
        Utf8 => "string".into(),
        Binary => "binary".into(),
        LargeUtf8 => "large_string".into(),
        LargeBinary => "large_binary".into(),
        Date32 => "date32:day".into(),
        Date64 => "date64:ms".into(),
        Time32(u) => format!("time32:{}", time_unit_str(u)),
        Time64(u) => format!("time64:{}", time_unit_str(u)),
        Timestamp(u, tz) => format!("timestamp:{}:{}", time_unit_str(u), tz.as_deref().unwrap_or("-")),
        Duration(u) => format!("duration:{}", time_unit_str(u)),
        Struct(_) => "struct".into(),
        Dictionary(k, v) => format!("dict:{}:{}:false", logical_type_of(v)?, logical_type_of(k)?),
        List(item) => match item.data_type() {
            Struct(_) => "list.struct".into(),
            _ => "list".into(),
        },
        LargeList(item) => match item.data_type() {
            Struct(_) => "large_list.struct".into(),
            _ => "large_list".into(),
        },
        FixedSizeList(item, n) => match item.data_type() {
            List(_) | LargeList(_) | Map(_, _) | Dictionary(_, _) => {
                return Err(Error::not_supported(format!("fixed_size_list of {}", item.data_type())))
            }
            inner => format!("fixed_size_list:{}:{n}", logical_type_of(inner)?),
        },
        FixedSizeBinary(n) => format!("fixed_size_binary:{n}"),
        Map(_, sorted) => {
            if *sorted {
                return Err(Error::not_supported("map with keys_sorted=true"));
            }
            "map".into()
        }
        other => return Err(Error::not_supported(format!("Arrow type {other} in a Lance file"))),
    })
}

/// Parses a logical type string of a field without children (or whose children are given
/// separately, as for struct/list/map).
fn parse_leaf_logical_type(lt: &str) -> Result<Option<DataType>> {
    use DataType::*;
    Ok(Some(match lt {
        "null" => Null,
        "bool" => Boolean,
        "int8" => Int8,
        "uint8" => UInt8,
        "int16" => Int16,
        "uint16" => UInt16,
        "int32" => Int32,
        "uint32" => UInt32,
        "int64" => Int64,
        "uint64" => UInt64,
        "halffloat" => Float16,
        "float" => Float32,
        "double" => Float64,
        "string" => Utf8,
        "binary" => Binary,
        "large_string" => LargeUtf8,
        "large_binary" | "json" | "blob" => LargeBinary,
        "date32:day" => Date32,
        "date64:ms" => Date64,
        _ => {
            let parts: Vec<&str> = lt.split(':').collect();
            match parts[0] {
                "time32" if parts.len() == 2 => Time32(parse_time_unit(parts[1], lt)?),
                "time64" if parts.len() == 2 => Time64(parse_time_unit(parts[1], lt)?),
                "duration" if parts.len() == 2 => Duration(parse_time_unit(parts[1], lt)?),
                "timestamp" if parts.len() >= 3 => {
                    let tz = parts[2..].join(":");
                    Timestamp(parse_time_unit(parts[1], lt)?, if tz == "-" { None } else { Some(tz.into()) })
                }
                "decimal" if parts.len() == 4 => {
                    let bad = || Error::corrupt(format!("invalid decimal logical type {lt:?}"));
                    let p: u8 = parts[2].parse().map_err(|_| bad())?;
                    let s: i8 = parts[3].parse().map_err(|_| bad())?;
                    match parts[1] {
                        "128" => Decimal128(p, s),
                        "256" => Decimal256(p, s),
                        _ => return Err(bad()),
                    }
                }
                "fixed_size_binary" if parts.len() == 2 => {
                    FixedSizeBinary(parts[1].parse().map_err(|_| Error::corrupt(format!("invalid logical type {lt:?}")))?)
                }
                "fixed_size_list" if parts.len() >= 3 => {
                    let n: i32 =
                        parts[parts.len() - 1].parse().map_err(|_| Error::corrupt(format!("invalid logical type {lt:?}")))?;
                    let inner = parts[1..parts.len() - 1].join(":");
                    if inner == "struct" {
                        return Ok(None); // has a child field
                    }
                    if inner == "lance.bfloat16" {
                        return Err(Error::not_supported("bfloat16 vectors (fixed_size_list:lance.bfloat16)"));
                    }
                    let item =
                        parse_leaf_logical_type(&inner)?.ok_or_else(|| Error::corrupt(format!("invalid logical type {lt:?}")))?;
                    FixedSizeList(Arc::new(Field::new("item", item, true)), n)
                }
                "dict" if parts.len() == 4 => {
                    let v = parse_leaf_logical_type(parts[1])?
                        .ok_or_else(|| Error::corrupt(format!("invalid logical type {lt:?}")))?;
                    let k = parse_leaf_logical_type(parts[2])?
                        .ok_or_else(|| Error::corrupt(format!("invalid logical type {lt:?}")))?;
                    Dictionary(Box::new(k), Box::new(v))
                }
                "struct" | "list" | "large_list" | "list.struct" | "large_list.struct" | "map" => return Ok(None),
                _ => return Err(Error::not_supported(format!("Lance logical type {lt:?}"))),
            }
        }
    }))
}

impl LanceField {
    /// The Arrow field this Lance field reads as.
    pub fn to_arrow(&self) -> Field {
        Field::new(&self.name, self.data_type.clone(), self.nullable).with_metadata(self.metadata.clone())
    }

    /// Whether this is a blob-v2 column of a dataset (Arrow extension `lance.blob.v2`, a
    /// struct of `data` / `uri` in the manifest, stored as descriptions in data files).
    pub fn is_blob_v2(&self) -> bool {
        matches!(self.data_type, DataType::Struct(_))
            && self.metadata.get("ARROW:extension:name").is_some_and(|v| v == "lance.blob.v2")
    }

    /// Whether this is a blob column of a 2.0 / 2.1 file (large binary marked
    /// `lance-encoding:blob`): its values are stored out of line in the data file and its
    /// pages hold one `(position, size)` description per row.
    pub fn is_legacy_blob(&self) -> bool {
        matches!(self.data_type, DataType::LargeBinary) && is_blob_metadata(&self.metadata)
    }

    /// Whether this is a JSON column (Arrow extension `lance.json`: JSONB values in large
    /// binary; logical type `json`).
    pub fn is_json(&self) -> bool {
        crate::jsonb::arrow::is_lance_json_parts(&self.data_type, &self.metadata)
    }

    /// The Arrow field a dataset read returns for this field: [`Self::to_arrow`], except for
    /// blob columns, whose descriptions are returned (as pylance does by default), and JSON
    /// inside it, returned as JSON text (`arrow.json`, see [`crate::jsonb::arrow`]).
    pub fn output_arrow(&self) -> Field {
        if self.is_blob_v2() {
            let meta: HashMap<String, String> = [("lance-encoding:blob", "true"), ("lance-encoding:packed", "true")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .into();
            return Field::new(&self.name, blob_v2_description_type(), self.nullable).with_metadata(meta);
        }
        if self.is_legacy_blob() {
            let meta: HashMap<String, String> = [("lance-encoding:blob".to_string(), "true".to_string())].into();
            return Field::new(&self.name, legacy_blob_description_type(), self.nullable).with_metadata(meta);
        }
        crate::jsonb::arrow::text_field(&self.to_arrow())
    }

    /// How the reader decodes a legacy blob column's pages (see [`Self::is_legacy_blob`]):
    /// a packed struct of `(position, size)` descriptions, member field ids −1.
    pub fn legacy_blob_file_field(&self) -> LanceField {
        self.descriptions_field(legacy_blob_description_type())
    }

    /// Whether this is a struct stored row-major as one column (field metadata
    /// `lance-encoding:packed = true`).
    pub fn is_packed_struct(&self) -> bool {
        matches!(self.data_type, DataType::Struct(_))
            && self
                .metadata
                .get("lance-encoding:packed")
                .is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1" | "yes"))
    }

    /// Whether this field is a leaf column in 2.1+ files (everything except struct, list and
    /// map parents; a packed struct is a leaf).
    pub fn is_leaf(&self) -> bool {
        // (a struct without children is one column of nothing, as pylance writes it)
        if self.is_packed_struct() || matches!(&self.data_type, DataType::Struct(f) if f.is_empty()) {
            return true;
        }
        !matches!(self.data_type, DataType::Struct(_) | DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _))
            && (!matches!(self.data_type, DataType::FixedSizeList(_, _)) || self.children.is_empty())
    }

    /// The leaf columns under this field in 2.1+ files, in pre-order (packed structs are
    /// leaves; their children are not columns).
    pub fn leaf_fields(&self) -> Vec<&LanceField> {
        fn go<'a>(f: &'a LanceField, out: &mut Vec<&'a LanceField>) {
            if f.is_leaf() {
                out.push(f);
            } else {
                for c in &f.children {
                    go(c, out);
                }
            }
        }
        let mut out = Vec::new();
        go(self, &mut out);
        out
    }

    /// Depth-first pre-order walk over this field and its descendants.
    pub fn walk<'a>(&'a self, out: &mut Vec<&'a LanceField>) {
        out.push(self);
        for c in &self.children {
            c.walk(out);
        }
    }

    fn from_arrow(field: &Field, next_id: &mut i32) -> Result<LanceField> {
        // JSON text (`arrow.json`) is stored as JSONB (`lance.json`), as pylance stores it.
        if crate::jsonb::arrow::has_arrow_json(field) {
            return Self::from_arrow(&crate::jsonb::arrow::stored_field(field), next_id);
        }
        let id = *next_id;
        *next_id += 1;
        let children = match field.data_type() {
            DataType::Struct(fields) => fields.iter().map(|f| LanceField::from_arrow(f, next_id)).collect::<Result<Vec<_>>>()?,
            DataType::List(item) | DataType::LargeList(item) | DataType::Map(item, _) => {
                vec![LanceField::from_arrow(item, next_id)?]
            }
            DataType::FixedSizeList(item, _) if matches!(item.data_type(), DataType::Struct(_)) => {
                vec![LanceField::from_arrow(item, next_id)?]
            }
            _ => vec![],
        };
        // Validate now so that unsupported types fail before any byte is written.
        logical_type_of(field.data_type())?;
        let (unenforced_primary_key, unenforced_primary_key_position) = primary_key_mark(field)?;
        Ok(LanceField {
            id,
            name: field.name().clone(),
            data_type: field.data_type().clone(),
            nullable: field.is_nullable(),
            metadata: field.metadata().clone().into(),
            children,
            unenforced_primary_key,
            unenforced_primary_key_position,
        })
    }

    fn to_pb(&self, parent_id: i32, out: &mut Vec<filepb::Field>) -> Result<()> {
        let logical_type = match &self.data_type {
            // Children carry the struct's real item type, so the string is the generic one.
            DataType::FixedSizeList(item, n) if matches!(item.data_type(), DataType::Struct(_)) => {
                format!("fixed_size_list:struct:{n}")
            }
            _ if self.is_json() => "json".to_string(),
            dt => logical_type_of(dt)?,
        };
        let encoding = match &self.data_type {
            DataType::Struct(_) => filepb::Encoding::None,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => filepb::Encoding::VarBinary,
            DataType::Dictionary(_, _) => filepb::Encoding::Dictionary,
            _ => filepb::Encoding::Plain,
        };
        out.push(filepb::Field {
            r#type: filepb::field::Type::Parent as i32,
            name: self.name.clone(),
            id: self.id,
            parent_id,
            logical_type,
            nullable: self.nullable,
            encoding: encoding as i32,
            dictionary: None,
            extension_name: if self.is_blob_v2() {
                "lance.blob.v2".to_string()
            } else if self.is_json() {
                crate::jsonb::arrow::LANCE_JSON.to_string()
            } else {
                String::new()
            },
            metadata: self.metadata.iter().map(|(k, v)| (k.clone(), bytes::Bytes::from(v.clone().into_bytes()))).collect(),
            unenforced_primary_key: self.unenforced_primary_key,
            unenforced_primary_key_position: self.unenforced_primary_key_position,
        });
        for c in &self.children {
            // (a blob-v2 column's descriptor fields in a data file: id −1, parent −1, as pylance writes them)
            c.to_pb(if c.id == -1 { -1 } else { self.id }, out)?;
        }
        Ok(())
    }

    /// How a blob-v2 column is stored in a data file: one packed struct of descriptions
    /// (see [`blob_v2_description_type`]) whose member fields have id −1.
    pub fn blob_v2_file_field(&self) -> LanceField {
        self.descriptions_field(blob_v2_description_type())
    }

    /// This field as a packed struct of type `description` (member field ids −1).
    fn descriptions_field(&self, description: DataType) -> LanceField {
        let DataType::Struct(members) = description.clone() else { unreachable!("a struct") };
        let children = members
            .iter()
            .map(|m| LanceField {
                id: -1,
                name: m.name().clone(),
                data_type: m.data_type().clone(),
                nullable: m.is_nullable(),
                metadata: HashMap::new(),
                children: vec![],
                unenforced_primary_key: false,
                unenforced_primary_key_position: 0,
            })
            .collect();
        let metadata = [("lance-encoding:blob", "true"), ("lance-encoding:packed", "true")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
        LanceField {
            id: self.id,
            name: self.name.clone(),
            data_type: description,
            nullable: self.nullable,
            metadata,
            children,
            unenforced_primary_key: self.unenforced_primary_key,
            unenforced_primary_key_position: self.unenforced_primary_key_position,
        }
    }
}

/// Whether field metadata marks a blob column (`lance-encoding:blob` = true).
pub fn is_blob_metadata(m: &HashMap<String, String>) -> bool {
    m.get("lance-encoding:blob").is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1" | "yes"))
}

/// The Arrow type of a blob-v2 column's descriptions (what a scan returns for it by default):
/// `struct<kind: uint8, position: uint64, size: uint64, blob_id: uint32, blob_uri: utf8>`,
/// children not nullable.
pub fn blob_v2_description_type() -> DataType {
    DataType::Struct(
        vec![
            Field::new("kind", DataType::UInt8, false),
            Field::new("position", DataType::UInt64, false),
            Field::new("size", DataType::UInt64, false),
            Field::new("blob_id", DataType::UInt32, false),
            Field::new("blob_uri", DataType::Utf8, false),
        ]
        .into(),
    )
}

/// The Arrow type of a legacy (2.0 / 2.1) blob column's descriptions:
/// `struct<position: uint64, size: uint64>` (`position` an absolute offset in the data file).
pub fn legacy_blob_description_type() -> DataType {
    DataType::Struct(vec![Field::new("position", DataType::UInt64, true), Field::new("size", DataType::UInt64, true)].into())
}

fn metadata_from_pb(m: &std::collections::BTreeMap<String, bytes::Bytes>) -> HashMap<String, String> {
    m.iter().map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned())).collect()
}

/// Field metadata marking a field as part of the unenforced primary key: `true`, `1` or
/// `yes` (any case).
pub const PRIMARY_KEY_KEY: &str = "lance-schema:unenforced-primary-key";
/// Field metadata giving a primary-key field's 1-based position in a composite key (it
/// marks the field as a key field by itself).
pub const PRIMARY_KEY_POSITION_KEY: &str = "lance-schema:unenforced-primary-key:position";

/// (is a primary-key field, its position or 0) from an Arrow field's metadata.
fn primary_key_mark(field: &Field) -> Result<(bool, u32)> {
    let meta = field.metadata();
    let flagged = meta.get(PRIMARY_KEY_KEY).is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "yes"));
    let position = match meta.get(PRIMARY_KEY_POSITION_KEY) {
        None => 0,
        Some(v) => match v.trim().parse::<u32>() {
            Ok(p) if p >= 1 => p,
            _ => {
                return Err(Error::invalid_input(format!(
                    "field {:?}: {PRIMARY_KEY_POSITION_KEY} must be a positive integer, got {v:?}",
                    field.name()
                )))
            }
        },
    };
    Ok((flagged || position > 0, position))
}

/// A primary-key field must be a non-nullable leaf whose ancestors are non-nullable structs
/// (not lists or maps), as pylance requires; `plain_path` says whether that holds above `f`.
fn check_primary_key(f: &LanceField, plain_path: bool) -> Result<()> {
    if f.unenforced_primary_key {
        let why = if !plain_path || f.nullable {
            Some("it and all its ancestors must be non-nullable and not inside a list or map")
        } else if !f.children.is_empty() || matches!(f.data_type, DataType::Struct(_)) {
            Some("it must be a leaf field")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(Error::invalid_input(format!("field {:?} cannot be part of the primary key: {why}", f.name)));
        }
    }
    let plain = plain_path && !f.nullable && matches!(f.data_type, DataType::Struct(_));
    f.children.iter().try_for_each(|c| check_primary_key(c, plain))
}

impl LanceSchema {
    /// Converts an Arrow schema, numbering fields in pre-order from 0.
    pub fn from_arrow(schema: &Schema) -> Result<Self> {
        Self::from_arrow_with_first_id(schema, 0)
    }

    /// Converts an Arrow schema, numbering fields in pre-order from `first_id`.
    pub fn from_arrow_with_first_id(schema: &Schema, first_id: i32) -> Result<Self> {
        let mut next = first_id;
        let fields = schema.fields().iter().map(|f| LanceField::from_arrow(f, &mut next)).collect::<Result<Vec<_>>>()?;
        for f in &fields {
            check_primary_key(f, true)?;
        }
        Ok(Self { fields, metadata: schema.metadata().clone().into() })
    }

    /// The Arrow schema this Lance schema reads as.
    pub fn to_arrow(&self) -> SchemaRef {
        Arc::new(Schema::new(self.fields.iter().map(|f| f.to_arrow()).collect::<Vec<_>>()).with_metadata(self.metadata.clone()))
    }

    /// The Arrow schema callers see (pylance's `dataset.schema`): [`Self::to_arrow`] with JSON
    /// columns as JSON text (`arrow.json`), the form reads return and writes take.
    pub fn to_user_arrow(&self) -> SchemaRef {
        let fields = self.fields.iter().map(|f| crate::jsonb::arrow::text_field(&f.to_arrow())).collect::<Vec<_>>();
        Arc::new(Schema::new(fields).with_metadata(self.metadata.clone()))
    }

    /// The unenforced primary key's fields in key order (pylance's rule): fields with a
    /// position first, by position, then the other key fields in schema (pre-)order.
    pub fn primary_key(&self) -> Vec<&LanceField> {
        let mut keys: Vec<(usize, &LanceField)> =
            self.all_fields().into_iter().enumerate().filter(|(_, f)| f.unenforced_primary_key).collect();
        keys.sort_by_key(|(i, f)| (f.unenforced_primary_key_position == 0, f.unenforced_primary_key_position, *i));
        keys.into_iter().map(|(_, f)| f).collect()
    }

    /// All fields in pre-order.
    pub fn all_fields(&self) -> Vec<&LanceField> {
        let mut out = Vec::new();
        for f in &self.fields {
            f.walk(&mut out);
        }
        out
    }

    /// Largest field id, or −1 if there are none.
    pub fn max_field_id(&self) -> i32 {
        self.all_fields().iter().map(|f| f.id).max().unwrap_or(-1)
    }

    /// The flat protobuf field list (pre-order).
    pub fn to_pb_fields(&self) -> Result<Vec<filepb::Field>> {
        let mut out = Vec::new();
        for f in &self.fields {
            f.to_pb(-1, &mut out)?;
        }
        Ok(out)
    }

    /// Schema metadata as Lance stores it (bytes values).
    pub fn pb_metadata(&self) -> std::collections::BTreeMap<String, bytes::Bytes> {
        self.metadata.iter().map(|(k, v)| (k.clone(), bytes::Bytes::from(v.clone().into_bytes()))).collect()
    }

    /// Builds the tree from a flat protobuf field list.
    pub fn from_pb(fields: &[filepb::Field], metadata: &std::collections::BTreeMap<String, bytes::Bytes>) -> Result<Self> {
        // pylance 14 writes the descriptor fields of a blob-v2 column (kind, position, size,
        // blob_id, blob_uri) in data files with id −1 and parent −1, right after the blob
        // struct they belong to: adopt them as that struct's children.
        let mut adopted_by: Vec<Option<usize>> = vec![None; fields.len()];
        let mut open_blob: Option<usize> = None;
        for (i, f) in fields.iter().enumerate() {
            if f.id == -1 && f.parent_id == -1 {
                if let Some(b) = open_blob {
                    adopted_by[i] = Some(b);
                    continue;
                }
            }
            open_blob = (f.logical_type == "struct" && is_blob_metadata(&metadata_from_pb(&f.metadata))).then_some(i);
        }
        // Index children by parent, keeping the stored order.
        let mut children_of: HashMap<i32, Vec<usize>> = HashMap::new();
        let mut adopted: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut seen = std::collections::HashSet::new();
        for (i, f) in fields.iter().enumerate() {
            if let Some(b) = adopted_by[i] {
                adopted.entry(b).or_default().push(i);
                continue;
            }
            if !seen.insert(f.id) {
                return Err(Error::corrupt(format!("schema has two fields with id {}", f.id)));
            }
            children_of.entry(f.parent_id).or_default().push(i);
        }
        if adopted.keys().any(|b| children_of.contains_key(&fields[*b].id)) {
            return Err(Error::corrupt("blob column has both descriptor fields and children"));
        }
        let children_of = (children_of, adopted);
        fn build(
            idx: usize,
            fields: &[filepb::Field],
            children_of: &(HashMap<i32, Vec<usize>>, HashMap<usize, Vec<usize>>),
            depth: usize,
        ) -> Result<LanceField> {
            if depth > 64 {
                return Err(Error::corrupt("schema nesting deeper than 64 levels (cycle?)"));
            }
            let f = &fields[idx];
            // Adopted descriptor fields (id −1) have no children of their own.
            let kids = match children_of.1.get(&idx) {
                Some(k) => Some(k),
                None if f.id == -1 => None,
                None => children_of.0.get(&f.id),
            };
            let children = kids
                .map(|c| c.iter().map(|&i| build(i, fields, children_of, depth + 1)).collect::<Result<Vec<_>>>())
                .transpose()?
                .unwrap_or_default();
            let data_type = match parse_leaf_logical_type(&f.logical_type)? {
                Some(dt) => dt,
                None => nested_type(&f.logical_type, &children)?,
            };
            let mut metadata = metadata_from_pb(&f.metadata);
            if f.logical_type == "json" || f.extension_name == crate::jsonb::arrow::LANCE_JSON {
                // (the extension's name, should a writer have left it out of the metadata)
                metadata.entry("ARROW:extension:name".to_string()).or_insert_with(|| crate::jsonb::arrow::LANCE_JSON.to_string());
            }
            Ok(LanceField {
                id: f.id,
                name: f.name.clone(),
                data_type,
                nullable: f.nullable,
                metadata,
                children,
                unenforced_primary_key: f.unenforced_primary_key,
                unenforced_primary_key_position: f.unenforced_primary_key_position,
            })
        }
        let top = children_of.0.get(&-1).cloned().unwrap_or_default();
        let fields = top.iter().map(|&i| build(i, fields, &children_of, 0)).collect::<Result<Vec<_>>>()?;
        Ok(Self { fields, metadata: metadata_from_pb(metadata) })
    }

    /// Finds a top-level field by name.
    pub fn field(&self, name: &str) -> Option<&LanceField> {
        self.fields.iter().find(|f| f.name == name)
    }
}

fn nested_type(lt: &str, children: &[LanceField]) -> Result<DataType> {
    let one_child = || -> Result<Arc<Field>> {
        match children {
            [c] => Ok(Arc::new(c.to_arrow())),
            _ => Err(Error::corrupt(format!("a {lt:?} field must have exactly one child, found {}", children.len()))),
        }
    };
    Ok(match lt {
        "struct" => DataType::Struct(Fields::from(children.iter().map(|c| c.to_arrow()).collect::<Vec<_>>())),
        "list" | "list.struct" => DataType::List(one_child()?),
        "large_list" | "large_list.struct" => DataType::LargeList(one_child()?),
        "map" => DataType::Map(one_child()?, false),
        _ if lt.starts_with("fixed_size_list:struct:") => {
            let n: i32 = lt["fixed_size_list:struct:".len()..]
                .parse()
                .map_err(|_| Error::corrupt(format!("invalid logical type {lt:?}")))?;
            DataType::FixedSizeList(one_child()?, n)
        }
        _ => return Err(Error::corrupt(format!("invalid logical type {lt:?}"))),
    })
}

#[cfg(test)]
mod tests;
