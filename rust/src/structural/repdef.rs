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

/// The kind of one node on a leaf's path (outermost first in [`LeafPath`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A struct, map entries, or the leaf itself: one slot per parent slot.
    Item,
    /// A list (or map): an entry with zero or more child slots.
    List,
}

/// The structure of one leaf column: its path from the top-level field (index 0) to the leaf
/// (last), with the *canonical* definition numbering used in memory, where every item may be
/// null (one level) and every list may be null or empty (two levels). Pages use their own,
/// data-dependent numbering; [`page_to_canonical`] translates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafPath {
    /// Node kinds, outermost first.
    pub kinds: Vec<NodeKind>,
    /// Canonical def level meaning "null at node i" is `base[i] + 1`; for lists `base[i] + 2`
    /// means "empty".
    pub base: Vec<u16>,
    /// Repetition level of a new item in the list at node i: its depth counted from the
    /// innermost list, minus one (0 = next item of the innermost list); 0 for items.
    pub list_rep: Vec<u16>,
    /// Number of list nodes.
    pub max_rep: u16,
    /// Whether each node's field is nullable in the schema.
    pub nullable: Vec<bool>,
    /// For an item node that is a fixed-size list of structs, its size (each of its entries
    /// owns that many consecutive slots of the node below); 0 otherwise.
    pub fixed_size: Vec<usize>,
}

impl LeafPath {
    /// Builds the path description from node kinds, outermost first (all nullable).
    pub fn new(kinds: Vec<NodeKind>) -> Self {
        let n = kinds.len();
        Self::with_nullability(kinds, vec![true; n])
    }

    /// Builds the path description from node kinds and schema nullability, outermost first.
    pub fn with_nullability(kinds: Vec<NodeKind>, nullable: Vec<bool>) -> Self {
        let n = kinds.len();
        let mut base = vec![0u16; n];
        let mut list_rep = vec![0u16; n];
        let mut acc = 0u16;
        let mut depth = 0u16;
        for i in (0..n).rev() {
            base[i] = acc;
            acc += match kinds[i] {
                NodeKind::Item => 1,
                NodeKind::List => 2,
            };
            if kinds[i] == NodeKind::List {
                list_rep[i] = depth;
                depth += 1;
            }
        }
        let fixed_size = vec![0; n];
        Self { kinds, base, list_rep, max_rep: depth, nullable, fixed_size }
    }

    /// A path of one nullable-or-not item: a flat column.
    pub fn flat() -> Self {
        Self::new(vec![NodeKind::Item])
    }

    /// How many page "rows" one top-level row is for this leaf: pages of columns below a
    /// fixed-size list of structs count that list's items (as pylance writes them).
    pub fn row_scale(&self) -> u64 {
        self.fixed_size.iter().filter(|&&d| d > 0).map(|&d| d as u64).product()
    }

    /// Whether the column has lists.
    pub fn has_lists(&self) -> bool {
        self.max_rep > 0
    }

    /// Canonical levels at or below this have a value slot: nulls of items below the
    /// innermost list (a null list or an empty one has no slot).
    pub fn max_visible_canonical(&self) -> u16 {
        match (0..self.kinds.len()).rev().find(|&i| self.kinds[i] == NodeKind::List) {
            Some(list) => self.base[list],
            None => self.max_canonical_def(),
        }
    }

    /// Canonical level: node `i` is null.
    pub fn null_def(&self, i: usize) -> u16 {
        self.base[i] + 1
    }

    /// Canonical level: list node `i` is empty.
    pub fn empty_def(&self, i: usize) -> u16 {
        self.base[i] + 2
    }

    /// Largest canonical level.
    pub fn max_canonical_def(&self) -> u16 {
        self.base[0] + if self.kinds[0] == NodeKind::List { 2 } else { 1 }
    }

    /// The node a canonical level `d > 0` refers to, and whether it means "empty".
    pub fn node_of_def(&self, d: u16) -> Option<(usize, bool)> {
        (0..self.kinds.len()).find_map(|i| {
            if d == self.base[i] + 1 {
                Some((i, false))
            } else if self.kinds[i] == NodeKind::List && d == self.base[i] + 2 {
                Some((i, true))
            } else {
                None
            }
        })
    }

    /// The page layers (innermost first) that describe canonical levels `def` (which nodes
    /// actually have nulls or empties decides each layer's kind).
    pub fn page_layers(&self, def: Option<&[u16]>) -> Vec<Layer> {
        let n = self.kinds.len();
        let mut has_null = vec![false; n];
        let mut has_empty = vec![false; n];
        if let Some(d) = def {
            let mut seen = vec![false; self.max_canonical_def() as usize + 1];
            for &l in d {
                if let Some(s) = seen.get_mut(l as usize) {
                    *s = true;
                }
            }
            for (l, &s) in seen.iter().enumerate().skip(1) {
                if s {
                    if let Some((i, empty)) = self.node_of_def(l as u16) {
                        if empty {
                            has_empty[i] = true
                        } else {
                            has_null[i] = true
                        }
                    }
                }
            }
        }
        // A null item makes everything below it null as well, down to and including the
        // first list (which gets a null entry); pylance marks those layers nullable too.
        for i in 0..n {
            if has_null[i] && self.kinds[i] == NodeKind::Item {
                for j in i + 1..n {
                    has_null[j] = true;
                    if self.kinds[j] == NodeKind::List {
                        break;
                    }
                }
            }
        }
        (0..n)
            .rev()
            .map(|i| match (self.kinds[i], has_null[i], has_empty[i]) {
                (NodeKind::Item, false, _) => Layer::AllValidItem,
                (NodeKind::Item, true, _) => Layer::NullableItem,
                (NodeKind::List, false, false) => Layer::AllValidList,
                (NodeKind::List, true, false) => Layer::NullableList,
                (NodeKind::List, false, true) => Layer::EmptyableList,
                (NodeKind::List, true, true) => Layer::NullAndEmptyList,
            })
            .collect()
    }
}

/// A table from page def levels (index) to canonical levels, for a page whose `layers`
/// (innermost first) describe `path`.
pub fn page_to_canonical(path: &LeafPath, layers: &[Layer]) -> Result<Vec<u16>> {
    let n = path.kinds.len();
    if layers.len() != n {
        return Err(Error::corrupt(format!(
            "page has {} rep/def layers but the column's schema has {n} levels of structure",
            layers.len()
        )));
    }
    let mut table = vec![0u16];
    for (j, layer) in layers.iter().enumerate() {
        let i = n - 1 - j; // node index, outermost first
        let is_list = path.kinds[i] == NodeKind::List;
        if layer.is_list() != is_list {
            return Err(Error::corrupt("page rep/def layers do not match the column's schema"));
        }
        match layer {
            Layer::AllValidItem | Layer::AllValidList => {}
            Layer::NullableItem | Layer::NullableList => table.push(path.null_def(i)),
            Layer::EmptyableList => table.push(path.empty_def(i)),
            Layer::NullAndEmptyList => {
                table.push(path.null_def(i));
                table.push(path.empty_def(i));
            }
        }
    }
    Ok(table)
}

/// The inverse of [`page_to_canonical`]: canonical level (index) → page level.
pub fn canonical_to_page(path: &LeafPath, layers: &[Layer]) -> Result<Vec<u16>> {
    let forward = page_to_canonical(path, layers)?;
    let mut back = vec![u16::MAX; path.max_canonical_def() as usize + 1];
    for (page, &canon) in forward.iter().enumerate() {
        back[canon as usize] = page as u16;
    }
    Ok(back)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_numbering() {
        // list<struct<x>>: nodes outermost first: list, struct, x.
        let p = LeafPath::new(vec![NodeKind::List, NodeKind::Item, NodeKind::Item]);
        assert_eq!(p.base, vec![2, 1, 0]);
        assert_eq!(p.max_rep, 1);
        assert_eq!(p.null_def(2), 1);
        assert_eq!(p.null_def(1), 2);
        assert_eq!((p.null_def(0), p.empty_def(0)), (3, 4));
        let layers = p.page_layers(Some(&[0, 4, 1]));
        assert_eq!(layers, vec![Layer::NullableItem, Layer::AllValidItem, Layer::EmptyableList]);
        let t = page_to_canonical(&p, &layers).unwrap();
        assert_eq!(t, vec![0, 1, 4]);
        assert_eq!(max_def(&layers), 2);
    }
}
