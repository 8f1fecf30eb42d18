//! Shredding: an Arrow array of a (possibly nested) field → one leaf column per leaf, each with
//! repetition levels, canonical definition levels and the values of its visible items.
//!
//! Walk a leaf's path from the top-level field inward, keeping a list of *slots*. A slot is
//! either a value (an index into the current node's array) or an absent entry that already has
//! its final levels. At a list node a value slot becomes one slot per list item (the first
//! keeps the incoming repetition level, the rest get the list's own level), or one absent
//! slot if the list is null or empty; at a struct node it passes through; a null anywhere
//! turns the slot absent. Absent slots created by a null *item* (struct or leaf) are still
//! visible — they own a (null) value — until a list below makes them invisible.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, UInt32Array};
use arrow_schema::DataType;

use super::repdef::{LeafPath, NodeKind};
use crate::error::{Error, Result};
use crate::schema::LanceField;

/// One leaf column of a page, shredded.
#[derive(Debug, Clone)]
pub struct ShreddedLeaf {
    /// The leaf's structure.
    pub path: LeafPath,
    /// Repetition levels (one per level), if the path has lists.
    pub rep: Option<Vec<u16>>,
    /// Canonical definition levels (one per level), if anything is null or empty.
    pub def: Option<Vec<u16>>,
    /// Values of the visible items (nulls where an item or an enclosing struct is null).
    pub values: ArrayRef,
    /// Number of top-level rows.
    pub num_rows: usize,
}

impl ShreddedLeaf {
    /// The part of this leaf that belongs to top-level rows `start..start + len`: its levels
    /// (row starts are levels with the maximum repetition level) and the values of the
    /// visible levels among them. Values are sliced without copying.
    pub fn slice_rows(&self, start: usize, len: usize) -> Result<ShreddedLeaf> {
        let scale = self.path.row_scale() as usize;
        let num_levels = self.rep.as_ref().map(|r| r.len()).or(self.def.as_ref().map(|d| d.len())).unwrap_or(self.values.len());
        let (lo, hi) = match &self.rep {
            // Without lists every row is `scale` levels.
            None => (start * scale, (start + len) * scale),
            Some(rep) => {
                let max_rep = self.path.max_rep;
                let mut starts = rep.iter().enumerate().filter(|(_, &r)| r == max_rep).map(|(p, _)| p);
                let lo = starts.nth(start).unwrap_or(num_levels);
                let hi = if len == 0 { lo } else { starts.nth(len - 1).unwrap_or(num_levels) };
                (lo, hi)
            }
        };
        if hi > num_levels || lo > hi {
            return Err(Error::internal("page rows outside the shredded data"));
        }
        let visible_limit = self.path.max_visible_canonical();
        let visible = |range: std::ops::Range<usize>| match &self.def {
            Some(d) => d[range].iter().filter(|&&x| x <= visible_limit).count(),
            None => range.len(),
        };
        let v_lo = visible(0..lo);
        let v_len = visible(lo..hi);
        Ok(ShreddedLeaf {
            path: self.path.clone(),
            rep: self.rep.as_ref().map(|r| r[lo..hi].to_vec()),
            def: self.def.as_ref().map(|d| d[lo..hi].to_vec()),
            values: self.values.slice(v_lo, v_len),
            num_rows: len,
        })
    }
}

/// The node kinds of every leaf under `field`, in pre-order (the column order of 2.1+).
pub fn leaf_paths(field: &LanceField) -> Result<Vec<(Vec<usize>, LeafPath)>> {
    fn walk(
        f: &LanceField,
        idx: &mut Vec<usize>,
        kinds: &mut Vec<NodeKind>,
        nullable: &mut Vec<bool>,
        fixed: &mut Vec<(usize, usize)>,
        out: &mut Vec<(Vec<usize>, LeafPath)>,
    ) -> Result<()> {
        nullable.push(f.nullable);
        let r = walk_inner(f, idx, kinds, nullable, fixed, out);
        nullable.pop();
        r
    }
    fn walk_inner(
        f: &LanceField,
        idx: &mut Vec<usize>,
        kinds: &mut Vec<NodeKind>,
        nullable: &mut Vec<bool>,
        fixed: &mut Vec<(usize, usize)>,
        out: &mut Vec<(Vec<usize>, LeafPath)>,
    ) -> Result<()> {
        match &f.data_type {
            DataType::Struct(_) if !f.is_leaf() => {
                kinds.push(NodeKind::Item);
                for (i, c) in f.children.iter().enumerate() {
                    idx.push(i);
                    walk(c, idx, kinds, nullable, fixed, out)?;
                    idx.pop();
                }
                kinds.pop();
            }
            DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _) => {
                kinds.push(NodeKind::List);
                idx.push(0);
                walk(&f.children[0], idx, kinds, nullable, fixed, out)?;
                idx.pop();
                kinds.pop();
            }
            DataType::FixedSizeList(_, dim) if !f.children.is_empty() => {
                // A fixed-size list of structs: an item layer whose entries own `dim` slots.
                kinds.push(NodeKind::Item);
                fixed.push((kinds.len() - 1, *dim as usize));
                idx.push(0);
                walk(&f.children[0], idx, kinds, nullable, fixed, out)?;
                idx.pop();
                fixed.pop();
                kinds.pop();
            }
            _ => {
                kinds.push(NodeKind::Item);
                let mut path = LeafPath::with_nullability(kinds.clone(), nullable.clone());
                for &(node, dim) in fixed.iter() {
                    path.fixed_size[node] = dim;
                }
                if fixed.len() > 1 || (!fixed.is_empty() && path.has_lists()) {
                    return Err(Error::not_supported(format!(
                        "a fixed-size list of structs with lists or other fixed-size lists of structs above or inside it (field {:?})",
                        f.name
                    )));
                }
                out.push((idx.clone(), path));
                kinds.pop();
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(field, &mut Vec::new(), &mut Vec::new(), &mut Vec::new(), &mut Vec::new(), &mut out)?;
    Ok(out)
}

#[derive(Clone, Copy)]
struct Slot {
    /// Index into the current node's array, or `None` when absent.
    idx: Option<usize>,
    rep: u16,
    def: u16,
    visible: bool,
}

/// Offsets of a list-like array as (start, end) of entry `i`.
fn list_bounds(array: &dyn Array) -> Result<(Box<dyn Fn(usize) -> (usize, usize) + '_>, ArrayRef)> {
    Ok(match array.data_type() {
        DataType::List(_) => {
            let l = array.as_list::<i32>();
            let o = l.value_offsets();
            (Box::new(move |i| (o[i] as usize, o[i + 1] as usize)), l.values().clone())
        }
        DataType::LargeList(_) => {
            let l = array.as_list::<i64>();
            let o = l.value_offsets();
            (Box::new(move |i| (o[i] as usize, o[i + 1] as usize)), l.values().clone())
        }
        DataType::Map(_, _) => {
            let m = array.as_map();
            let o = m.value_offsets();
            (Box::new(move |i| (o[i] as usize, o[i + 1] as usize)), Arc::new(m.entries().clone()) as ArrayRef)
        }
        other => return Err(Error::internal(format!("{other} is not a list"))),
    })
}

/// Shreds `array` (the top-level field's values for one page) into its leaf columns.
pub fn shred(array: &ArrayRef, field: &LanceField) -> Result<Vec<ShreddedLeaf>> {
    let paths = leaf_paths(field)?;
    let n = array.len();
    let mut out = Vec::with_capacity(paths.len());
    for (child_idx, path) in paths {
        let max_rep = path.max_rep;
        let mut slots: Vec<Slot> = (0..n).map(|i| Slot { idx: Some(i), rep: max_rep, def: 0, visible: true }).collect();
        let mut current: ArrayRef = array.clone();
        let mut next_child = child_idx.iter();
        for (i, kind) in path.kinds.iter().enumerate() {
            let mut next = Vec::with_capacity(slots.len());
            match kind {
                NodeKind::List => {
                    let (bounds, values) = list_bounds(current.as_ref())?;
                    let nulls = current.logical_nulls();
                    let is_null = |j: usize| nulls.as_ref().is_some_and(|n| n.is_null(j));
                    for s in slots {
                        match s.idx {
                            None => next.push(Slot { visible: false, ..s }),
                            Some(j) if is_null(j) => {
                                next.push(Slot { idx: None, rep: s.rep, def: path.null_def(i), visible: false })
                            }
                            Some(j) => {
                                let (start, end) = bounds(j);
                                if start == end {
                                    next.push(Slot { idx: None, rep: s.rep, def: path.empty_def(i), visible: false });
                                }
                                for k in start..end {
                                    let rep = if k == start { s.rep } else { path.list_rep[i] };
                                    next.push(Slot { idx: Some(k), rep, def: 0, visible: true });
                                }
                            }
                        }
                    }
                    drop(bounds);
                    current = values;
                    next_child.next();
                }
                NodeKind::Item if path.fixed_size[i] > 0 => {
                    // Every entry of a fixed-size list owns `dim` slots of its child, null or not.
                    let dim = path.fixed_size[i];
                    let fsl = current.as_fixed_size_list();
                    let nulls = current.logical_nulls();
                    let is_null = |j: usize| nulls.as_ref().is_some_and(|n| n.is_null(j));
                    for s in slots {
                        match s.idx {
                            Some(j) if !is_null(j) => {
                                let first = fsl.value_offset_at(j) as usize;
                                next.extend((0..dim).map(|k| Slot { idx: Some(first + k), ..s }));
                            }
                            Some(_) => next.extend(std::iter::repeat_n(
                                Slot { idx: None, rep: s.rep, def: path.null_def(i), visible: true },
                                dim,
                            )),
                            None => next.extend(std::iter::repeat_n(s, dim)),
                        }
                    }
                    current = fsl.values().clone();
                    next_child.next();
                }
                NodeKind::Item => {
                    let nulls = current.logical_nulls();
                    let is_null = |j: usize| nulls.as_ref().is_some_and(|n| n.is_null(j));
                    for s in slots {
                        match s.idx {
                            Some(j) if is_null(j) => {
                                next.push(Slot { idx: None, rep: s.rep, def: path.null_def(i), visible: true })
                            }
                            _ => next.push(s),
                        }
                    }
                    if i + 1 < path.kinds.len() {
                        let c = *next_child.next().expect("path index for every struct");
                        current = current.as_struct().column(c).clone();
                    }
                }
            }
            slots = next;
        }
        let has_def = slots.iter().any(|s| s.def != 0);
        let rep = path.has_lists().then(|| slots.iter().map(|s| s.rep).collect());
        let def = has_def.then(|| slots.iter().map(|s| s.def).collect());
        let indices: UInt32Array = slots.iter().filter(|s| s.visible).map(|s| s.idx.map(|i| i as u32)).collect();
        let values = arrow_select::take::take(current.as_ref(), &indices, None)?;
        out.push(ShreddedLeaf { path, rep, def, values, num_rows: n });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::LanceSchema;
    use arrow_array::builder::{Int32Builder, ListBuilder};
    use arrow_schema::{Field, Schema};

    #[test]
    fn list_of_nullable_ints() {
        // [[1, 2], [], null, [null, 3]]
        let mut b = ListBuilder::new(Int32Builder::new());
        b.values().append_value(1);
        b.values().append_value(2);
        b.append(true);
        b.append(true);
        b.append(false);
        b.values().append_null();
        b.values().append_value(3);
        b.append(true);
        let arr: ArrayRef = Arc::new(b.finish());
        let schema = Schema::new(vec![Field::new("l", arr.data_type().clone(), true)]);
        let lance = LanceSchema::from_arrow(&schema).unwrap();
        let leaves = shred(&arr, &lance.fields[0]).unwrap();
        assert_eq!(leaves.len(), 1);
        let l = &leaves[0];
        assert_eq!(l.rep.as_deref(), Some(&[1, 0, 1, 1, 1, 0][..]));
        // canonical: item null = 1, list null = 2, list empty = 3
        assert_eq!(l.def.as_deref(), Some(&[0, 0, 3, 2, 1, 0][..]));
        assert_eq!(l.values.len(), 4);
        assert_eq!(l.values.null_count(), 1);
    }
}
