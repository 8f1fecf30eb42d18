//! Page layouts and the structure of columns.
//!
//! * 2.1 / 2.2 layouts: [`miniblock`], [`fullzip`], [`constant`] (and blob pages, read by
//!   the file reader), each decoding to levels + values;
//! * [`repdef`]: repetition/definition levels and layers;
//! * [`builder`]: turns decoded values and levels into Arrow arrays;
//! * [`v2_0`]: the 2.0 `ArrayEncoding` trees; [`v2_0_nested`]: 2.0 struct and list columns.

pub mod assemble;
pub mod builder;
pub mod constant;
pub mod fullzip;
pub mod miniblock;
pub mod repdef;
pub mod shred;
pub mod v2_0;
pub mod v2_0_nested;

use crate::encodings::hash::FastHashMap;
use std::sync::Arc;

use arrow_array::{make_array, Array, ArrayRef};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;

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
            other => return Err(Error::not_supported(format!("{other} as a leaf column"))),
        })
    }

    /// The shape of a leaf field (packed structs are one fixed-width value per row).
    pub fn of_field(field: &crate::file::LanceField) -> Result<LeafKind> {
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

/// Dictionary-encodes `plain` with keys of type `key` (values keep first-seen order).
pub fn dictionary_encode(plain: &ArrayRef, key: &DataType) -> Result<ArrayRef> {
    let data = plain.to_data();
    let n = plain.len();
    // Each value as a byte range of one backing buffer.
    let off = data.offset();
    let (bytes, ranges): (&[u8], Vec<(usize, usize)>) = match plain.data_type() {
        DataType::Utf8 | DataType::Binary => {
            let o = &data.buffers()[0].typed_data::<i32>()[off..off + n + 1];
            (data.buffers()[1].as_slice(), o.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect())
        }
        DataType::LargeUtf8 | DataType::LargeBinary => {
            let o = &data.buffers()[0].typed_data::<i64>()[off..off + n + 1];
            (data.buffers()[1].as_slice(), o.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect())
        }
        dt => {
            let w = dt.primitive_width().ok_or_else(|| Error::not_supported(format!("dictionaries of {dt}")))?;
            (data.buffers()[0].as_slice(), (0..n).map(|i| ((off + i) * w, (off + i + 1) * w)).collect())
        }
    };
    let value_at = |i: usize| &bytes[ranges[i].0..ranges[i].1];
    let mut map: FastHashMap<&[u8], u64> = FastHashMap::default();
    let mut firsts: Vec<u32> = Vec::new();
    let mut keys: Vec<u64> = Vec::with_capacity(n);
    for i in 0..n {
        if plain.is_null(i) {
            keys.push(0);
            continue;
        }
        let next = map.len() as u64;
        let k = *map.entry(value_at(i)).or_insert_with(|| {
            firsts.push(i as u32);
            next
        });
        keys.push(k);
    }
    let max_key: u64 = match key {
        DataType::Int8 => i8::MAX as u64,
        DataType::Int16 => i16::MAX as u64,
        DataType::Int32 => i32::MAX as u64,
        DataType::Int64 => i64::MAX as u64,
        DataType::UInt8 => u8::MAX as u64,
        DataType::UInt16 => u16::MAX as u64,
        DataType::UInt32 => u32::MAX as u64,
        DataType::UInt64 => u64::MAX,
        other => return Err(Error::not_supported(format!("dictionary keys of type {other}"))),
    };
    if map.len() as u64 > max_key.saturating_add(1) {
        return Err(Error::invalid_input(format!("{} distinct values do not fit dictionary keys of type {key}", map.len())));
    }
    let width = key.primitive_width().unwrap();
    let mut kb = MutableBuffer::new(n * width);
    for k in keys {
        kb.extend_from_slice(&k.to_le_bytes()[..width]);
    }
    let idx = arrow_array::UInt32Array::from(firsts);
    let values = arrow_select::take::take(plain.as_ref(), &idx, None)?;
    let values = arrow_array::make_array(values.to_data().into_builder().nulls(None).build()?);
    let out = ArrayDataBuilder::new(DataType::Dictionary(Box::new(key.clone()), Box::new(plain.data_type().clone())))
        .len(n)
        .add_buffer(Buffer::from(kb))
        .add_child_data(values.to_data())
        .nulls(plain.nulls().cloned())
        .build()?;
    Ok(make_array(out))
}

/// Shared, immutable page buffers.
pub type PageBuffers = Arc<Vec<Buffer>>;
