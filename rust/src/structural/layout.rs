//! Reading a page: the one trait every 2.1+ page layout implements.
//!
//! A read of some rows of a page goes through four steps, with all I/O left to the caller
//! (the file reader, which gathers the steps of every page of a request and fetches their
//! bytes with one coalescing call per round):
//!
//! 1. [`PageLayout::state_buffers`]: the page's small metadata buffers (mini-block chunk
//!    tables and dictionaries, full-zip repetition indexes, constant pages' levels);
//! 2. [`PageLayout::load_state`]: those bytes parsed once into the page's cached state;
//! 3. [`PageLayout::plan`]: the byte ranges decoding the rows needs, in rounds — a round may
//!    depend on the bytes of the rounds before it (blob pages find where their blobs are
//!    from the descriptors fetched in the first round);
//! 4. [`PageLayout::decode`]: the rows decoded from the fetched bytes, on the CPU only.
//!
//! The mini-block, full-zip, constant and blob layouts implement it (in their modules).
//! 2.0 `ArrayEncoding` pages do not: their decoder still reads byte ranges itself (see
//! [`super::v2_0::PageSource`]).

use std::ops::Range;

use arrow_buffer::Buffer;
use arrow_schema::DataType;

use super::builder::{LeafBuilder, Selection};
use super::miniblock::DecodedChunk;
use super::repdef::{Layer, LeafPath};
use crate::error::{Error, Result};
use crate::schema::LeafKind;

/// Where a page's buffers are, without reading them.
#[derive(Debug, Clone, Copy)]
pub struct PageInfo<'a> {
    /// Rows in the page.
    pub num_rows: u64,
    /// `(absolute position, size)` of each page buffer.
    pub buffers: &'a [(u64, u64)],
}

/// Rows of one page to read (page-local).
#[derive(Debug, Clone)]
pub enum PageRows {
    /// A range of rows.
    Range(Range<u64>),
    /// Sorted, distinct rows.
    Rows(Vec<u64>),
    /// Sorted, non-overlapping ranges.
    Ranges(Vec<Range<u64>>),
}

impl PageRows {
    /// Number of rows selected.
    pub fn count(&self) -> u64 {
        match self {
            PageRows::Range(r) => r.end - r.start,
            PageRows::Rows(r) => r.len() as u64,
            PageRows::Ranges(r) => r.iter().map(|r| r.end - r.start).sum(),
        }
    }

    /// The rows one by one.
    pub fn to_rows(&self) -> Vec<u64> {
        match self {
            PageRows::Range(r) => r.clone().collect(),
            PageRows::Rows(r) => r.clone(),
            PageRows::Ranges(r) => r.iter().flat_map(|r| r.clone()).collect(),
        }
    }

    /// The rows as runs of consecutive rows (empty runs dropped).
    pub fn to_runs(&self) -> Vec<Range<u64>> {
        match self {
            PageRows::Range(r) if r.is_empty() => Vec::new(),
            PageRows::Range(r) => vec![r.clone()],
            PageRows::Rows(r) => runs(r),
            PageRows::Ranges(r) => {
                let mut out: Vec<Range<u64>> = Vec::with_capacity(r.len());
                for r in r.iter().filter(|r| !r.is_empty()) {
                    match out.last_mut() {
                        Some(last) if last.end == r.start => last.end = r.end,
                        _ => out.push(r.clone()),
                    }
                }
                out
            }
        }
    }
}

/// What decoding some rows of a page needs to know besides the page.
#[derive(Debug)]
pub struct PageRequest<'a> {
    /// The rows.
    pub rows: &'a PageRows,
    /// The leaf's value kind.
    pub kind: &'a LeafKind,
    /// The leaf's Arrow type.
    pub data_type: &'a DataType,
    /// The leaf's structure (lists and structs above it).
    pub path: &'a LeafPath,
    /// Page definition levels → canonical ones (see [`super::repdef::page_to_canonical`]).
    pub table: &'a [u16],
    /// Whether rows are lists of levels (the leaf or the page has repetition).
    pub nested: bool,
    /// Size of the file (blob positions are checked against it).
    pub file_size: u64,
}

/// One page layout's reader (see the module documentation).
pub trait PageLayout {
    /// The page's metadata, parsed once and cached with the page.
    type State: Send + Sync + std::fmt::Debug;

    /// The structural layers of the page (innermost first).
    fn layers(&self) -> &[Layer];

    /// Indices of the page buffers [`PageLayout::load_state`] parses.
    fn state_buffers(&self, page: &PageInfo) -> Vec<usize>;

    /// Parses the state from the bytes of [`PageLayout::state_buffers`] (in that order).
    fn load_state(&self, page: &PageInfo, buffers: Vec<Buffer>, kind: &LeafKind) -> Result<Self::State>;

    /// Round `round` (0, 1, ...) of the plan for `req`: the absolute byte ranges to fetch,
    /// knowing the bytes fetched in the earlier rounds (`fetched`, in the order planned), or
    /// `None` when [`PageLayout::decode`] has all it needs. Pure: no I/O.
    fn plan(
        &self,
        page: &PageInfo,
        state: &Self::State,
        req: &PageRequest,
        round: usize,
        fetched: &[Buffer],
    ) -> Result<Option<Vec<Range<u64>>>>;

    /// Decodes the rows of `req` from the bytes of every round of the plan (in the order
    /// planned) into `out`. Pure, CPU only.
    fn decode(
        &self,
        page: &PageInfo,
        state: &Self::State,
        req: &PageRequest,
        fetched: &[Buffer],
        out: &mut LeafBuilder,
    ) -> Result<()>;

    /// Levels the page holds (its rows, or more with lists): sizes the output up front.
    fn num_levels(&self, page: &PageInfo) -> u64 {
        page.num_rows
    }

    /// Bytes of the values of `rows`, when the layout knows them from its state (variable
    /// full-zip pages); 0 otherwise. Sizes the output up front.
    fn value_bytes(&self, _page: &PageInfo, _state: &Self::State, _rows: &PageRows) -> u64 {
        0
    }
}

/// Sorted rows as runs of consecutive rows.
pub fn runs(rows: &[u64]) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    for &r in rows {
        match out.last_mut() {
            Some(run) if run.end == r => run.end += 1,
            _ => out.push(r..r + 1),
        }
    }
    out
}

/// Translates page definition levels to canonical ones.
pub fn to_canonical(def: &[u16], table: &[u16]) -> Result<Vec<u16>> {
    let max = def.iter().copied().max().unwrap_or(0);
    if max as usize >= table.len() {
        return Err(Error::corrupt(format!("definition level {max} is not valid for the page's layers")));
    }
    if table.iter().enumerate().all(|(i, &t)| t as usize == i) {
        return Ok(def.to_vec());
    }
    Ok(def.iter().map(|&d| table[d as usize]).collect())
}

/// Appends a decoded piece of a column without repetition.
pub fn append_decoded(out: &mut LeafBuilder, d: &DecodedChunk, table: &[u16], sel: Selection) -> Result<()> {
    if d.rep.is_some() {
        return Err(Error::corrupt("repetition levels in a column without lists"));
    }
    let def = d.def.as_deref().map(|x| to_canonical(x, table)).transpose()?;
    out.append(&d.values, def.as_deref(), sel)
}

/// Appends a whole decoded piece of a list column when every row it touches is in `rows`
/// (`first_row` = the first row starting in the piece; a piece that begins inside a row
/// continues `first_row - 1`). Returns the number of rows starting in the piece, or `None`
/// (nothing appended) when some of its rows are outside `rows`.
pub fn append_whole_piece(
    out: &mut LeafBuilder,
    piece: &DecodedChunk,
    (max_rep, visible_limit): (u16, u16),
    first_row: u64,
    rows: &Range<u64>,
    table: &[u16],
) -> Result<Option<u64>> {
    let rep = piece.rep.as_deref().ok_or_else(|| Error::corrupt("a list column's page has no repetition levels"))?;
    let Some(&r0) = rep.first() else {
        return Ok(Some(0));
    };
    let starts = rep.iter().filter(|&&r| r == max_rep).count() as u64;
    let first_touched = if r0 == max_rep { first_row } else { first_row.wrapping_sub(1) };
    if first_row == 0 && r0 != max_rep || first_touched < rows.start || first_row + starts > rows.end {
        return Ok(None);
    }
    let visible = match piece.def.as_deref() {
        Some(d) => d.iter().filter(|&&x| x <= visible_limit).count(),
        None => rep.len(),
    };
    if visible as u64 != piece.values.num_values() {
        return Ok(None);
    }
    let def = piece.def.as_deref().map(|d| to_canonical(d, table)).transpose()?;
    out.append_levels(Some(rep), def.as_deref(), rep.len(), starts as usize)?;
    out.append_values(&piece.values, Selection::All)?;
    Ok(Some(starts))
}

/// A decoded piece of a list column and a cursor over its levels: the counts of row starts
/// and visible levels before the cursor's position. Runs of rows come in ascending order, so
/// the cursor only moves forward over each piece, which is walked at most about once (no
/// index of every row start is built for the few rows a take needs).
pub struct PieceCursor {
    piece: DecodedChunk,
    max_rep: u16,
    visible_limit: u16,
    pos: usize,
    starts: u64,
    visible: usize,
    total_starts: Option<u64>,
}

impl PieceCursor {
    /// A cursor at the start of `piece`.
    pub fn new(piece: DecodedChunk, max_rep: u16, visible_limit: u16) -> Result<Self> {
        let rep = piece.rep.as_deref().ok_or_else(|| Error::corrupt("a list column's page has no repetition levels"))?;
        if let Some(d) = &piece.def {
            if d.len() != rep.len() {
                return Err(Error::corrupt(format!("{} repetition levels but {} definition levels", rep.len(), d.len())));
            }
        }
        Ok(Self { piece, max_rep, visible_limit, pos: 0, starts: 0, visible: 0, total_starts: None })
    }

    fn rep(&self) -> &[u16] {
        self.piece.rep.as_deref().expect("checked in new")
    }

    /// Whether the piece begins with levels of a row started in an earlier piece.
    pub fn starts_inside_row(&self) -> bool {
        self.rep().first().is_some_and(|&r| r != self.max_rep)
    }

    /// Number of row starts in the piece.
    fn total_starts(&mut self) -> u64 {
        let max_rep = self.max_rep;
        *self.total_starts.get_or_insert_with(|| {
            self.piece.rep.as_deref().expect("checked in new").iter().fold(0u64, |n, &r| n + (r == max_rep) as u64)
        })
    }

    /// Moves to the level of row start number `k` of the piece (or to the end if it has
    /// fewer); returns (position, row starts before it, visible levels before it).
    fn seek(&mut self, k: u64) -> (usize, u64, usize) {
        if k < self.starts {
            (self.pos, self.starts, self.visible) = (0, 0, 0);
        }
        let (max_rep, limit) = (self.max_rep, self.visible_limit);
        let rep = self.piece.rep.as_deref().expect("checked in new");
        let def = self.piece.def.as_deref();
        let (mut pos, mut starts, mut visible) = (self.pos, self.starts, self.visible);
        // Skip whole blocks of levels that do not hold the row start (vectorised counts).
        const BLOCK: usize = 64;
        while pos + BLOCK <= rep.len() {
            let in_block = rep[pos..pos + BLOCK].iter().fold(0u64, |n, &r| n + (r == max_rep) as u64);
            if starts + in_block > k {
                break;
            }
            starts += in_block;
            visible += match def {
                Some(d) => d[pos..pos + BLOCK].iter().fold(0usize, |n, &d| n + (d <= limit) as usize),
                None => BLOCK,
            };
            pos += BLOCK;
        }
        while pos < rep.len() {
            let start = rep[pos] == max_rep;
            if start && starts == k {
                break;
            }
            starts += start as u64;
            visible += def.is_none_or(|d| d[pos] <= limit) as usize;
            pos += 1;
        }
        (self.pos, self.starts, self.visible) = (pos, starts, visible);
        (pos, starts, visible)
    }

    /// The cursor moved back to the first level.
    fn rewind(&mut self) -> (usize, u64, usize) {
        (self.pos, self.starts, self.visible) = (0, 0, 0);
        (0, 0, 0)
    }

    /// Appends the part of the piece (levels and values of consecutive levels whose first
    /// row start begins row `first_row`; earlier levels continue row `first_row - 1`) that
    /// belongs to `rows`. Returns the number of row starts in the piece when `want_total`,
    /// else 0.
    pub fn append_rows(
        &mut self,
        out: &mut LeafBuilder,
        first_row: u64,
        rows: &Range<u64>,
        table: &[u16],
        want_total: bool,
    ) -> Result<u64> {
        let preamble_row = first_row.checked_sub(1);
        let (lo, starts_lo, v_lo) = if preamble_row.is_some_and(|r| rows.contains(&r)) {
            self.rewind()
        } else {
            self.seek(rows.start.saturating_sub(first_row))
        };
        let (hi, starts_hi, v_hi) = match rows.end.checked_sub(first_row) {
            Some(k) => self.seek(k),
            None => (lo, starts_lo, v_lo),
        };
        let (hi, starts_hi, v_hi) = if hi < lo { (lo, starts_lo, v_lo) } else { (hi, starts_hi, v_hi) };
        let piece = &self.piece;
        let rep = piece.rep.as_deref().expect("checked in new");
        out.append_values(&piece.values, Selection::Range(v_lo, v_hi - v_lo))?;
        let def = piece.def.as_ref().map(|d| to_canonical(&d[lo..hi], table)).transpose()?;
        out.append_levels(Some(&rep[lo..hi]), def.as_deref(), hi - lo, (starts_hi - starts_lo) as usize)?;
        Ok(if want_total { self.total_starts() } else { 0 })
    }
}
