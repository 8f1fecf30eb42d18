//! The read loop: a request (a row range, a set of rows) over a projection becomes rows per
//! page, every page's plan, one coalescing fetch per round, then decoding on the CPU pool.
//! `read_range`, `read_range_parallel` and `take` (the decoded path) live here, as does the
//! source that 2.0 nested fields read their columns through.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, SchemaRef};

use super::gather::Gathered;
use super::page::{plan_page, Column, Page, PageKind};
use super::FileReader;
use crate::error::{Error, Result};
use crate::schema::LanceField;
use crate::structural::assemble::{assemble, LeafData};
use crate::structural::builder::LeafBuilder;
use crate::structural::layout::{runs, PageRequest, PageRows};
use crate::structural::repdef::{page_to_canonical, LeafPath};
use crate::structural::shred::leaf_paths;
use crate::structural::{v2_0_nested, LeafKind};

impl FileReader {
    /// Reads rows `start..start + len` of the projected fields.
    pub fn read_range(&self, start: u64, len: u64, fields: &[usize]) -> Result<RecordBatch> {
        let arrays = self.read_range_columns(start, len, fields)?;
        self.batch(fields, arrays, len)
    }

    /// [`FileReader::read_range`] as the projected fields' arrays, without the batch (whose
    /// schema a table scan, reading a file per fragment, has already made).
    pub fn read_range_columns(&self, start: u64, len: u64, fields: &[usize]) -> Result<Vec<ArrayRef>> {
        let end = start.checked_add(len).filter(|&e| e <= self.num_rows).ok_or_else(|| {
            Error::IndexOutOfRange(format!(
                "rows {start}..{} are outside {} (which has {} rows)",
                start.saturating_add(len),
                self.path,
                self.num_rows
            ))
        })?;
        if let Some(l) = &self.legacy {
            return l.read_range(start, len, fields);
        }
        let parallel = fields.len() > 1 && len > 4096;
        self.read_fields(fields, RowSelection::Range(start..end), parallel).map_err(|e| self.as_corrupt(e))
    }

    /// An Arrow error while building arrays from this file's bytes (a validation failing: a
    /// struct child with nulls its non-nullable field may not have, offsets out of order)
    /// means the file is corrupt. Found by the `file_ops` fuzz target.
    fn as_corrupt(&self, e: Error) -> Error {
        match e {
            Error::Arrow(a) => Error::corrupt(format!("{}: decoded data is not valid Arrow: {a}", self.path)),
            e => e,
        }
    }

    /// Reads rows `start..start + len` as several batches decoded in parallel (each also
    /// decoding its columns in parallel), so that even a one-column scan uses every core,
    /// and none fetches more than about 32 MiB before decoding. Batches are in row order;
    /// nothing is copied to join them.
    pub fn read_range_parallel(&self, start: u64, len: u64, fields: &[usize]) -> Result<Vec<RecordBatch>> {
        const MIN_PIECE_ROWS: u64 = 64 * 1024;
        // A piece's bytes are fetched before it is decoded: pieces of at most about this
        // many bytes (estimated from the file's bytes per row) keep memory bounded and the
        // fetched bytes still in cache when they are decoded.
        const MAX_PIECE_BYTES: u64 = 32 << 20;
        let threads = crate::parallel::cpu_pool().current_num_threads() as u64;
        let est_bytes = (self.file_size as u128 * len as u128 / self.num_rows.max(1) as u128) as u64;
        let pieces = (len / MIN_PIECE_ROWS).min(threads * 2).max(est_bytes / MAX_PIECE_BYTES).min(len);
        if pieces < 2 {
            return Ok(vec![self.read_range(start, len, fields)?]);
        }
        let per = len.div_ceil(pieces);
        let bounds: Vec<(u64, u64)> =
            (0..pieces).map(|i| (start + i * per, per.min(len - (i * per).min(len)))).filter(|b| b.1 > 0).collect();
        crate::parallel::map(bounds, true, |(s, l)| self.read_range(s, l, fields)).into_iter().collect()
    }

    /// Reads the rows at `indices` (any order, repeats allowed; output follows the input).
    ///
    /// Fields stored row by row (vectors, images: see [`FileReader::direct_rows`]) are copied
    /// straight into the output in the order given; the others are read for the sorted
    /// distinct rows, then put in order.
    pub fn take(&self, indices: &[u64], fields: &[usize]) -> Result<RecordBatch> {
        if let Some(&bad) = indices.iter().find(|&&i| i >= self.num_rows) {
            return Err(Error::IndexOutOfRange(format!("row {bad} is out of range for {} ({} rows)", self.path, self.num_rows)));
        }
        if let Some(l) = &self.legacy {
            let arrays = l.take(indices, fields)?;
            return self.batch(fields, arrays, indices.len() as u64);
        }
        let direct = fields.iter().map(|&f| self.direct_rows(f)).collect::<Result<Vec<_>>>()?;
        if direct.iter().all(Option::is_none) {
            return self.take_decoded(indices, fields).map_err(|e| self.as_corrupt(e));
        }
        let others: Vec<usize> = fields.iter().zip(&direct).filter(|(_, x)| x.is_none()).map(|(&f, _)| f).collect();
        let mut decoded = if others.is_empty() {
            Vec::new()
        } else {
            self.take_decoded(indices, &others).map_err(|e| self.as_corrupt(e))?.columns().to_vec()
        }
        .into_iter();
        let arrays = fields
            .iter()
            .zip(direct)
            .map(|(&f, x)| match x {
                Some(x) => {
                    let mut out = Gathered::new(&x, indices.len());
                    self.prefetch_rows(&x, indices);
                    self.gather_rows(&x, indices, &mut out)?;
                    out.into_array(self.arrow_schema.field(f).data_type())
                }
                None => decoded.next().ok_or_else(|| Error::Internal("a decoded column is missing".into())),
            })
            .collect::<Result<Vec<_>>>()
            .map_err(|e| self.as_corrupt(e))?;
        self.batch(fields, arrays, indices.len() as u64)
    }

    /// [`FileReader::take`] by decoding: the sorted distinct rows, then put in order.
    fn take_decoded(&self, indices: &[u64], fields: &[usize]) -> Result<RecordBatch> {
        let sorted_unique = indices.windows(2).all(|w| w[0] < w[1]);
        let (rows, permutation) = if sorted_unique {
            (indices.to_vec(), None)
        } else {
            // (the requests sorted with their positions: each position's rank among the distinct
            // rows in one pass, not a binary search per request, which misses the cache at
            // every step of a large take)
            let mut by_row: Vec<(u64, u32)> = indices.iter().enumerate().map(|(k, &i)| (i, k as u32)).collect();
            by_row.sort_unstable();
            let mut rows: Vec<u64> = Vec::with_capacity(by_row.len());
            let mut perm = vec![0u32; indices.len()];
            for (n, &(row, k)) in by_row.iter().enumerate() {
                if n % 65_536 == 0 {
                    crate::interrupt::check()?;
                }
                if rows.last() != Some(&row) {
                    rows.push(row);
                }
                perm[k as usize] = (rows.len() - 1) as u32;
            }
            (rows, Some(UInt32Array::from(perm)))
        };
        let parallel = fields.len() > 1 && rows.len() > 64;
        let mut arrays = self.read_fields(fields, RowSelection::Rows(&rows), parallel)?;
        if let Some(a) = arrays.iter().find(|a| a.len() != rows.len()) {
            // Corrupt pages can decode to fewer rows than asked; permuting would index past them.
            return Err(Error::corrupt(format!("{}: {} rows decoded for {} asked", self.path, a.len(), rows.len())));
        }
        if let Some(p) = permutation {
            arrays = arrays
                .iter()
                .map(|a| arrow_select::take::take(a.as_ref(), &p, None).map_err(Error::from))
                .collect::<Result<Vec<_>>>()?;
        }
        self.batch(fields, arrays, indices.len() as u64)
    }

    fn batch(&self, fields: &[usize], arrays: Vec<ArrayRef>, rows: u64) -> Result<RecordBatch> {
        decoded_batch(self.projected_schema(fields), arrays, rows as usize, &self.path)
    }

    /// The leaf columns of top-level field `field`: (file column, leaf field, structure).
    fn leaves(&self, field: usize) -> Result<Vec<(usize, &LanceField, &LeafPath)>> {
        let f = self.stored_field(field);
        let memo = &self.fields[field].leaf_paths;
        if let Some(paths) = memo.get() {
            return Ok(self.fields[field]
                .columns
                .iter()
                .copied()
                .zip(f.leaf_fields())
                .zip(paths)
                .map(|((c, l), p)| (c, l, p))
                .collect());
        }
        let cols = &self.fields[field].columns;
        let paths = leaf_paths(f)?;
        if !self.version.is_structural() && (paths.len() != 1 || paths[0].1.kinds.len() != 1) {
            return Err(Error::Internal(format!("nested 2.0 column {:?} read as leaf columns", f.name)));
        }
        if cols.len() != paths.len() {
            return Err(Error::corrupt(format!("field {:?} has {} leaves but {} columns", f.name, paths.len(), cols.len())));
        }
        let nested = paths.iter().any(|(_, p)| p.kinds.len() > 1) || !self.version.is_structural();
        if nested && f.leaf_fields().iter().any(|l| matches!(&l.data_type, DataType::Struct(c) if c.is_empty())) {
            return Err(Error::not_supported(format!(
                "field {:?}: structs without children inside other structs or lists, or in 2.0 files (top-level ones of 2.1+ files are read)",
                f.name
            )));
        }
        let _ = memo.set(paths.into_iter().map(|(_, p)| p).collect());
        self.leaves(field)
    }

    /// Reads `sel` of the projected fields: every leaf's pages planned, their bytes fetched
    /// with one coalescing read per round (see [`FileReader::fetch_leaves`]), then decoded on
    /// the CPU, fields in parallel when `parallel`.
    fn read_fields(&self, fields: &[usize], sel: RowSelection, parallel: bool) -> Result<Vec<ArrayRef>> {
        let mut leaves = Vec::new();
        let mut counts = Vec::with_capacity(fields.len());
        for &f in fields {
            if self.nested_v2_0_column(f).is_some() {
                counts.push(None);
                continue;
            }
            let before = leaves.len();
            for (col, leaf, path) in self.leaves(f)? {
                leaves.push(self.plan_leaf(col, leaf, path, sel.clone(), self.num_rows)?);
            }
            counts.push(Some(leaves.len() - before));
        }
        // Object storage: one coalesced fetch per round for every field (fewer requests).
        // Local files: each field fetches its own bytes inside its parallel job, so that the
        // copies out of the page cache run on every core (one thread reading a whole round
        // made 1,000-row takes 2x slower).
        let per_field_fetch = parallel && self.io.cheap_small_reads();
        if !per_field_fetch {
            self.fetch_leaves(&mut leaves)?;
        }
        let mut leaves = leaves.into_iter();
        let jobs: Vec<(usize, Option<Vec<LeafRead>>)> =
            fields.iter().zip(counts).map(|(&f, n)| (f, n.map(|n| leaves.by_ref().take(n).collect()))).collect();
        let arrays = crate::parallel::map(jobs, parallel, |(f, job)| {
            let field = self.stored_field(f);
            match job {
                Some(mut job) => {
                    if per_field_fetch {
                        self.fetch_leaves(&mut job)?;
                    }
                    assemble(field, job.into_iter().map(|l| self.decode_leaf(l)).collect::<Result<Vec<_>>>()?)
                }
                None => {
                    // 2.0 struct and list fields: read level by level (see `v2_0_nested`).
                    let col = self.nested_v2_0_column(f).ok_or_else(|| Error::Internal("not a nested 2.0 field".into()))?;
                    let ranges = match &sel {
                        RowSelection::Range(r) => vec![r.clone()],
                        RowSelection::Rows(r) => runs(r),
                        RowSelection::Ranges(r) => r.to_vec(),
                    };
                    v2_0_nested::read_field(self, field, col, self.num_rows, &ranges)
                }
            }
        });
        arrays.into_iter().collect()
    }

    /// The first column of top-level field `field` if it is a nested field of a 2.0 file
    /// (one with child fields: read by [`v2_0_nested`]).
    fn nested_v2_0_column(&self, field: usize) -> Option<usize> {
        let first = self.fields[field].columns.first().copied();
        let nested = !self.version.is_structural()
            && (!self.schema.fields[field].children.is_empty()
                || first.is_some_and(|c| self.two_column_strings.binary_search(&c).is_ok()));
        nested.then_some(first).flatten()
    }

    /// Reads the selected rows of one leaf column, which holds `column_rows` rows.
    fn read_leaf(&self, col: usize, leaf: &LanceField, path: &LeafPath, sel: RowSelection, column_rows: u64) -> Result<LeafData> {
        let mut read = [self.plan_leaf(col, leaf, path, sel, column_rows)?];
        self.fetch_leaves(&mut read)?;
        let [read] = read;
        self.decode_leaf(read)
    }

    /// Chooses the rows of each page of one leaf column (which holds `column_rows` rows).
    fn plan_leaf<'r>(
        &'r self,
        col: usize,
        leaf: &'r LanceField,
        path: &'r LeafPath,
        sel: RowSelection,
        column_rows: u64,
    ) -> Result<LeafRead<'r>> {
        let kind = LeafKind::of_field(leaf)?;
        let column = self.column_ref(col)?;
        // Pages of columns below a fixed-size list of structs count its items, not rows.
        let scale = path.row_scale();
        let total =
            column_rows.checked_mul(scale).ok_or_else(|| Error::corrupt(format!("{}: column {col} is too long", self.path)))?;
        check_rows(column, total, &self.path, col)?;
        let (scaled_rows, scaled_ranges): (Vec<u64>, Vec<Range<u64>>);
        let sel = match sel {
            RowSelection::Range(r) if scale > 1 => RowSelection::Range(r.start * scale..r.end * scale),
            RowSelection::Rows(rows) if scale > 1 => {
                scaled_rows = rows.iter().flat_map(|&r| r * scale..(r + 1) * scale).collect();
                RowSelection::Rows(&scaled_rows)
            }
            RowSelection::Ranges(ranges) if scale > 1 => {
                scaled_ranges = ranges.iter().map(|r| r.start * scale..r.end * scale).collect();
                RowSelection::Ranges(&scaled_ranges)
            }
            other => other,
        };
        let capacity = match &sel {
            RowSelection::Range(r) => (r.end - r.start) as usize,
            RowSelection::Rows(r) => r.len(),
            RowSelection::Ranges(r) => r.iter().map(|r| (r.end - r.start) as usize).sum(),
        };
        let pages = page_groups(column, &sel)
            .into_iter()
            .map(|(page, rows)| {
                let (table, nested) = match page.layers() {
                    Some(layers) => (page_to_canonical(&path, layers)?, path.has_lists() || layers.iter().any(|l| l.is_list())),
                    None => (vec![0, path.null_def(path.kinds.len() - 1)], path.has_lists()),
                };
                Ok(PageRead { page, rows, table, nested, fetched: Vec::new(), planned: false })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(LeafRead { leaf, path, kind, scale, capacity, pages })
    }

    /// Loads the state of every page of `leaves` that has none yet (one read), then fetches
    /// the bytes their plans ask for: one coalescing read per round of plans, for all pages
    /// together.
    fn fetch_leaves(&self, leaves: &mut [LeafRead]) -> Result<()> {
        let pages: Vec<(&Page, &LeafKind)> = leaves.iter().flat_map(|l| l.pages.iter().map(move |p| (p.page, &l.kind))).collect();
        self.load_states(&pages)?;
        drop(pages);
        // A layout plans at most a few rounds (blob pages: two).
        for round in 0..4 {
            let mut ranges = Vec::new();
            let mut owners = Vec::new();
            let mut done = Vec::new();
            for (li, l) in leaves.iter().enumerate() {
                for (pi, p) in l.pages.iter().enumerate().filter(|(_, p)| !p.planned) {
                    let req = l.request(p, self.file_size);
                    match plan_page(p.page, &req, round, &p.fetched)? {
                        Some(r) => {
                            owners.push((li, pi, r.len()));
                            ranges.extend(r);
                        }
                        None => done.push((li, pi)),
                    }
                }
            }
            for (li, pi) in done {
                leaves[li].pages[pi].planned = true;
            }
            if owners.is_empty() {
                return Ok(());
            }
            let mut fetched = if ranges.is_empty() { Vec::new() } else { self.io.read_ranges(&ranges)? }.into_iter();
            for (li, pi, n) in owners {
                leaves[li].pages[pi].fetched.extend(fetched.by_ref().take(n));
            }
        }
        Err(Error::Internal("a page layout planned too many rounds of reads".into()))
    }

    /// Decodes a fetched leaf column.
    fn decode_leaf(&self, read: LeafRead) -> Result<LeafData> {
        let mut out = LeafBuilder::with_path(read.kind.clone(), read.path.clone(), read.capacity);
        if matches!(read.kind, LeafKind::Variable { .. }) {
            // Variable-width values of full-zip pages take at most the bytes of their rows:
            // room for all of them up front, so large values (images, documents) are not
            // copied again and again as the output grows.
            let bytes: u64 = read.pages.iter().map(|p| p.page.value_bytes(&p.rows)).sum();
            out.reserve_bytes(bytes as usize);
        }
        if read.path.max_rep > 0 {
            // Room for the levels and values of the selected rows (lists make them more
            // numerous than rows), estimated from the pages' item counts.
            let estimate: u64 =
                read.pages.iter().map(|p| p.page.num_levels().min(1 << 32) * p.rows.count() / p.page.num_rows.max(1)).sum();
            out.reserve(estimate as usize);
        }
        for p in &read.pages {
            crate::interrupt::check()?;
            let req = read.request(p, self.file_size);
            self.decode_page(p.page, &req, &p.fetched, &mut out)?;
        }
        let mut data = out.finish(&read.leaf.data_type)?;
        data.num_rows /= read.scale as usize;
        Ok(data)
    }
}

fn check_rows(column: &Column, num_rows: u64, path: &str, col: usize) -> Result<()> {
    let total: u64 = column.pages.iter().map(|p| p.num_rows).sum();
    if total != num_rows {
        return Err(Error::corrupt(format!("{path}: column {col} has {total} rows in its pages, the file has {num_rows}")));
    }
    Ok(())
}

/// Rows of a column to read.
#[derive(Clone)]
pub(super) enum RowSelection<'a> {
    Range(Range<u64>),
    Rows(&'a [u64]),
    /// Sorted, non-overlapping ranges (the items of some lists).
    Ranges(&'a [Range<u64>]),
}

/// The pages of `column` that hold rows of `sel` (rows checked against the column's length
/// by the caller), with page-local selections, in page order.
fn page_groups<'c>(column: &'c Column, sel: &RowSelection<'_>) -> Vec<(&'c Page, PageRows)> {
    let mut groups: Vec<(&Page, PageRows)> = Vec::new();
    match sel {
        RowSelection::Range(rows) => {
            for p in column.pages.iter().filter(|p| p.first_row < rows.end && p.first_row + p.num_rows > rows.start) {
                let local = rows.start.max(p.first_row) - p.first_row..rows.end.min(p.first_row + p.num_rows) - p.first_row;
                groups.push((p, PageRows::Range(local)));
            }
        }
        RowSelection::Ranges(ranges) => {
            for p in column.pages.iter().filter(|p| p.num_rows > 0) {
                let local = v2_0_nested::page_local(ranges, p.first_row, p.first_row + p.num_rows);
                if !local.is_empty() {
                    groups.push((p, PageRows::Ranges(local)));
                }
            }
        }
        RowSelection::Rows(rows) => {
            let mut pi = 0;
            for &r in rows.iter() {
                while column.pages[pi].first_row + column.pages[pi].num_rows <= r {
                    pi += 1;
                }
                let page = &column.pages[pi];
                match groups.last_mut() {
                    Some((p, PageRows::Rows(v))) if std::ptr::eq(*p, page) => v.push(r - page.first_row),
                    _ => groups.push((page, PageRows::Rows(vec![r - page.first_row]))),
                }
            }
        }
    }
    groups
}

/// One leaf column of a read: its pages' rows, plans and fetched bytes.
struct LeafRead<'r> {
    leaf: &'r LanceField,
    path: &'r LeafPath,
    kind: LeafKind,
    /// Page rows per row of the column (fixed-size lists of structs).
    scale: u64,
    capacity: usize,
    pages: Vec<PageRead<'r>>,
}

/// One page of a [`LeafRead`].
struct PageRead<'r> {
    page: &'r Page,
    rows: PageRows,
    table: Vec<u16>,
    nested: bool,
    /// The bytes of the plan's rounds so far, in the order planned.
    fetched: Vec<Buffer>,
    /// Whether the plan is complete.
    planned: bool,
}

impl LeafRead<'_> {
    fn request<'a>(&'a self, p: &'a PageRead, file_size: u64) -> PageRequest<'a> {
        PageRequest {
            rows: &p.rows,
            kind: &self.kind,
            data_type: &self.leaf.data_type,
            path: &self.path,
            table: &p.table,
            nested: p.nested,
            file_size,
        }
    }
}

/// 2.0 nested fields read their columns through the reader (plan → fetch → decode per
/// level; see [`v2_0_nested`]).
impl v2_0_nested::ColumnSource for FileReader {
    fn pages(&self, col: usize) -> Result<Vec<v2_0_nested::PageRef<'_>>> {
        self.column_ref(col)?
            .pages
            .iter()
            .map(|p| match &p.kind {
                PageKind::V2_0(l) => {
                    Ok(v2_0_nested::PageRef { num_rows: p.num_rows, encoding: &l.encoding, buffers: &p.buffers })
                }
                _ => Err(Error::corrupt(format!("{}: column {col} has a page that is not a 2.0 page", self.path))),
            })
            .collect()
    }

    fn fetch(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        self.io.read_ranges(ranges)
    }

    fn two_column_string(&self, col: usize) -> bool {
        self.two_column_strings.binary_search(&col).is_ok()
    }

    fn read_column(&self, col: usize, field: &LanceField, column_rows: u64, ranges: &[Range<u64>]) -> Result<ArrayRef> {
        let path = leaf_paths(field)?
            .into_iter()
            .next()
            .map(|(_, p)| p)
            .ok_or_else(|| Error::Internal(format!("field {:?} has no leaf", field.name)))?;
        let data = self.read_leaf(col, field, &path, RowSelection::Ranges(ranges), column_rows)?;
        assemble(field, vec![data])
    }
}

/// A batch of arrays decoded from `what` (a file, a fragment): the schema came from the same
/// bytes, so arrays that do not fit it (a wrong length, nulls in a non-nullable column) are
/// a corrupt file, not a failed Arrow operation. Found by the `file_reader` fuzz target.
pub fn decoded_batch(
    schema: SchemaRef,
    mut arrays: Vec<ArrayRef>,
    rows: usize,
    what: impl std::fmt::Display,
) -> Result<RecordBatch> {
    for (a, f) in arrays.iter_mut().zip(schema.fields()) {
        if matches!(f.data_type(), DataType::Struct(c) if c.is_empty()) && a.null_count() > 0 {
            // An empty struct's page is a constant page of nothing, which reads as nulls;
            // pylance writes no nulls for such columns (it refuses them): every row is valid.
            *a = Arc::new(arrow_array::StructArray::new_empty_fields(a.len(), None));
        }
    }
    let opts = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema, arrays, &opts)
        .map_err(|e| Error::corrupt(format!("{what}: the decoded columns do not fit the schema: {e}")))
}
