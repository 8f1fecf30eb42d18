//! The direct-gather fast path: fields stored row by row (full-zip pages without control
//! words or per-value compression: vectors, images) are copied straight out of the mapped
//! file in the order asked, with no decoding and no reordering afterwards.
//!
//! It lives with the reader rather than next to the dataset take code in `table/` because it
//! needs the reader's internals: the I/O handle (its mapping, prefetch and small reads),
//! the parsed page layouts, and the cached page state (full-zip repetition indexes). The
//! dataset side (`table::scan`) plans and drives it across files through the public
//! [`FileReader::direct_rows`], [`FileReader::gather_rows`],
//! [`FileReader::gather_fixed_across`], [`FileReader::visit_values`] and [`Gathered`].

use std::ops::Range;

use arrow_array::{Array, ArrayRef};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_data::ArrayData;
use arrow_schema::DataType;

use super::page::{Page, PageKind, PageState};
use super::FileReader;
use crate::encodings::block::read_uint;
use crate::error::{Error, Result};
use crate::structural::fullzip::{self, FullZipState, RepIndex};
use crate::structural::LeafKind;

impl FileReader {
    /// How a top-level field is stored if its rows can be copied straight into an output:
    /// every page full-zip, without control words (no nulls, no lists) and without per-value
    /// compression — what vectors (fixed-size lists of numbers), other wide fixed values and
    /// large binary values (images) become when no value is null. `None` for anything else,
    /// and when the storage makes many small reads expensive (object stores: there the
    /// coalescing path wins).
    ///
    /// Such rows are copied out of the mapped file, in the order asked, into the output: no
    /// read buffer, no decoding, no reordering afterwards (see [`FileReader::gather_rows`]).
    pub fn direct_rows(&self, field: usize) -> Result<Option<DirectRows>> {
        if !self.version.is_structural() || !self.io.cheap_small_reads() {
            return Ok(None);
        }
        let f = &self.schema.fields[field];
        let cols = &self.fields[field].columns;
        if !f.children.is_empty() || f.is_packed_struct() || cols.len() != 1 {
            return Ok(None);
        }
        let data_type = self.arrow_schema.field(field).data_type();
        // Fixed: (bytes per value, items per fixed-size list, bytes per item).
        let fixed = match data_type {
            DataType::Binary | DataType::LargeBinary => None,
            DataType::FixedSizeList(item, d) => match fixed_byte_width(item.data_type()) {
                Some(w) if !matches!(item.data_type(), DataType::FixedSizeList(..)) => {
                    Some((w * *d as usize, Some(*d as u64), w as u64))
                }
                _ => return Ok(None),
            },
            other => match fixed_byte_width(other) {
                Some(w) => Some((w, None, w as u64)),
                None => return Ok(None),
            },
        };
        if fixed.is_some_and(|(w, _, _)| w == 0) {
            return Ok(None);
        }
        let column = self.column_ref(cols[0])?;
        let live: Vec<(usize, &Page)> = column.pages.iter().enumerate().filter(|(_, p)| p.num_rows > 0).collect();
        let mut next = 0u64;
        for (_, p) in &live {
            let PageKind::FullZip(layout) = &p.kind else { return Ok(None) };
            let plain = match (&layout.kind, fixed) {
                (fullzip::ValueKind::Fixed { bits, dim: page_dim, item_bits, validity_bytes }, Some((width, dim, item))) => {
                    *bits == width as u64 * 8
                        && *page_dim == dim
                        && (dim.is_none() || *item_bits == item * 8)
                        && *validity_bytes == 0
                }
                (fullzip::ValueKind::Variable { offset_bits, per_value: fullzip::PerValue::None, packed: None }, None) => {
                    matches!(offset_bits, 8 | 16 | 32 | 64)
                }
                _ => false,
            };
            if !plain || layout.bits_rep != 0 || layout.bits_def != 0 || p.first_row != next || p.buffers.is_empty() {
                return Ok(None);
            }
            next = p.first_row + p.num_rows;
        }
        if next != self.num_rows {
            return Ok(None);
        }
        // Variable rows are found through each page's repetition index, fetched when a take
        // first touches the page (see [`FileReader::rep_indexes`]): a one-row take of a
        // column of many pages reads one index, not all of them.
        let mut pages = Vec::with_capacity(live.len());
        for (page, p) in live {
            let (position, len) = p.buffers[0];
            let len_bytes = match (fixed, &p.kind) {
                (Some((width, _, _)), _) => {
                    if p.num_rows.checked_mul(width as u64).is_none_or(|bytes| bytes > len) {
                        return Err(Error::corrupt(format!("{}: full-zip rows lie beyond the page's data buffer", self.path)));
                    }
                    0
                }
                (None, PageKind::FullZip(l)) => {
                    let fullzip::ValueKind::Variable { offset_bits, .. } = l.kind else { return Ok(None) };
                    if !l.has_rep_index() {
                        return Err(Error::corrupt(format!("{}: variable full-zip page without a repetition index", self.path)));
                    }
                    offset_bits as usize / 8
                }
                (None, _) => return Ok(None),
            };
            pages.push(DirectPage { first_row: p.first_row, num_rows: p.num_rows, position, page, len_bytes });
        }
        let kind = if fixed.is_none() { Some(LeafKind::of_field(f)?) } else { None };
        Ok(Some(DirectRows { width: fixed.map(|(w, _, _)| w), column: cols[0], kind, pages }))
    }

    /// Tells the storage that the values of `rows` (any order) of a field laid out as `plan`
    /// are about to be gathered ([`FileReader::gather_rows`], [`FileReader::visit_values`]):
    /// when they are not in memory, their reads start now, all together (see
    /// [`crate::io::Reader::prefetch`]). Call it once for all the rows of a take, not per run.
    pub fn prefetch_rows(&self, plan: &DirectRows, rows: &[u64]) {
        // A page whose index cannot be read is reported by the gather that follows.
        let indexes = match plan.width {
            Some(_) => Vec::new(),
            None => match self.rep_indexes(plan, rows) {
                Ok(indexes) => indexes,
                Err(_) => return,
            },
        };
        let range = |k: usize| -> Option<Range<u64>> {
            let r = rows[k];
            let i = self.direct_page_index(plan, r).ok()?;
            let p = &plan.pages[i];
            match plan.width {
                Some(w) => {
                    let start = p.position + (r - p.first_row) * w as u64;
                    Some(start..start + w as u64)
                }
                None => {
                    let idx = indexes.get(i).copied().flatten()?;
                    Some(p.position + idx.offset(r - p.first_row)..p.position + idx.offset(r - p.first_row + 1))
                }
            }
        };
        self.io.prefetch(rows.len(), &range);
    }

    /// Appends the values of `rows` (any order, repeats allowed) of a field laid out as
    /// `plan` to `out`: one copy out of the mapped file per value, or per run of consecutive
    /// fixed-width values (one read each if the file cannot be mapped).
    pub fn gather_rows(&self, plan: &DirectRows, rows: &[u64], out: &mut Gathered) -> Result<()> {
        let map = self.io.mapped();
        let data_before = out.data.len();
        let page_of = |r: u64| self.direct_page(plan, r);
        let mut scratch = Vec::new();
        match (plan.width, &mut out.offsets) {
            (Some(w), None) => {
                out.data.reserve(rows.len() * w);
                let mut k = 0;
                while k < rows.len() {
                    if k % 4096 == 0 {
                        crate::interrupt::check()?;
                    }
                    let r = rows[k];
                    let p = page_of(r)?;
                    let end = p.first_row + p.num_rows;
                    let mut run = 1;
                    while k + run < rows.len() && rows[k + run] == r + run as u64 && r + (run as u64) < end {
                        run += 1;
                    }
                    out.data.extend_from_slice(self.bytes_at(
                        map,
                        &mut scratch,
                        p.position + (r - p.first_row) * w as u64,
                        run * w,
                    )?);
                    k += run;
                }
            }
            (None, Some(offsets)) => {
                // Where each value is, then room for all of them at once.
                let spans = self.value_spans(plan, rows)?;
                out.data.reserve(spans.iter().map(|s| s.1 - s.2).sum());
                offsets.reserve(rows.len());
                for (i, span) in spans.into_iter().enumerate() {
                    if i % 1024 == 0 {
                        crate::interrupt::check()?;
                    }
                    out.data.extend_from_slice(self.span_value(map, &mut scratch, span)?);
                    offsets.push(out.data.len() as i64);
                }
            }
            _ => return Err(Error::Internal("gathering into an output of another layout".into())),
        }
        if map.is_some() {
            crate::io::count_mapped((out.data.len() - data_before) as u64);
        }
        out.rows += rows.len();
        Ok(())
    }

    /// Gathers fixed-width values of rows spread over several files, in request order, in
    /// one pass: `files[i]` is the reader and plan of file `i`, each request names (file
    /// index, row). Rows in random order make runs a row long, where one
    /// [`FileReader::gather_rows`] call per run cost more than the copy; consecutive rows of a
    /// file are still copied as one run. Returns `false`, having gathered nothing, when a file
    /// is not mapped or its values are not of one width: the caller then goes run by run.
    pub fn gather_fixed_across(
        files: &[(&FileReader, &DirectRows)],
        requests: &[(usize, u64)],
        out: &mut Gathered,
    ) -> Result<bool> {
        if out.offsets.is_some() {
            return Err(Error::Internal("gathering fixed-width values into a variable-width output".into()));
        }
        let Some(w) = Self::mapped_width(files) else { return Ok(false) };
        out.data.reserve(requests.len() * w);
        let data = &mut out.data;
        Self::fixed_runs(files, requests, w, |bytes| data.extend_from_slice(bytes))?;
        out.rows += requests.len();
        Ok(true)
    }

    /// As [`FileReader::gather_fixed_across`], into `out`, which must hold exactly the
    /// requests' values (`requests.len()` × the values' width): for callers that own the
    /// destination (pinned host memory of a training batch). `false`, nothing written, when a
    /// file is not mapped or the values are not of one width.
    pub fn gather_fixed_into(files: &[(&FileReader, &DirectRows)], requests: &[(usize, u64)], out: &mut [u8]) -> Result<bool> {
        let Some(w) = Self::mapped_width(files) else { return Ok(false) };
        let need = requests.len().checked_mul(w).ok_or_else(|| Error::invalid_input("too many rows for one buffer"))?;
        if out.len() != need {
            return Err(Error::invalid_input(format!(
                "the output buffer holds {} bytes; {} rows of {w} bytes need {need}",
                out.len(),
                requests.len()
            )));
        }
        let mut at = 0;
        Self::fixed_runs(files, requests, w, |bytes| {
            // In bounds: the runs add up to `requests.len() * w` bytes, checked above.
            out[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        })?;
        Ok(true)
    }

    /// The one width of every file's fixed values when all of them are mapped.
    fn mapped_width(files: &[(&FileReader, &DirectRows)]) -> Option<usize> {
        let w = files.first()?.1.width?;
        files.iter().all(|(reader, plan)| reader.io.mapped().is_some() && plan.width == Some(w)).then_some(w)
    }

    /// Hands the bytes of `requests` (all files mapped, values `w` wide: see
    /// [`FileReader::mapped_width`]) to `emit` in request order, consecutive rows of a file
    /// as one slice.
    fn fixed_runs(
        files: &[(&FileReader, &DirectRows)],
        requests: &[(usize, u64)],
        w: usize,
        mut emit: impl FnMut(&[u8]),
    ) -> Result<()> {
        let maps = files
            .iter()
            .map(|(reader, _)| reader.io.mapped().ok_or_else(|| Error::Internal("a file is no longer mapped".into())))
            .collect::<Result<Vec<_>>>()?;
        // The run being copied: (file, first byte, end byte).
        let mut run: Option<(usize, usize, usize)> = None;
        let mut flush = |run: Option<(usize, usize, usize)>| -> Result<()> {
            if let Some((i, start, end)) = run {
                let bytes = maps[i]
                    .get(start..end)
                    .ok_or_else(|| Error::corrupt(format!("{}: rows at byte {start} lie outside the file", files[i].0.path)))?;
                emit(bytes);
            }
            Ok(())
        };
        for (k, &(i, r)) in requests.iter().enumerate() {
            if k % 4096 == 0 {
                crate::interrupt::check()?;
            }
            let (reader, plan) = files.get(i).ok_or_else(|| Error::Internal(format!("file {i} was not planned")))?;
            let p = reader.direct_page(plan, r)?;
            let start = usize::try_from(p.position + (r - p.first_row) * w as u64)
                .map_err(|_| Error::corrupt(format!("{}: rows lie beyond the address space", reader.path)))?;
            run = match run {
                Some((ri, rs, re)) if ri == i && re == start => Some((ri, rs, re + w)),
                other => {
                    flush(other)?;
                    Some((i, start, start + w))
                }
            };
        }
        flush(run)?;
        crate::io::count_mapped((requests.len() * w) as u64);
        Ok(())
    }

    /// Hands each variable-width value of `rows` (any order, repeats allowed) of a field laid
    /// out as `plan` to `f`, in order, as a slice of the mapped file (or of a read buffer):
    /// for callers that copy each value once into its own object.
    pub fn visit_values(&self, plan: &DirectRows, rows: &[u64], mut f: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        if plan.width.is_some() {
            return Err(Error::Internal("visiting the values of a fixed-width column".into()));
        }
        let map = self.io.mapped();
        let mut scratch = Vec::new();
        let mut copied = 0u64;
        for (i, span) in self.value_spans(plan, rows)?.into_iter().enumerate() {
            if i % 1024 == 0 {
                crate::interrupt::check()?;
            }
            copied += span.1 as u64;
            f(self.span_value(map, &mut scratch, span)?)?;
        }
        if map.is_some() {
            crate::io::count_mapped(copied);
        }
        Ok(())
    }

    /// The page of `plan` holding row `r`.
    fn direct_page<'p>(&self, plan: &'p DirectRows, r: u64) -> Result<&'p DirectPage> {
        Ok(&plan.pages[self.direct_page_index(plan, r)?])
    }

    /// The index in `plan.pages` of the page holding row `r`.
    fn direct_page_index(&self, plan: &DirectRows, r: u64) -> Result<usize> {
        let page = plan.pages.partition_point(|p| p.first_row + p.num_rows <= r);
        if page < plan.pages.len() {
            Ok(page)
        } else {
            Err(Error::IndexOutOfRange(format!("row {r} is out of range for {} ({} rows)", self.path, self.num_rows)))
        }
    }

    /// The repetition index of each page of a variable-width `plan` that `rows` touch
    /// (`None` for the others), the missing ones fetched together in one read and kept in
    /// the pages' cached state.
    fn rep_indexes(&self, plan: &DirectRows, rows: &[u64]) -> Result<Vec<Option<&RepIndex>>> {
        let kind = plan.kind.as_ref().ok_or_else(|| Error::Internal("fixed-width rows have no repetition index".into()))?;
        let column = self.column_ref(plan.column)?;
        let mut touched = vec![false; plan.pages.len()];
        for (k, &r) in rows.iter().enumerate() {
            if k % 8192 == 0 {
                crate::interrupt::check()?;
            }
            touched[self.direct_page_index(plan, r)?] = true;
        }
        let page_of = |i: usize| -> Result<&Page> {
            column.pages.get(plan.pages[i].page).ok_or_else(|| Error::Internal("a planned page is missing".into()))
        };
        let wanted = (0..touched.len()).filter(|&i| touched[i]).map(|i| Ok((page_of(i)?, kind))).collect::<Result<Vec<_>>>()?;
        self.load_states(&wanted)?;
        (0..touched.len())
            .map(|i| {
                if !touched[i] {
                    return Ok(None);
                }
                let page = page_of(i)?;
                match page.state.get().map(|s| s.as_ref()) {
                    Some(PageState::FullZip(FullZipState { rep_index: Some(idx) })) if idx.rows() == page.num_rows => {
                        Ok(Some(idx))
                    }
                    _ => Err(Error::corrupt(format!("{}: variable full-zip page without a repetition index", self.path))),
                }
            })
            .collect()
    }

    /// Where each variable-width value of `rows` lies: (file position, bytes including the
    /// length prefix, bytes of the prefix).
    fn value_spans(&self, plan: &DirectRows, rows: &[u64]) -> Result<Vec<(u64, usize, usize)>> {
        let indexes = self.rep_indexes(plan, rows)?;
        let mut spans = Vec::with_capacity(rows.len());
        for (k, &r) in rows.iter().enumerate() {
            if k % 8192 == 0 {
                crate::interrupt::check()?;
            }
            let i = self.direct_page_index(plan, r)?;
            let (p, idx) = (&plan.pages[i], indexes[i].ok_or_else(|| Error::Internal("variable rows without an index".into()))?);
            let len_bytes = &p.len_bytes;
            let (s, e) = (idx.offset(r - p.first_row), idx.offset(r - p.first_row + 1));
            let span = usize::try_from(e.saturating_sub(s))
                .map_err(|_| Error::corrupt(format!("{}: a full-zip value is too large", self.path)))?;
            if e < s || span < *len_bytes {
                return Err(Error::corrupt(format!("{}: a full-zip value is shorter than its length", self.path)));
            }
            spans.push((p.position + s, span, *len_bytes));
        }
        Ok(spans)
    }

    /// The value of one span (see [`FileReader::value_spans`]), its length prefix checked.
    fn span_value<'a>(
        &self,
        map: Option<&'a [u8]>,
        scratch: &'a mut Vec<u8>,
        (pos, span, len_bytes): (u64, usize, usize),
    ) -> Result<&'a [u8]> {
        let bytes = self.bytes_at(map, scratch, pos, span)?;
        if read_uint(bytes, 0, len_bytes) != (span - len_bytes) as u64 {
            return Err(Error::corrupt(format!("{}: a full-zip value's length does not match its row", self.path)));
        }
        Ok(&bytes[len_bytes..])
    }

    /// `len` bytes at `pos`: a slice of the mapped file, or read into `scratch`.
    fn bytes_at<'a>(&self, map: Option<&'a [u8]>, scratch: &'a mut Vec<u8>, pos: u64, len: usize) -> Result<&'a [u8]> {
        match map {
            Some(map) => usize::try_from(pos)
                .ok()
                .and_then(|s| map.get(s..s.checked_add(len)?))
                .ok_or_else(|| Error::corrupt(format!("{}: rows at byte {pos} lie outside the file", self.path))),
            None => {
                scratch.resize(len, 0);
                self.io.read_into(pos, scratch)?;
                Ok(&scratch[..])
            }
        }
    }
}

/// Where the rows of a field stored row by row live (see [`FileReader::direct_rows`]).
#[derive(Debug, Clone)]
pub struct DirectRows {
    /// Bytes of one value (fixed width), or `None` for variable-width values.
    pub width: Option<usize>,
    /// The file column holding the values.
    column: usize,
    /// Variable width: the values' leaf kind (to parse the pages' repetition indexes).
    kind: Option<LeafKind>,
    pages: Vec<DirectPage>,
}

#[derive(Debug, Clone)]
struct DirectPage {
    first_row: u64,
    num_rows: u64,
    /// Absolute file position of the page's values.
    position: u64,
    /// The page's index among the column's pages.
    page: usize,
    /// Variable width: the bytes of each value's length prefix (0 for fixed width).
    len_bytes: usize,
}

/// Values gathered by [`FileReader::gather_rows`], possibly from several files.
#[derive(Debug)]
pub struct Gathered {
    data: MutableBuffer,
    /// End offsets of variable-width values (after a leading 0).
    offsets: Option<Vec<i64>>,
    rows: usize,
}

impl Gathered {
    /// An empty output for about `rows` rows laid out as `plan`.
    pub fn new(plan: &DirectRows, rows: usize) -> Self {
        match plan.width {
            Some(w) => Self { data: MutableBuffer::new(rows * w), offsets: None, rows: 0 },
            None => {
                let mut offsets = Vec::with_capacity(rows + 1);
                offsets.push(0);
                Self { data: MutableBuffer::new(0), offsets: Some(offsets), rows: 0 }
            }
        }
    }

    /// The gathered values as an array of `data_type` (fixed-width, or binary / large binary).
    pub fn into_array(self, data_type: &DataType) -> Result<ArrayRef> {
        let Some(offsets) = self.offsets else { return fixed_width_array(data_type, self.data.into(), self.rows) };
        let offsets = match data_type {
            DataType::LargeBinary => Buffer::from_vec(offsets),
            DataType::Binary => {
                let small: Option<Vec<i32>> = offsets.iter().map(|&o| i32::try_from(o).ok()).collect();
                Buffer::from_vec(
                    small.ok_or_else(|| Error::invalid_input("the values are too large for a binary column (2 GiB)"))?,
                )
            }
            other => return Err(Error::Internal(format!("variable-width values gathered as {other}"))),
        };
        let data = ArrayData::builder(data_type.clone())
            .len(self.rows)
            .add_buffer(offsets)
            .add_buffer(self.data.into())
            .build()
            .map_err(gathered_corrupt)?;
        Ok(arrow_array::make_array(data))
    }
}

/// Gathered rows that do not make a valid array (offsets out of order, a wrong length) came
/// from a corrupt file.
fn gathered_corrupt(e: arrow_schema::ArrowError) -> Error {
    Error::corrupt(format!("gathered rows are not valid Arrow data: {e}"))
}

/// Bytes of one value of a fixed-width type that a buffer holds back to back (primitives,
/// fixed-size binary, fixed-size lists of those); `None` for other types and booleans.
pub fn fixed_byte_width(data_type: &DataType) -> Option<usize> {
    match data_type {
        DataType::FixedSizeList(item, d) => fixed_byte_width(item.data_type())?.checked_mul(usize::try_from(*d).ok()?),
        DataType::FixedSizeBinary(w) => usize::try_from(*w).ok(),
        DataType::Boolean => None,
        d if d.is_primitive() => d.primitive_width(),
        _ => None,
    }
}

/// An array of `data_type` (see [`fixed_byte_width`]) over `len` values stored back to back
/// in `values`, without nulls.
pub fn fixed_width_array(data_type: &DataType, values: Buffer, len: usize) -> Result<ArrayRef> {
    let data = match data_type {
        DataType::FixedSizeList(item, d) => {
            let items = len.checked_mul(*d as usize).ok_or_else(|| Error::Internal("fixed-size list too long".into()))?;
            let child = fixed_width_array(item.data_type(), values, items)?;
            ArrayData::builder(data_type.clone()).len(len).add_child_data(child.to_data()).build().map_err(gathered_corrupt)?
        }
        _ => {
            let w = fixed_byte_width(data_type).ok_or_else(|| Error::Internal(format!("{data_type} is not fixed-width")))?;
            if values.len() != w * len {
                return Err(Error::Internal(format!("{} bytes for {len} values of {w} bytes", values.len())));
            }
            ArrayData::builder(data_type.clone()).len(len).add_buffer(values).build().map_err(gathered_corrupt)?
        }
    };
    Ok(arrow_array::make_array(data))
}
