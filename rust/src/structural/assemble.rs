//! Assembly: leaf columns (repetition levels, canonical definition levels, values of visible
//! items) → the Arrow array of a (possibly nested) field. The inverse of [`super::shred`].
//!
//! Each level creates slots. A level whose repetition level is `max_rep` starts a new row,
//! so slots are created from the top-level node down; a level with repetition level `k` adds
//! an item to the list whose depth is `k`, so slots are created from that list's child down.
//! Going down, an item node gets a valid or null slot, a list node a valid, null or empty
//! entry (stopping at null/empty); below a null item every node gets a null slot until a list,
//! which gets a null entry. A slot created at the leaf consumes the next value.
//!
//! Every leaf yields the full structure of its path. Parents (struct validity, list offsets)
//! are taken from the first leaf below them; the others must agree in length.

use arrow_array::{make_array, Array, ArrayRef};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, Buffer, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;

use super::repdef::{LeafPath, NodeKind};
use crate::error::{Error, Result};
use crate::schema::LanceField;

/// The decoded levels and values of one leaf column over some rows.
#[derive(Debug, Clone)]
pub struct LeafData {
    /// The leaf's structure.
    pub path: LeafPath,
    /// Repetition levels (`None` = every level starts a row).
    pub rep: Option<Vec<u16>>,
    /// Canonical definition levels (`None` = all valid).
    pub def: Option<Vec<u16>>,
    /// Values of the visible items (any validity is replaced by the levels').
    pub values: ArrayRef,
    /// Number of rows.
    pub num_rows: usize,
    /// The levels, already walked while decoding (then `rep` and `def` are `None`).
    pub walked: Option<SimpleWalk>,
}

/// The structure one leaf gives for one node of its path.
#[derive(Debug)]
enum NodeData {
    Item { validity: BooleanBufferBuilder },
    List { offsets: Vec<i64>, validity: BooleanBufferBuilder },
}

impl NodeData {
    fn len(&self) -> usize {
        match self {
            NodeData::Item { validity } => validity.len(),
            NodeData::List { validity, .. } => validity.len(),
        }
    }
}

/// Replays the levels of one leaf into per-node structure.
fn replay(leaf: &mut LeafData) -> Result<Vec<NodeData>> {
    if leaf.walked.is_some() || is_simple(&leaf.path) {
        return replay_simple(leaf);
    }
    let path = &leaf.path;
    let n = path.kinds.len();
    let mut nodes: Vec<NodeData> = path
        .kinds
        .iter()
        .map(|k| match k {
            NodeKind::Item => NodeData::Item { validity: BooleanBufferBuilder::new(leaf.num_rows) },
            NodeKind::List => NodeData::List {
                offsets: Vec::with_capacity(leaf.num_rows + 1),
                validity: BooleanBufferBuilder::new(leaf.num_rows),
            },
        })
        .collect();
    let num_levels = leaf.rep.as_ref().map(|r| r.len()).or(leaf.def.as_ref().map(|d| d.len())).unwrap_or(leaf.values.len());
    if let (Some(r), Some(d)) = (&leaf.rep, &leaf.def) {
        if r.len() != d.len() {
            return Err(Error::corrupt(format!("{} repetition levels but {} definition levels", r.len(), d.len())));
        }
    }
    // creation[r] = first node that gets a new slot for a level with repetition level r.
    let mut creation = vec![usize::MAX; path.max_rep as usize + 1];
    creation[path.max_rep as usize] = 0;
    for i in 0..n {
        if path.kinds[i] == NodeKind::List {
            creation[path.list_rep[i] as usize] = i + 1;
        }
    }
    // Whether list node i has an open (valid, non-empty) entry to add items to.
    let mut open = vec![false; n];
    // Slots created so far at fixed-size-list nodes (a new entry every `fixed_size` slots).
    let mut fixed_slots = vec![0usize; n];
    let mut values_used = 0usize;
    let mut rows = 0usize;
    let leaf_index = n - 1;
    // The (single) fixed-size-list-of-structs node on the path, if any.
    let fsl = (0..n).find(|&i| path.fixed_size[i] > 0);
    for p in 0..num_levels {
        let r = leaf.rep.as_ref().map(|r| r[p]).unwrap_or(path.max_rep);
        let d = leaf.def.as_ref().map(|d| d[p]).unwrap_or(0);
        if d > path.max_canonical_def() {
            return Err(Error::corrupt(format!("definition level {d} is above the maximum {}", path.max_canonical_def())));
        }
        // Inside a fixed-size list's group of slots, a level only adds a child slot.
        let continuation = fsl.filter(|&f| fixed_slots[f] % path.fixed_size[f] != 0);
        let start = match continuation {
            Some(f) => {
                fixed_slots[f] += 1;
                f + 1
            }
            None => *creation
                .get(r as usize)
                .filter(|&&c| c != usize::MAX)
                .ok_or_else(|| Error::corrupt(format!("repetition level {r} does not match the column's structure")))?,
        };
        if continuation.is_none() {
            if r == path.max_rep {
                rows += 1;
            } else if !open[start - 1] {
                return Err(Error::corrupt("repetition levels continue a list that is null, empty or not started"));
            }
        }
        // Below a null fixed-size list (or anything null above it) every slot is null.
        let mut forced_null = continuation.is_some_and(|f| d >= path.null_def(f));
        for i in start..n {
            let child_len = if i + 1 < n { nodes[i + 1].len() } else { values_used };
            match &mut nodes[i] {
                NodeData::Item { validity } => {
                    let null = forced_null || d == path.null_def(i);
                    let dim = path.fixed_size[i];
                    // A fixed-size list gets one entry per `dim` levels; its children one each.
                    if dim == 0 || fixed_slots[i] % dim == 0 {
                        validity.append(!null);
                    }
                    if dim > 0 {
                        fixed_slots[i] += 1;
                    }
                    forced_null = null;
                    if i == leaf_index {
                        values_used += 1;
                    }
                }
                NodeData::List { offsets, validity } => {
                    offsets.push(child_len as i64);
                    // Entries of inner lists close when a new outer element starts.
                    for o in open.iter_mut().skip(i) {
                        *o = false;
                    }
                    if forced_null || d == path.null_def(i) {
                        validity.append(false);
                        break;
                    }
                    validity.append(true);
                    if d == path.empty_def(i) {
                        break;
                    }
                    open[i] = true;
                }
            }
        }
    }
    if values_used != leaf.values.len() {
        return Err(Error::corrupt(format!("levels describe {values_used} values but {} were decoded", leaf.values.len())));
    }
    if rows != leaf.num_rows {
        return Err(Error::corrupt(format!("levels describe {rows} rows, expected {}", leaf.num_rows)));
    }
    // Close list offsets.
    for i in 0..n {
        let child_len = if i + 1 < n { nodes[i + 1].len() } else { values_used };
        if let NodeData::List { offsets, .. } = &mut nodes[i] {
            offsets.push(child_len as i64);
        }
    }
    Ok(nodes)
}

/// Whether [`replay_simple`] handles `path`: structs only, or one list at the top with
/// structs and the leaf below it (`list<T>`, `list<struct<...>>`, `map<K, V>`).
pub(crate) fn is_simple(path: &LeafPath) -> bool {
    path.fixed_size.iter().all(|&d| d == 0)
        && path.kinds.iter().skip(1).all(|&k| k == NodeKind::Item)
        && (path.max_rep == 0 || path.kinds[0] == NodeKind::List)
}

/// [`replay`] for the simple shapes (see [`is_simple`]). Below the list, an item node `i`
/// of a visible level is null exactly when the level is at least its null level (a null
/// struct makes everything inside it null). A [`SimpleWalk`] (done while decoding, or here)
/// finds the list offsets, the levels of row starts and those of visible items; validity
/// bitmaps are then packed from those 64 at a time.
fn replay_simple(leaf: &mut LeafData) -> Result<Vec<NodeData>> {
    let walk = match leaf.walked.take() {
        Some(w) => w,
        None => {
            let num_levels =
                leaf.rep.as_ref().map(|r| r.len()).or(leaf.def.as_ref().map(|d| d.len())).unwrap_or(leaf.values.len());
            let mut w = SimpleWalk::new(&leaf.path);
            w.extend(leaf.rep.as_deref(), leaf.def.as_deref(), num_levels)?;
            w.finish()
        }
    };
    let path = &leaf.path;
    if walk.bad {
        return Err(Error::corrupt(
            "levels do not match the column's structure (a level is out of range, or continues a list that is null, empty or not started)",
        ));
    }
    if walk.values != leaf.values.len() {
        return Err(Error::corrupt(format!("levels describe {} values but {} were decoded", walk.values, leaf.values.len())));
    }
    if walk.rows != leaf.num_rows {
        return Err(Error::corrupt(format!("levels describe {} rows, expected {}", walk.rows, leaf.num_rows)));
    }
    let bits = |len: usize, defs: Option<&[u16]>, valid: &dyn Fn(u16) -> bool| {
        let mut b = BooleanBufferBuilder::new(len);
        match defs {
            Some(defs) => b.append_buffer(&BooleanBuffer::collect_bool(len, |i| valid(defs[i]))),
            None => b.append_n(len, true),
        }
        b
    };
    let mut nodes = Vec::with_capacity(path.kinds.len());
    if walk.has_list {
        let list_null = walk.list_null;
        let validity = bits(walk.rows, walk.row_defs.as_deref(), &|d| d != list_null);
        nodes.push(NodeData::List { offsets: walk.offsets, validity });
    }
    let max_visible = walk.visible_defs.as_ref().map(|v| v.iter().copied().max().unwrap_or(0)).unwrap_or(0);
    for &base in &path.base[walk.has_list as usize..] {
        let defs = walk.visible_defs.as_deref().filter(|_| max_visible > base);
        nodes.push(NodeData::Item { validity: bits(walk.values, defs, &|d| d <= base) });
    }
    Ok(nodes)
}

/// One pass over the levels of a leaf with a simple path (see [`is_simple`]), fed a piece at
/// a time while the leaf is decoded, so that the levels are walked while still in cache and
/// never stored. Each piece is first checked and scanned for nulls (loops the compiler
/// vectorises); the walk itself then only records what the piece needs.
#[derive(Debug, Clone)]
pub struct SimpleWalk {
    /// List offsets: one per row start (and, once finished, a last one).
    offsets: Vec<i64>,
    /// Definition level of each row start, once some list is null (before that, all valid).
    row_defs: Option<Vec<u16>>,
    /// Definition level of each visible item, once some item is null (before that, all valid).
    visible_defs: Option<Vec<u16>>,
    values: usize,
    rows: usize,
    /// Whether the last level was a visible item of a list, which the next may continue.
    continuable: bool,
    /// A level was out of range or continued a list that is null, empty or not started.
    bad: bool,
    has_list: bool,
    max_def: u16,
    max_rep: u16,
    list_null: u16,
    visible_limit: u16,
    /// Visible levels above this make some item null.
    item_null_above: u16,
}

impl SimpleWalk {
    /// A walk over the levels of a leaf with the simple path `path`.
    pub fn new(path: &LeafPath) -> Self {
        let has_list = path.max_rep > 0;
        let max_def = path.max_canonical_def();
        Self {
            offsets: Vec::new(),
            row_defs: None,
            visible_defs: None,
            values: 0,
            rows: 0,
            continuable: false,
            bad: false,
            has_list,
            max_def,
            max_rep: path.max_rep,
            list_null: path.null_def(0),
            visible_limit: if has_list { path.base[0] } else { max_def },
            item_null_above: *path.base.last().unwrap_or(&0),
        }
    }

    /// Reserves room for about `levels` more levels.
    pub fn reserve(&mut self, levels: usize) {
        if self.has_list {
            self.offsets.reserve(levels + 1);
        }
    }

    /// Walks `n` more levels (`None` = the trivial levels: every level starts a row / is valid).
    pub fn extend(&mut self, rep: Option<&[u16]>, def: Option<&[u16]>, n: usize) -> Result<()> {
        fn cut(l: Option<&[u16]>, n: usize) -> Result<Option<&[u16]>> {
            match l {
                Some(l) if l.len() < n => Err(Error::corrupt(format!("{} levels where {n} were expected", l.len()))),
                Some(l) => Ok(Some(&l[..n])),
                None => Ok(None),
            }
        }
        let (rep, def) = (cut(rep, n)?, cut(def, n)?);
        let rep = rep.filter(|_| self.has_list);
        let (max_rep, vis_limit) = (self.max_rep, self.visible_limit);
        // Checks: levels in range; a level continuing a list follows a visible item of it
        // and is one itself.
        self.bad |= rep.is_some_and(|r| r.iter().fold(0, |m, &x| m.max(x)) > max_rep)
            || def.is_some_and(|d| d.iter().fold(0, |m, &x| m.max(x)) > self.max_def);
        if let Some(r) = rep {
            let prev_visible = |p: usize| match (p, def) {
                (0, _) => self.continuable,
                (_, Some(d)) => d[p - 1] <= vis_limit,
                (_, None) => true,
            };
            let first_bad = !r.is_empty() && r[0] != max_rep && !(prev_visible(0) && def.is_none_or(|d| d[0] <= vis_limit));
            let rest_bad = match def {
                Some(d) => r[1.min(n)..]
                    .iter()
                    .zip(d.windows(2))
                    .fold(false, |bad, (&r, w)| bad | ((r != max_rep) & !((w[0] <= vis_limit) & (w[1] <= vis_limit)))),
                None => false,
            };
            self.bad |= first_bad | rest_bad;
        }
        if n > 0 {
            self.continuable = rep.is_some() && def.is_none_or(|d| d[n - 1] <= vis_limit);
        }
        // Materialise the levels of row starts / visible items once a null needs them.
        if let (Some(r), Some(d), None) = (rep, def, &self.row_defs) {
            let list_null = self.list_null;
            if r.iter().zip(d).fold(false, |any, (&r, &d)| any | ((r == max_rep) & (d == list_null))) {
                self.row_defs = Some(vec![0; self.rows]);
            }
        }
        if let (Some(d), None) = (def, &self.visible_defs) {
            let above = self.item_null_above;
            if d.iter().fold(false, |any, &d| any | ((d > above) & (d <= vis_limit))) {
                self.visible_defs = Some(vec![0; self.values]);
            }
        }
        match (rep, def) {
            (Some(r), Some(d)) => self.run(r.iter().copied().zip(d.iter().copied()), n),
            (Some(r), None) => self.run(r.iter().map(|&r| (r, 0)), n),
            (None, Some(d)) => {
                // No lists: a row and a value per level.
                if let Some(v) = &mut self.visible_defs {
                    v.extend_from_slice(d);
                }
                self.rows += n;
                self.values += n;
            }
            (None, None) => {
                if let Some(v) = &mut self.visible_defs {
                    v.resize(v.len() + n, 0);
                }
                self.rows += n;
                self.values += n;
            }
        }
        Ok(())
    }

    /// The walk over the `(rep, def)` pairs of a path with a list. Stores are unconditional
    /// (a slot is overwritten until its counter moves on), so the loop has no data-dependent
    /// branches.
    #[inline(always)]
    fn run(&mut self, levels: impl Iterator<Item = (u16, u16)>, n: usize) {
        let (max_rep, visible_limit) = (self.max_rep, self.visible_limit);
        let (mut rows, mut values) = (0usize, 0usize);
        let values0 = self.values as i64;
        self.offsets.reserve(n + 1);
        let keep_rows = self.row_defs.is_some();
        let keep_visible = self.visible_defs.is_some();
        let mut spare_rd: &mut [std::mem::MaybeUninit<u16>] = &mut [];
        let mut spare_vd: &mut [std::mem::MaybeUninit<u16>] = &mut [];
        if let Some(rd) = &mut self.row_defs {
            rd.reserve(n + 1);
            spare_rd = rd.spare_capacity_mut();
        }
        if let Some(vd) = &mut self.visible_defs {
            vd.reserve(n + 1);
            spare_vd = vd.spare_capacity_mut();
        }
        let o = self.offsets.spare_capacity_mut();
        for (r, d) in levels.take(n) {
            // `rows` and `values` count the levels so far, so they are below `n + 1`, the
            // length of every spare slice written here.
            o[rows].write(values0 + values as i64);
            if keep_rows {
                spare_rd[rows].write(d);
            }
            if keep_visible {
                spare_vd[values].write(d);
            }
            rows += (r == max_rep) as usize;
            values += (d <= visible_limit) as usize;
        }
        // SAFETY: `rows` and `values` start at 0 and grow by at most one per level, and every
        // level first writes the spare slots at their current values, so the slots below
        // their final values are written.
        unsafe {
            self.offsets.set_len(self.offsets.len() + rows);
            if let Some(rd) = &mut self.row_defs {
                rd.set_len(rd.len() + rows);
            }
            if let Some(vd) = &mut self.visible_defs {
                vd.set_len(vd.len() + values);
            }
        }
        self.rows += rows;
        self.values += values;
    }

    /// Ends the walk (closes the list offsets).
    pub fn finish(mut self) -> Self {
        if self.has_list {
            self.offsets.push(self.values as i64);
        }
        self
    }
}

/// Moves the validity out of an item node (the caller matched it as an item).
fn take_item_validity(node: &mut NodeData) -> BooleanBufferBuilder {
    match std::mem::replace(node, NodeData::Item { validity: BooleanBufferBuilder::new(0) }) {
        NodeData::Item { validity } => validity,
        NodeData::List { .. } => unreachable!("matched as an item node"),
    }
}

fn null_buffer(mut b: BooleanBufferBuilder) -> Option<NullBuffer> {
    let nb = NullBuffer::new(b.finish());
    (nb.null_count() > 0).then_some(nb)
}

/// Attaches `nulls` to an already validated array.
fn with_nulls(array: ArrayRef, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    if (nulls.is_none() && array.null_count() == 0) || array.data_type() == &DataType::Null {
        // The null type has no validity bitmap: every value is null already.
        return Ok(array);
    }
    if let Some(n) = &nulls {
        if n.len() != array.len() {
            return Err(Error::corrupt(format!("{} validity bits for {} values", n.len(), array.len())));
        }
    }
    let builder = array.to_data().into_builder().nulls(nulls);
    // SAFETY: the data was fully validated when it was built; replacing its validity bitmap
    // with one of the same length cannot make offsets, UTF-8 or child lengths invalid (null
    // slots may hold any bytes).
    let data = unsafe { builder.build_unchecked() };
    Ok(make_array(data))
}

/// Builds the Arrow array of `field` from the data of its leaves (pre-order).
pub fn assemble(field: &LanceField, mut leaves: Vec<LeafData>) -> Result<ArrayRef> {
    if leaves.is_empty() {
        return Err(Error::corrupt(format!("no leaf columns for field {:?}", field.name)));
    }
    // Fast path: a flat column.
    if leaves.len() == 1 && leaves[0].path.kinds.len() == 1 {
        let leaf = &leaves[0];
        let nulls = leaf.def.as_ref().and_then(|d| {
            let nb = NullBuffer::new(d.iter().map(|&l| l == 0).collect());
            (nb.null_count() > 0).then_some(nb)
        });
        if leaf.values.len() != leaf.num_rows {
            return Err(Error::corrupt(format!("{} values for {} rows", leaf.values.len(), leaf.num_rows)));
        }
        return with_nulls(leaf.values.clone(), nulls);
    }
    let mut replayed = leaves.iter_mut().map(replay).collect::<Result<Vec<_>>>()?;
    let mut next_leaf = 0usize;
    build_node(field, 0, &leaves, &mut replayed, &mut next_leaf)
}

/// Builds node `depth` of the paths of the leaves starting at `*next_leaf`.
fn build_node(
    field: &LanceField,
    depth: usize,
    leaves: &[LeafData],
    replayed: &mut [Vec<NodeData>],
    next_leaf: &mut usize,
) -> Result<ArrayRef> {
    let first = *next_leaf;
    let Some(nodes) = replayed.get_mut(first) else {
        return Err(Error::corrupt(format!("missing leaf column for field {:?}", field.name)));
    };
    let kind = nodes.get(depth).map(|n| matches!(n, NodeData::List { .. }));
    let is_leaf = depth + 1 == leaves[first].path.kinds.len();
    match (&field.data_type, kind) {
        (DataType::Struct(fields), Some(false)) if !is_leaf => {
            let validity = take_item_validity(&mut nodes[depth]);
            let len = validity.len();
            let nulls = null_buffer(validity);
            let mut children = Vec::with_capacity(field.children.len());
            for c in &field.children {
                let child = build_node(c, depth + 1, leaves, replayed, next_leaf)?;
                if child.len() != len {
                    return Err(Error::corrupt(format!(
                        "struct {:?} has {len} rows but child {:?} has {}",
                        field.name,
                        c.name,
                        child.len()
                    )));
                }
                children.push(child);
            }
            let data = ArrayDataBuilder::new(DataType::Struct(fields.clone()))
                .len(len)
                .nulls(nulls)
                .child_data(children.iter().map(|c| c.to_data()).collect())
                .build()?;
            Ok(make_array(data))
        }
        (DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _), Some(true)) => {
            let NodeData::List { offsets, validity } =
                std::mem::replace(&mut nodes[depth], NodeData::Item { validity: BooleanBufferBuilder::new(0) })
            else {
                unreachable!()
            };
            let len = validity.len();
            let nulls = null_buffer(validity);
            let child = build_node(&field.children[0], depth + 1, leaves, replayed, next_leaf)?;
            let last = *offsets.last().unwrap_or(&0);
            if last as usize != child.len() {
                return Err(Error::corrupt(format!(
                    "list {:?} offsets end at {last} but its items have {} rows",
                    field.name,
                    child.len()
                )));
            }
            let offsets_buf = match &field.data_type {
                DataType::LargeList(_) => Buffer::from_vec(offsets),
                _ => {
                    if last > i32::MAX as i64 {
                        return Err(Error::invalid_input(format!(
                            "list {:?} has more than 2^31 items in one read; read fewer rows at once",
                            field.name
                        )));
                    }
                    Buffer::from_vec(offsets.into_iter().map(|o| o as i32).collect::<Vec<i32>>())
                }
            };
            // Arrow requires the child of a map/list to match the declared item field.
            let data = ArrayDataBuilder::new(field.data_type.clone())
                .len(len)
                .nulls(nulls)
                .add_buffer(offsets_buf)
                .add_child_data(child.to_data())
                .build()?;
            Ok(make_array(data))
        }
        (DataType::FixedSizeList(_, dim), Some(false)) if !is_leaf => {
            let validity = take_item_validity(&mut nodes[depth]);
            let len = validity.len();
            let nulls = null_buffer(validity);
            let child = build_node(&field.children[0], depth + 1, leaves, replayed, next_leaf)?;
            if child.len() != len * *dim as usize {
                return Err(Error::corrupt(format!(
                    "fixed-size list {:?} has {len} entries of {dim} but {} items",
                    field.name,
                    child.len()
                )));
            }
            let data =
                ArrayDataBuilder::new(field.data_type.clone()).len(len).nulls(nulls).add_child_data(child.to_data()).build()?;
            Ok(make_array(data))
        }
        (_, Some(false)) if is_leaf => {
            let validity = take_item_validity(&mut nodes[depth]);
            *next_leaf += 1;
            with_nulls(leaves[first].values.clone(), null_buffer(validity))
        }
        _ => Err(Error::corrupt(format!("the levels of field {:?} ({}) do not match its type", field.name, field.data_type))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int32Array;
    use std::sync::Arc;

    /// `list<int32>` (all nullable): canonical levels 0 item, 1 null item, 2 null list,
    /// 3 empty list.
    fn list_path() -> LeafPath {
        LeafPath::new(vec![NodeKind::List, NodeKind::Item])
    }

    fn walk(pieces: &[(&[u16], &[u16])]) -> Result<Vec<NodeData>> {
        let path = list_path();
        let mut w = SimpleWalk::new(&path);
        let (mut values, mut rows) = (0usize, 0usize);
        for (r, d) in pieces {
            w.extend(Some(r), Some(d), r.len())?;
            rows += r.iter().filter(|&&x| x == 1).count();
            values += d.iter().filter(|&&x| x <= 1).count();
        }
        let values = Arc::new(Int32Array::from(vec![0; values])) as ArrayRef;
        let mut leaf = LeafData { path, rep: None, def: None, values, num_rows: rows, walked: Some(w.finish()) };
        replay(&mut leaf)
    }

    fn bits(b: &BooleanBufferBuilder) -> Vec<bool> {
        (0..b.len()).map(|i| b.get_bit(i)).collect()
    }

    #[test]
    fn walk_builds_offsets_and_validity_across_pieces() {
        // [[a, null], null, [], [b]]
        let rep: &[u16] = &[1, 0, 1, 1, 1];
        let def: &[u16] = &[0, 1, 2, 3, 0];
        for split in 0..=rep.len() {
            let nodes = walk(&[(&rep[..split], &def[..split]), (&rep[split..], &def[split..])]).unwrap();
            let NodeData::List { offsets, validity } = &nodes[0] else { panic!("list node expected") };
            assert_eq!(offsets, &[0, 2, 2, 2, 3], "split at {split}");
            assert_eq!(bits(validity), [true, false, true, true]);
            let NodeData::Item { validity } = &nodes[1] else { panic!("item node expected") };
            assert_eq!(bits(validity), [true, false, true]);
        }
    }

    #[test]
    fn walk_rejects_bad_levels() {
        let cases: [(&[u16], &[u16]); 5] = [
            (&[1, 0], &[3, 0]), // continues an empty list
            (&[1, 0], &[2, 0]), // continues a null list
            (&[0, 1], &[0, 0]), // starts inside a row
            (&[1], &[4]),       // definition level out of range
            (&[2], &[0]),       // repetition level out of range
        ];
        for (rep, def) in cases {
            assert!(walk(&[(rep, def)]).is_err(), "levels {rep:?} / {def:?} accepted");
            // The same levels split over two pieces.
            assert!(walk(&[(&rep[..1], &def[..1]), (&rep[1..], &def[1..])]).is_err());
        }
    }
}
