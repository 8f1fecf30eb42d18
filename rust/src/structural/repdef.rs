//! Repetition and definition levels (file versions 2.1+).
//!
//! A leaf column's structure is described by `layers`, innermost first (the leaf item, then
//! each enclosing struct or list up to the top-level field). Definition levels count from
//! the innermost layer outward: walking the layers, a nullable item or nullable list uses one
//! level, an emptyable list one, a list that can be both null and empty two (null first),
//! all-valid layers none; 0 means "valid at every layer". Repetition levels mark where lists
//! start (`max_rep` starts a new row). Both streams are u16.

use crate::error::{Error, Result};
use crate::format::enc21::RepDefLayer;

/// One structural layer of a leaf column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    /// An item (or struct) that is never null.
    AllValidItem,
    /// A list that is never null or empty.
    AllValidList,
    /// An item (or struct) that may be null.
    NullableItem,
    /// A list that may be null (not empty).
    NullableList,
    /// A list that may be empty (not null).
    EmptyableList,
    /// A list that may be null or empty.
    NullAndEmptyList,
}

impl Layer {
    /// Parses the protobuf enum value.
    pub fn from_pb(v: i32) -> Result<Layer> {
        Ok(match RepDefLayer::try_from(v) {
            Ok(RepDefLayer::RepdefAllValidItem) => Layer::AllValidItem,
            Ok(RepDefLayer::RepdefAllValidList) => Layer::AllValidList,
            Ok(RepDefLayer::RepdefNullableItem) => Layer::NullableItem,
            Ok(RepDefLayer::RepdefNullableList) => Layer::NullableList,
            Ok(RepDefLayer::RepdefEmptyableList) => Layer::EmptyableList,
            Ok(RepDefLayer::RepdefNullAndEmptyList) => Layer::NullAndEmptyList,
            _ => return Err(Error::corrupt(format!("unknown rep/def layer {v}"))),
        })
    }

    /// Parses a list of protobuf enum values; an empty list is an error.
    pub fn parse_all(v: &[i32]) -> Result<Vec<Layer>> {
        if v.is_empty() {
            return Err(Error::corrupt("page layout has no rep/def layers"));
        }
        v.iter().map(|&l| Layer::from_pb(l)).collect()
    }

    /// The protobuf enum value.
    pub fn to_pb(self) -> i32 {
        (match self {
            Layer::AllValidItem => RepDefLayer::RepdefAllValidItem,
            Layer::AllValidList => RepDefLayer::RepdefAllValidList,
            Layer::NullableItem => RepDefLayer::RepdefNullableItem,
            Layer::NullableList => RepDefLayer::RepdefNullableList,
            Layer::EmptyableList => RepDefLayer::RepdefEmptyableList,
            Layer::NullAndEmptyList => RepDefLayer::RepdefNullAndEmptyList,
        }) as i32
    }

    /// Whether this layer is a list.
    pub fn is_list(self) -> bool {
        matches!(self, Layer::AllValidList | Layer::NullableList | Layer::EmptyableList | Layer::NullAndEmptyList)
    }

    /// Definition levels this layer uses.
    pub fn def_levels(self) -> u16 {
        match self {
            Layer::AllValidItem | Layer::AllValidList => 0,
            Layer::NullableItem | Layer::NullableList | Layer::EmptyableList => 1,
            Layer::NullAndEmptyList => 2,
        }
    }
}

/// Largest definition level of `layers`.
pub fn max_def(layers: &[Layer]) -> u16 {
    layers.iter().map(|l| l.def_levels()).sum()
}

/// Largest repetition level of `layers` (the number of list layers).
pub fn max_rep(layers: &[Layer]) -> u16 {
    layers.iter().filter(|l| l.is_list()).count() as u16
}

/// Number of bits needed to store levels up to `max`.
pub fn bits_for(max: u16) -> u32 {
    16 - max.leading_zeros()
}

/// The definition level at or below which an item is *visible* (has a value slot): the sum
/// of the def levels of the layers below the first list layer.
pub fn max_visible_def(layers: &[Layer]) -> u16 {
    layers.iter().take_while(|l| !l.is_list()).map(|l| l.def_levels()).sum()
}
