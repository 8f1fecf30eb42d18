//! What a field says about its pages: the physical shape of its leaf values ([`LeafKind`])
//! and the writer hints in its metadata ([`FieldHints`]).

use arrow_schema::DataType;

use super::LanceField;
use crate::encodings::GeneralScheme;
use crate::error::{Error, Result};

/// The physical shape of a leaf column's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeafKind {
    /// The null type (no values).
    Null,
    /// Booleans (1 bit each).
    Bool,
    /// Fixed-width values of `bytes` bytes.
    Fixed {
        /// Bytes per value.
        bytes: usize,
    },
    /// Variable-width values.
    Variable {
        /// Whether Arrow uses 64-bit offsets.
        large: bool,
    },
    /// A packed struct: fixed-width children stored row-major, `widths` bytes each.
    Packed {
        /// Bytes of each child.
        widths: Vec<usize>,
    },
    /// A packed struct with variable-width children (2.2): one variable-width row per value
    /// (see [`crate::encodings::PackedField`]).
    VarPacked {
        /// How each child is stored in a row.
        fields: Vec<crate::encodings::PackedField>,
    },
    /// Fixed-size lists of `dim` items.
    Fsl {
        /// Items per value.
        dim: usize,
        /// The item's shape.
        item: Box<LeafKind>,
    },
}

impl LeafKind {
    /// The shape of a leaf of Arrow type `dt`.
    pub fn of(dt: &DataType) -> Result<LeafKind> {
        use DataType::*;
        Ok(match dt {
            Null => LeafKind::Null,
            Boolean => LeafKind::Bool,
            Utf8 | Binary => LeafKind::Variable { large: false },
            LargeUtf8 | LargeBinary => LeafKind::Variable { large: true },
            FixedSizeBinary(n) => LeafKind::Fixed { bytes: *n as usize },
            Decimal128(_, _) => LeafKind::Fixed { bytes: 16 },
            Decimal256(_, _) => LeafKind::Fixed { bytes: 32 },
            Dictionary(_, v) => LeafKind::of(v)?,
            FixedSizeList(item, n) => {
                let item_kind = LeafKind::of(item.data_type())?;
                if matches!(item_kind, LeafKind::Variable { .. } | LeafKind::Fsl { .. } | LeafKind::Null) {
                    return Err(Error::not_supported(format!("fixed-size lists of {}", item.data_type())));
                }
                LeafKind::Fsl { dim: *n as usize, item: Box::new(item_kind) }
            }
            dt if dt.is_primitive() => LeafKind::Fixed { bytes: dt.primitive_width().unwrap_or(0) },
            // A struct without children has no values: stored as pylance stores it, one page
            // of nothing per column (a constant page), every row valid.
            Struct(fields) if fields.is_empty() => LeafKind::Null,
            other => return Err(Error::not_supported(format!("{other} as a leaf column"))),
        })
    }

    /// The shape of a leaf field (packed structs are one fixed-width value per row).
    pub fn of_field(field: &LanceField) -> Result<LeafKind> {
        if field.is_packed_struct() {
            use crate::encodings::PackedField;
            let mut fields = Vec::with_capacity(field.children.len());
            for c in &field.children {
                fields.push(match LeafKind::of(&c.data_type)? {
                    LeafKind::Fixed { bytes } => PackedField::Fixed { bits: bytes as u64 * 8 },
                    LeafKind::Variable { large } => PackedField::Variable { length_bits: if large { 64 } else { 32 } },
                    _ => {
                        return Err(Error::not_supported(format!(
                            "packed struct {:?}: child {:?} of type {} (packed children must be fixed-width, strings or binary)",
                            field.name, c.name, c.data_type
                        )))
                    }
                });
            }
            if fields.iter().all(|f| matches!(f, PackedField::Fixed { .. })) {
                let widths =
                    fields.iter().map(|f| if let PackedField::Fixed { bits } = f { *bits as usize / 8 } else { 0 }).collect();
                return Ok(LeafKind::Packed { widths });
            }
            return Ok(LeafKind::VarPacked { fields });
        }
        LeafKind::of(&field.data_type)
    }

    /// Bits of one value (fixed shapes only).
    pub fn bits(&self) -> Option<u64> {
        match self {
            LeafKind::Packed { widths } => Some(widths.iter().sum::<usize>() as u64 * 8),
            LeafKind::Bool => Some(1),
            LeafKind::Fixed { bytes } => Some(*bytes as u64 * 8),
            LeafKind::Fsl { dim, item } => item.bits().map(|b| b * *dim as u64),
            _ => None,
        }
    }
}

/// Writer hints from field metadata.
#[derive(Debug, Clone, Default)]
pub struct FieldHints {
    /// `lance-encoding:compression`: `Some(None)` = "none".
    pub compression: Option<Option<GeneralScheme>>,
    /// `lance-encoding:structural-encoding`.
    pub structural: Option<Structural>,
}

/// Forced structural layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Structural {
    /// Mini-block.
    MiniBlock,
    /// Full-zip.
    FullZip,
}

impl FieldHints {
    /// Reads the hints of a field.
    pub fn of(field: &LanceField) -> Result<Self> {
        let level = match field.metadata.get("lance-encoding:compression-level") {
            Some(l) => Some(l.trim().parse::<i32>().map_err(|_| {
                Error::invalid_input(format!(
                    "lance-encoding:compression-level {l:?} of field {:?} is not an integer",
                    field.name
                ))
            })?),
            None => None,
        };
        let compression = match field.metadata.get("lance-encoding:compression") {
            Some(c) => Some(GeneralScheme::from_name(c, level).map_err(|e| {
                Error::invalid_input(format!(
                    "field {:?}: {}",
                    field.name,
                    e.to_string().trim_start_matches("invalid argument: ")
                ))
            })?),
            None => None,
        };
        let structural = match field.metadata.get("lance-encoding:structural-encoding").map(|s| s.to_ascii_lowercase()) {
            Some(s) if s == "miniblock" => Some(Structural::MiniBlock),
            Some(s) if s == "fullzip" => Some(Structural::FullZip),
            Some(s) => {
                return Err(Error::invalid_input(format!(
                    "lance-encoding:structural-encoding {s:?} of field {:?}; expected miniblock or fullzip",
                    field.name
                )))
            }
            None => None,
        };
        Ok(Self { compression, structural })
    }
}
