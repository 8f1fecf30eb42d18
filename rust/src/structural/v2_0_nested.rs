//! File version 2.0: nested columns — structs, lists and large lists (FORMAT.md §2.1).
//!
//! A 2.0 file stores **every field of the schema as a column**, in pre-order (a parent
//! before its children), except that a packed struct and a fixed-size list are one column
//! each (their children are not columns). Parents carry their own structure:
//!
//! ```text
//! struct             one page `struct` (SimpleStruct, no buffers) whose length is the number of
//!                    struct values; pylance writes a single page per file, at the end
//! list, large_list   pages `list{offsets: nullable(no_nulls(flat(64))), null_offset_adjustment,
//!                    num_items}`, `length` = rows; the item column follows, and its pages
//!                    (whose `length` counts items) are cut independently of the list's pages
//! packed struct      pages `packed_struct{inner: [flat per child], buffer}`: rows row-major
//! ```
//!
//! List offsets: page `k` stores, for each of its rows, the **end** of the row's items
//! relative to the page's first item (no leading 0); its items are items
//! `Σ num_items(pages < k) ..` of the item column. A null row stores
//! `end + null_offset_adjustment` (the writer uses `num_items + 1`). pylance keeps the items
//! an Arrow null list may cover; they are skipped on read (null lists come back empty).
//!
//! What 2.0 cannot store, and pylance 14 refuses to write: null structs (no struct
//! validity; [`check_struct_validity`]), maps, and fixed-size lists of structs (pylance
//! writes those as one column it cannot read back). lancepy refuses the same.
//!
//! Reading is plan → fetch → decode per level, through a [`ColumnSource`]: a list reads the
//! offsets of the requested rows only (byte ranges), turns them into item ranges, reads just
//! those ranges of its item column (recursively), and builds the array; a struct reads its
//! children for the same rows. Offsets, item counts and row counts from the file are all
//! checked: damaged input is [`Error::Corrupt`], never a panic.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, GenericListArray, OffsetSizeTrait, StructArray};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, FieldRef};
use prost::Message;

use super::page::EncodedPage;
use super::v2_0::{self, PageSource};
use super::LeafKind;
use crate::encodings::DataBlock;
use crate::error::{Error, Result};
use crate::format::enc20;
use crate::format::enc20::array_encoding::ArrayEncoding as Pb;
use crate::format::TYPE_URL_ARRAY_ENCODING;
use crate::schema::LanceField;

const CTX: &str = "2.0 nested column";

// ---------------------------------------------------------------------------------------
// Columns of a field
// ---------------------------------------------------------------------------------------

/// Whether `field` is stored as one 2.0 column without child columns: flat types,
/// fixed-size lists and packed structs.
pub fn is_single_column(field: &LanceField) -> bool {
    field.children.is_empty() || field.is_packed_struct() || matches!(field.data_type, DataType::FixedSizeList(_, _))
}

/// Whether `field` is a 2.0 struct column (a `struct` page; its children are columns).
pub fn is_struct_column(field: &LanceField) -> bool {
    matches!(field.data_type, DataType::Struct(_)) && !is_single_column(field)
}

/// The fields of `field` that are 2.0 columns, in column (pre-)order.
pub fn column_fields(field: &LanceField) -> Vec<&LanceField> {
    fn go<'a>(f: &'a LanceField, out: &mut Vec<&'a LanceField>) {
        out.push(f);
        if !is_single_column(f) {
            for c in &f.children {
                go(c, out);
            }
        }
    }
    let mut out = Vec::new();
    go(field, &mut out);
    out
}

/// Number of 2.0 columns of `field`.
pub fn column_count(field: &LanceField) -> usize {
    column_fields(field).len()
}

/// Refuses fields a 2.0 file cannot hold (before anything is written).
pub fn check_writable(field: &LanceField) -> Result<()> {
    for f in column_fields(field) {
        match &f.data_type {
            DataType::Map(_, _) => {
                return Err(Error::not_supported(format!(
                    "map field {:?}: file version 2.0 has no map encoding; use file version 2.2 (\"stable\")",
                    f.name
                )))
            }
            DataType::FixedSizeList(_, _) if !f.children.is_empty() => {
                return Err(Error::not_supported(format!(
                    "fixed-size list of structs {:?} cannot be stored in file version 2.0",
                    f.name
                )))
            }
            DataType::Struct(_) if f.is_packed_struct() => {
                LeafKind::of_field(f)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Refuses data with null structs (anywhere, list items included), which 2.0 cannot
/// store; pylance 14 refuses them as invalid input too.
pub fn check_struct_validity(array: &ArrayRef, field: &LanceField) -> Result<()> {
    match &field.data_type {
        DataType::Struct(_) => {
            if array.null_count() > 0 {
                return Err(v2_0::struct_validity_error(&field.name, array.null_count()));
            }
            if !field.is_packed_struct() {
                for (c, f) in array.as_struct().columns().iter().zip(&field.children) {
                    check_struct_validity(c, f)?;
                }
            }
            Ok(())
        }
        DataType::List(_) => check_struct_validity(&list_items(array.as_list::<i32>()), &field.children[0]),
        DataType::LargeList(_) => check_struct_validity(&list_items(array.as_list::<i64>()), &field.children[0]),
        _ => Ok(()),
    }
}

/// The items of a list array that its rows reach (those under null rows included, as
/// pylance stores them).
fn list_items<O: OffsetSizeTrait>(list: &GenericListArray<O>) -> ArrayRef {
    let offsets = list.value_offsets();
    let (first, last) = (offsets[0].as_usize(), offsets[offsets.len() - 1].as_usize());
    list.values().slice(first, last - first)
}

// ---------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------

/// One piece of a field's encoded data.
pub enum ColumnPiece {
    /// A page of the field's column `.0` (counted from the field's first column).
    Page(usize, EncodedPage),
    /// Rows of the struct column `.0`: pylance writes one struct page per file, with all
    /// of them, so the writer adds them up and writes that page when it finishes.
    StructRows(usize, u64),
}

/// The `struct` page of a struct column holding `num_rows` values.
pub fn struct_page(num_rows: u64) -> EncodedPage {
    let enc = enc20::ArrayEncoding { array_encoding: Some(Pb::Struct(enc20::SimpleStruct {})) };
    EncodedPage { buffers: vec![], type_url: TYPE_URL_ARRAY_ENCODING.to_string(), encoding: enc.encode_to_vec(), num_rows }
}

/// Encodes `array` (the buffered values of top-level field `field`) into the pages of all
/// of the field's 2.0 columns; each column is cut into pages of about `max_page_bytes`.
pub fn encode_field(array: &ArrayRef, field: &LanceField, max_page_bytes: u64) -> Result<Vec<ColumnPiece>> {
    check_writable(field)?;
    check_struct_validity(array, field)?;
    let mut out = Vec::new();
    encode_column(array, field, 0, max_page_bytes, &mut out)?;
    Ok(out)
}

/// Rows of each page when `len` rows of `bytes` bytes are cut into pages of about
/// `max_page_bytes`. No rows make one empty page: pylance writes an empty page for the
/// items of lists that have none.
fn page_rows(len: usize, bytes: u64, max_page_bytes: u64) -> Vec<Range<usize>> {
    if len == 0 {
        return std::iter::once(0..0).collect();
    }
    let pages = bytes.div_ceil(max_page_bytes.max(1)).max(1) as usize;
    let per_page = len.div_ceil(pages).max(1);
    (0..len).step_by(per_page).map(|s| s..(s + per_page).min(len)).collect()
}

fn encode_column(
    array: &ArrayRef,
    field: &LanceField,
    col: usize,
    max_page_bytes: u64,
    out: &mut Vec<ColumnPiece>,
) -> Result<()> {
    if is_single_column(field) {
        let bytes = array.to_data().get_slice_memory_size().unwrap_or(array.get_array_memory_size()) as u64;
        for rows in page_rows(array.len(), bytes, max_page_bytes) {
            let page = v2_0::encode_page(&array.slice(rows.start, rows.len()), field)?;
            out.push(ColumnPiece::Page(col, page));
        }
        return Ok(());
    }
    match &field.data_type {
        DataType::Struct(_) => {
            out.push(ColumnPiece::StructRows(col, array.len() as u64));
            let mut child_col = col + 1;
            for (c, f) in array.as_struct().columns().iter().zip(&field.children) {
                encode_column(c, f, child_col, max_page_bytes, out)?;
                child_col += column_count(f);
            }
            Ok(())
        }
        DataType::List(_) => encode_list(array.as_list::<i32>(), field, col, max_page_bytes, out),
        DataType::LargeList(_) => encode_list(array.as_list::<i64>(), field, col, max_page_bytes, out),
        dt => Err(Error::not_supported(format!("field {:?} of type {dt} in file version 2.0", field.name))),
    }
}

fn encode_list<O: OffsetSizeTrait>(
    list: &GenericListArray<O>,
    field: &LanceField,
    col: usize,
    max_page_bytes: u64,
    out: &mut Vec<ColumnPiece>,
) -> Result<()> {
    let offsets: Vec<u64> = list.value_offsets().iter().map(|o| o.as_usize() as u64).collect();
    let nulls = list.logical_nulls();
    let n = list.len();
    // No rows (the items of lists that have none) make one empty page, as for any column.
    for rows in page_rows(n, n as u64 * 8, max_page_bytes) {
        let base = offsets[rows.start];
        let num_items = offsets[rows.end] - base;
        let adjustment = num_items + 1;
        let ends: Vec<u64> = rows
            .clone()
            .map(|i| {
                let end = offsets[i + 1] - base;
                if nulls.as_ref().is_some_and(|nb| nb.is_null(i)) {
                    end + adjustment
                } else {
                    end
                }
            })
            .collect();
        out.push(ColumnPiece::Page(col, list_page(ends, adjustment, num_items, rows.len() as u64)));
    }
    let items = list_items(list);
    encode_column(&items, &field.children[0], col + 1, max_page_bytes, out)
}

/// A `list` page of `ends` (end offsets, nulls adjusted), as pylance writes it.
fn list_page(ends: Vec<u64>, null_offset_adjustment: u64, num_items: u64, num_rows: u64) -> EncodedPage {
    let flat = enc20::ArrayEncoding {
        array_encoding: Some(Pb::Flat(enc20::Flat {
            bits_per_value: 64,
            buffer: Some(enc20::Buffer { buffer_index: 0, buffer_type: enc20::buffer::BufferType::Page as i32 }),
            compression: None,
        })),
    };
    let offsets = v2_0::no_nulls(flat);
    let enc = enc20::ArrayEncoding {
        array_encoding: Some(Pb::List(Box::new(enc20::List {
            offsets: Some(Box::new(offsets)),
            null_offset_adjustment,
            num_items,
        }))),
    };
    EncodedPage {
        buffers: vec![Buffer::from_vec(ends)],
        type_url: TYPE_URL_ARRAY_ENCODING.to_string(),
        encoding: enc.encode_to_vec(),
        num_rows,
    }
}

// ---------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------

/// One page of a 2.0 column, as stored.
#[derive(Debug, Clone, Copy)]
pub struct PageRef<'a> {
    /// The page's `length`: rows (items, under a list).
    pub num_rows: u64,
    /// Its encoding tree.
    pub encoding: &'a enc20::ArrayEncoding,
    /// `(absolute position, size)` of each page buffer.
    pub buffers: &'a [(u64, u64)],
}

/// Where the reader gets columns from (the file reader; tests use memory).
pub trait ColumnSource {
    /// The pages of file column `col`, in row order.
    fn pages(&self, col: usize) -> Result<Vec<PageRef<'_>>>;
    /// Reads absolute byte ranges of the file, one buffer per range.
    fn fetch(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>>;
    /// Reads rows `ranges` (sorted, non-overlapping) of single column `col`, which stores
    /// `field` and must hold `column_rows` rows.
    fn read_column(&self, col: usize, field: &LanceField, column_rows: u64, ranges: &[Range<u64>]) -> Result<ArrayRef>;
}

/// Reads rows `ranges` (sorted, non-overlapping) of `field`, whose first column is `col`
/// and whose columns hold `num_rows` rows.
pub fn read_field(
    src: &impl ColumnSource,
    field: &LanceField,
    col: usize,
    num_rows: u64,
    ranges: &[Range<u64>],
) -> Result<ArrayRef> {
    crate::interrupt::check()?; // Ctrl-C between the columns of a nested field
    if let DataType::FixedSizeList(_, _) | DataType::Map(_, _) = field.data_type {
        check_writable(field)?;
    }
    if is_single_column(field) {
        return src.read_column(col, field, num_rows, ranges);
    }
    match &field.data_type {
        DataType::Struct(fields) => {
            check_struct_column(&src.pages(col)?, num_rows, &field.name)?;
            let count: u64 = ranges.iter().map(|r| r.end - r.start).sum();
            let mut children = Vec::with_capacity(field.children.len());
            let mut child_col = col + 1;
            for c in &field.children {
                let a = read_field(src, c, child_col, num_rows, ranges)?;
                if a.len() as u64 != count {
                    return Err(Error::corrupt(format!("{CTX}: field {:?} read {} values for {count} rows", c.name, a.len())));
                }
                children.push(a);
                child_col += column_count(c);
            }
            if fields.is_empty() {
                return Ok(Arc::new(StructArray::new_empty_fields(count as usize, None)));
            }
            Ok(Arc::new(
                StructArray::try_new(fields.clone(), children, None)
                    .map_err(|e| Error::corrupt(format!("{CTX}: struct {:?}: {e}", field.name)))?,
            ))
        }
        DataType::List(item) => read_list::<i32>(src, field, item, col, num_rows, ranges),
        DataType::LargeList(item) => read_list::<i64>(src, field, item, col, num_rows, ranges),
        dt => Err(Error::not_supported(format!("field {:?} of type {dt} in a file of version 2.0", field.name))),
    }
}

fn check_struct_column(pages: &[PageRef], num_rows: u64, name: &str) -> Result<()> {
    let mut total = 0u64;
    for p in pages {
        if !matches!(p.encoding.array_encoding, Some(Pb::Struct(_))) {
            return Err(Error::corrupt(format!(
                "{CTX}: struct {name:?} has a {} page where a struct page was expected",
                v2_0::describe(p.encoding)
            )));
        }
        total = total.checked_add(p.num_rows).ok_or_else(|| Error::corrupt(format!("{CTX}: struct row counts overflow")))?;
    }
    if total != num_rows {
        return Err(Error::corrupt(format!("{CTX}: struct {name:?} has {total} rows in its pages, expected {num_rows}")));
    }
    Ok(())
}

/// A parsed `list` page.
struct ListPage<'a> {
    page: PageRef<'a>,
    offsets: &'a enc20::ArrayEncoding,
    null_offset_adjustment: u64,
    num_items: u64,
    /// File rows and items before this page.
    first_row: u64,
    first_item: u64,
}

fn list_pages<'a>(pages: &[PageRef<'a>], num_rows: u64, name: &str) -> Result<(Vec<ListPage<'a>>, u64)> {
    let mut out = Vec::with_capacity(pages.len());
    let (mut rows, mut items) = (0u64, 0u64);
    for (i, p) in pages.iter().enumerate() {
        let Some(Pb::List(l)) = &p.encoding.array_encoding else {
            return Err(Error::corrupt(format!(
                "{CTX}: list {name:?} has a {} page where a list page was expected",
                v2_0::describe(p.encoding)
            )));
        };
        let offsets =
            l.offsets.as_deref().ok_or_else(|| Error::corrupt(format!("{CTX}: list {name:?}, page {i} has no offsets")))?;
        // Ends run up to `num_items`, so a null marker must lie beyond (0: no nulls).
        if l.null_offset_adjustment != 0 && l.null_offset_adjustment <= l.num_items {
            return Err(Error::corrupt(format!(
                "{CTX}: list {name:?}, page {i}: null offset adjustment {} is not above its {} items",
                l.null_offset_adjustment, l.num_items
            )));
        }
        out.push(ListPage {
            page: *p,
            offsets,
            null_offset_adjustment: l.null_offset_adjustment,
            num_items: l.num_items,
            first_row: rows,
            first_item: items,
        });
        rows = rows.checked_add(p.num_rows).ok_or_else(|| Error::corrupt(format!("{CTX}: list row counts overflow")))?;
        items = items.checked_add(l.num_items).ok_or_else(|| Error::corrupt(format!("{CTX}: list item counts overflow")))?;
    }
    if rows != num_rows {
        return Err(Error::corrupt(format!("{CTX}: list {name:?} has {rows} rows in its pages, expected {num_rows}")));
    }
    Ok((out, items))
}

/// The parts of `ranges` (sorted, non-overlapping) within rows `start..end`, relative to
/// `start`.
pub fn page_local(ranges: &[Range<u64>], start: u64, end: u64) -> Vec<Range<u64>> {
    let first = ranges.partition_point(|r| r.end <= start);
    ranges[first..]
        .iter()
        .take_while(|r| r.start < end)
        .filter_map(|r| {
            // Clamped, so that ranges from a corrupt page table (out of order, empty,
            // outside the page) give nothing rather than an underflow.
            let (s, e) = (r.start.max(start), r.end.min(end));
            (e > s).then(|| s - start..e - start)
        })
        .collect()
}

/// `(valid, end)` of a stored list offset.
fn split_offset(v: u64, adjustment: u64) -> (bool, u64) {
    if adjustment > 0 && v >= adjustment {
        (false, v - adjustment)
    } else {
        (true, v)
    }
}

/// Sorted, merged ranges: `a..b` and `b..c` become `a..c`.
fn merge(ranges: impl IntoIterator<Item = Range<u64>>) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    for r in ranges.into_iter().filter(|r| r.end > r.start) {
        match out.last_mut() {
            Some(last) if last.end >= r.start => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// Reads the stored offsets at the page-local indices `wanted` (sorted, merged) of a list
/// page; returns them in order.
fn read_offsets(src: &impl ColumnSource, page: &ListPage, wanted: &[Range<u64>]) -> Result<Vec<u64>> {
    let fetch = |r: &[Range<u64>]| src.fetch(r);
    let source = PageSource { locations: page.page.buffers, loaded: &[], fetch: &fetch };
    let kind = LeafKind::Fixed { bytes: 8 };
    let chunk = v2_0::read_rows(page.offsets, &source, page.page.num_rows, &kind, &DataType::UInt64, wanted)?;
    if chunk.def.is_some() {
        return Err(Error::corrupt(format!("{CTX}: list offsets with null entries")));
    }
    let count: u64 = wanted.iter().map(|r| r.end - r.start).sum();
    match chunk.values {
        DataBlock::Fixed(f) if f.bits_per_value == 64 && f.num_values == count && f.data.len() as u64 >= count * 8 => {
            Ok(f.data.as_slice()[..count as usize * 8]
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect())
        }
        other => Err(Error::corrupt(format!("{CTX}: list offsets decode to {} values, not {count} u64", other.kind()))),
    }
}

fn read_list<O: OffsetSizeTrait>(
    src: &impl ColumnSource,
    field: &LanceField,
    item: &FieldRef,
    col: usize,
    num_rows: u64,
    ranges: &[Range<u64>],
) -> Result<ArrayRef> {
    let pages = src.pages(col)?;
    let (pages, total_items) = list_pages(&pages, num_rows, &field.name)?;
    let count: u64 = ranges.iter().map(|r| r.end - r.start).sum();
    let mut offsets: Vec<O> = Vec::with_capacity(count as usize + 1);
    offsets.push(O::usize_as(0));
    let mut validity = BooleanBufferBuilder::new(count as usize);
    let mut item_ranges: Vec<Range<u64>> = Vec::new();
    let mut items_out = 0u64;
    for p in &pages {
        let local = page_local(ranges, p.first_row, p.first_row + p.page.num_rows);
        if local.is_empty() {
            continue;
        }
        crate::interrupt::check()?; // and between list pages
                                    // Each range also needs the offset before it (where its first row starts).
        let wanted = merge(local.iter().map(|r| r.start.saturating_sub(1)..r.end));
        let stored = read_offsets(src, p, &wanted)?;
        // Where each wanted range starts in `stored`.
        let starts: Vec<u64> = wanted
            .iter()
            .scan(0u64, |acc, w| {
                let s = *acc;
                *acc += w.end - w.start;
                Some(s)
            })
            .collect();
        // The stored offset of page-local index `i` (always one of the wanted ones).
        let at = |i: u64| -> Result<u64> {
            let k = wanted.partition_point(|w| w.end <= i);
            // Corrupt page tables can ask for an offset outside what was read (found by fuzzing).
            match (wanted.get(k), starts.get(k)) {
                (Some(w), Some(&s)) if i >= w.start => stored
                    .get((s + i - w.start) as usize)
                    .copied()
                    .ok_or_else(|| Error::corrupt("2.0 list offsets: an offset lies outside the ones read")),
                _ => Err(Error::corrupt("2.0 list offsets: an offset lies outside the ones read")),
            }
        };
        let adjustment = p.null_offset_adjustment;
        for r in &local {
            let mut prev = if r.start == 0 { 0 } else { split_offset(at(r.start - 1)?, adjustment).1 };
            for i in r.clone() {
                let (valid, end) = split_offset(at(i)?, adjustment);
                if end < prev || end > p.num_items {
                    return Err(Error::corrupt(format!(
                        "{CTX}: list {:?}, row {}: items end at {end} (previous end {prev}, {} items in the page)",
                        field.name,
                        p.first_row + i,
                        p.num_items
                    )));
                }
                if valid && end > prev {
                    let (s, e) = (p.first_item + prev, p.first_item + end);
                    match item_ranges.last_mut() {
                        Some(last) if last.end == s => last.end = e,
                        _ => item_ranges.push(s..e),
                    }
                    items_out += end - prev;
                }
                let o = O::from_usize(items_out as usize).ok_or_else(|| {
                    Error::invalid_input(format!(
                        "{items_out} items do not fit a {} array; read fewer rows at once",
                        field.data_type
                    ))
                })?;
                offsets.push(o);
                validity.append(valid);
                prev = end;
            }
        }
    }
    if offsets.len() as u64 != count + 1 {
        return Err(Error::corrupt(format!("{CTX}: list {:?} pages do not cover the rows asked for", field.name)));
    }
    let items = read_field(src, &field.children[0], col + 1, total_items, &item_ranges)?;
    if items.len() as u64 != items_out {
        return Err(Error::corrupt(format!("{CTX}: list {:?} read {} items, expected {items_out}", field.name, items.len())));
    }
    let validity = validity.finish();
    let nulls = (validity.count_set_bits() < validity.len()).then(|| NullBuffer::new(validity));
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    let list = GenericListArray::<O>::try_new(item.clone(), offsets, items, nulls)
        .map_err(|e| Error::corrupt(format!("{CTX}: list {:?}: {e}", field.name)))?;
    Ok(Arc::new(list))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use arrow_array::builder::{Int32Builder, ListBuilder, StringBuilder};
    use arrow_array::{
        FixedSizeListArray, Float32Array, Int32Array, Int64Array, LargeListArray, ListArray, RecordBatch, UInt32Array,
    };
    use arrow_schema::{Field, Fields, Schema};

    use super::*;
    use crate::file::reader::FileReader;
    use crate::file::writer::{FileWriter, WriterOptions};
    use crate::format::FileVersion;
    use crate::io::{BufferReader, Reader};
    use crate::schema::LanceSchema;

    /// A reader over file bytes that counts the bytes read.
    #[derive(Debug)]
    struct CountingReader {
        inner: BufferReader,
        bytes: AtomicU64,
    }

    impl Reader for CountingReader {
        fn path(&self) -> &str {
            self.inner.path()
        }
        fn size(&self) -> Result<u64> {
            self.inner.size()
        }
        fn read_range(&self, range: Range<u64>) -> Result<Buffer> {
            self.bytes.fetch_add(range.end - range.start, Ordering::Relaxed);
            self.inner.read_range(range)
        }
        fn coalesce_gap(&self) -> u64 {
            0
        }
    }

    /// Writes `batch` as a 2.0 file (pages of about `page_bytes`) and returns its bytes.
    fn write(batch: &RecordBatch, page_bytes: u64) -> Vec<u8> {
        let uri = format!("memory://v2_0_nested-{}/f.lance", uuid::Uuid::new_v4().simple());
        let options = WriterOptions { version: FileVersion::V2_0, max_page_bytes: page_bytes, ..Default::default() };
        let mut w = FileWriter::try_new(&uri, &batch.schema(), options).unwrap();
        w.write_batch(batch).unwrap();
        w.finish().unwrap();
        let r = crate::io::open_reader(&uri).unwrap();
        r.read_range(0..r.size().unwrap()).unwrap().as_slice().to_vec()
    }

    fn open(bytes: &[u8]) -> (FileReader, Arc<CountingReader>) {
        let io =
            Arc::new(CountingReader { inner: BufferReader::new("test.lance", Buffer::from(bytes)), bytes: AtomicU64::new(0) });
        (FileReader::open_with(io.clone()).unwrap(), io)
    }

    fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        RecordBatch::try_from_iter(columns.into_iter().map(|(n, a)| (n.to_string(), a))).unwrap()
    }

    fn list_of_ints(n: usize) -> ArrayRef {
        let mut b = ListBuilder::new(Int32Builder::new());
        for i in 0..n {
            match i % 7 {
                3 => b.append(false),
                4 => b.append(true),
                _ => {
                    for j in 0..(i % 5) {
                        b.values().append_option((j != 2).then_some((i * 10 + j) as i32));
                    }
                    b.append(true);
                }
            }
        }
        Arc::new(b.finish())
    }

    fn list_of_strings(n: usize) -> ArrayRef {
        let mut b = ListBuilder::new(StringBuilder::new());
        for i in 0..n {
            if i % 9 == 4 {
                b.append(false);
                continue;
            }
            for j in 0..(i % 4) {
                b.values().append_option((j != 1).then(|| format!("s{i}-{j}")));
            }
            b.append(true);
        }
        Arc::new(b.finish())
    }

    fn struct_of(children: Vec<(&str, ArrayRef)>) -> ArrayRef {
        let fields: Vec<Field> = children.iter().map(|(n, a)| Field::new(*n, a.data_type().clone(), true)).collect();
        Arc::new(StructArray::new(Fields::from(fields), children.into_iter().map(|(_, a)| a).collect(), None))
    }

    fn sample_batch(n: usize) -> RecordBatch {
        let items: ArrayRef = Arc::new(Float32Array::from_iter((0..n * 2).map(|i| (i % 3 != 1).then_some(i as f32))));
        let fsl: ArrayRef = Arc::new(FixedSizeListArray::new(
            Arc::new(Field::new("item", DataType::Float32, true)),
            2,
            items,
            Some(NullBuffer::from((0..n).map(|i| i % 6 != 0).collect::<Vec<_>>())),
        ));
        // list<struct<a: int32, tags: list<string>>>: structs under a list, a list under those.
        let inner_n = list_of_ints(n).as_list::<i32>().values().len();
        let inner = struct_of(vec![
            ("a", Arc::new(Int32Array::from_iter_values(0..inner_n as i32)) as ArrayRef),
            ("tags", list_of_strings(inner_n)),
        ]);
        let outer = list_of_ints(n);
        let outer = outer.as_list::<i32>();
        let list_struct: ArrayRef = Arc::new(ListArray::new(
            Arc::new(Field::new("item", inner.data_type().clone(), true)),
            outer.offsets().clone(),
            inner,
            outer.nulls().cloned(),
        ));
        let large: ArrayRef = {
            let l = list_of_strings(n);
            let l = l.as_list::<i32>();
            let offsets: Vec<i64> = l.value_offsets().iter().map(|&o| o as i64).collect();
            Arc::new(LargeListArray::new(
                Arc::new(Field::new("item", DataType::Utf8, true)),
                OffsetBuffer::new(offsets.into()),
                l.values().clone(),
                l.nulls().cloned(),
            ))
        };
        batch(vec![
            ("l", list_of_ints(n)),
            ("ls", list_struct),
            (
                "s",
                struct_of(vec![
                    ("x", Arc::new(Int64Array::from_iter_values(0..n as i64)) as ArrayRef),
                    ("l", list_of_strings(n)),
                    ("v", fsl),
                ]),
            ),
            ("large", large),
        ])
    }

    fn take(batch: &RecordBatch, rows: &[u64]) -> RecordBatch {
        let idx = UInt32Array::from(rows.iter().map(|&r| r as u32).collect::<Vec<_>>());
        let columns = batch.columns().iter().map(|c| arrow_select::take::take(c.as_ref(), &idx, None).unwrap()).collect();
        RecordBatch::try_new(batch.schema(), columns).unwrap()
    }

    #[test]
    fn nested_columns_round_trip_with_ranges_and_takes() {
        for (n, page_bytes) in [(0usize, 1u64 << 20), (1, 1 << 20), (500, 1 << 20), (2000, 512)] {
            let b = sample_batch(n);
            let bytes = write(&b, page_bytes);
            let (r, _) = open(&bytes);
            let all: Vec<usize> = (0..4).collect();
            assert_eq!(r.read_range(0, n as u64, &all).unwrap(), b, "n={n}");
            if n > 2 {
                let n64 = n as u64;
                let got = r.read_range(1, n64 - 2, &all).unwrap();
                assert_eq!(got, b.slice(1, n - 2));
                let rows = [n64 - 1, 0, n64 / 2, 0, 3, 4, 5, n64 - 1];
                assert_eq!(r.take(&rows, &all).unwrap(), take(&b, &rows));
            }
            if page_bytes < 1024 {
                // Lists and their items paged independently.
                let d = r.describe().unwrap();
                assert!(d[0].pages.len() > 3 && d[1].pages.len() > 3 && d[0].pages.len() != d[1].pages.len());
            }
        }
        // A sliced input writes what the slice shows.
        let b = sample_batch(300).slice(17, 200);
        let (r, _) = open(&write(&b, 1 << 20));
        assert_eq!(r.read_range(0, 200, &[0, 1, 2, 3]).unwrap(), b);
    }

    #[test]
    fn column_layout_is_every_field_in_pre_order() {
        let b = sample_batch(10);
        let schema = LanceSchema::from_arrow(&b.schema()).unwrap();
        let names: Vec<&str> = schema.fields.iter().flat_map(column_fields).map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["l", "item", "ls", "item", "a", "tags", "item", "s", "x", "l", "item", "v", "large", "item"]);
        let (r, _) = open(&write(&b, 1 << 20));
        assert_eq!(r.num_columns(), names.len());
        let d = r.describe().unwrap();
        let struct_pages: Vec<usize> = (0..d.len()).filter(|&c| d[c].pages.iter().any(|p| p.encoding == "v2.0 struct")).collect();
        assert_eq!(struct_pages, [3, 7]);
        assert!(d[0].pages[0].encoding.starts_with("v2.0 list(offsets=nullable(no_nulls, flat(64)))"));
    }

    #[test]
    fn list_pages_store_relative_end_offsets() {
        // [[1, 2], null, [], [3]] sliced out of a longer array: offsets start at 0 per page.
        let full = list_of_ints(20);
        let field = LanceSchema::from_arrow(&Schema::new(vec![Field::new("l", full.data_type().clone(), true)]))
            .unwrap()
            .fields
            .remove(0);
        let pieces = encode_field(&full.slice(2, 4), &field, 1 << 20).unwrap();
        let ColumnPiece::Page(0, page) = &pieces[0] else { panic!("first piece is not the list page") };
        let enc = enc20::ArrayEncoding::decode(page.encoding.as_slice()).unwrap();
        let Some(Pb::List(l)) = enc.array_encoding else { panic!("not a list page") };
        // Rows 2..6 of list_of_ints: [2 items], null, [], [5 % 5 = 0 items].
        assert_eq!((l.num_items, l.null_offset_adjustment), (2, 3));
        let ends: Vec<u64> =
            page.buffers[0].as_slice().chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(ends, [2, 2 + 3, 2, 2]);
        let ColumnPiece::Page(1, items) = &pieces[1] else { panic!("second piece is not the items") };
        assert_eq!(items.num_rows, 2);
        // No items at all: an empty item page (as pylance writes).
        let pieces = encode_field(&full.slice(3, 2), &field, 1 << 20).unwrap();
        assert!(matches!(&pieces[1], ColumnPiece::Page(1, p) if p.num_rows == 0 && p.buffers.is_empty()));
    }

    #[test]
    fn a_take_reads_a_few_offsets_and_item_ranges() {
        let n = 50_000;
        let b = batch(vec![("l", list_of_strings(n))]);
        let bytes = write(&b, 64 << 20);
        let (r, io) = open(&bytes);
        let d = r.describe().unwrap();
        assert_eq!((d[0].pages.len(), d[1].pages.len()), (1, 1));
        let before = io.bytes.load(Ordering::Relaxed);
        let rows = [7u64, 8, 30_000, 49_999];
        assert_eq!(r.take(&rows, &[0]).unwrap(), take(&b, &rows));
        let read = io.bytes.load(Ordering::Relaxed) - before;
        // Offsets of 4 rows and the item indices and bytes they cover: well under 1 KiB,
        // against several hundred KiB of pages.
        assert!(read < 1024, "{read} bytes read for 4 rows of a {}-byte file", bytes.len());
    }

    /// `bytes` with `value` written at `at`.
    fn patched(bytes: &[u8], at: u64, value: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        out[at as usize..at as usize + value.len()].copy_from_slice(value);
        out
    }

    fn expect_corrupt(bytes: &[u8], rows: &[u64]) {
        let (r, _) = open(bytes);
        match r.read_range(0, r.num_rows(), &[0]) {
            Err(Error::Corrupt(_)) => {}
            other => panic!("expected a corrupt-data error from a full read, got {other:?}"),
        }
        match r.take(rows, &[0]) {
            Err(Error::Corrupt(_)) => {}
            other => panic!("expected a corrupt-data error from a take of {rows:?}, got {other:?}"),
        }
    }

    #[test]
    fn damaged_offsets_are_corrupt_errors() {
        let b = batch(vec![("l", list_of_ints(50))]);
        let bytes = write(&b, 1 << 20);
        let (r, _) = open(&bytes);
        let (pos, size) = r.describe().unwrap()[0].pages[0].buffers[0];
        assert_eq!(size, 50 * 8);
        // An end beyond the page's items, a decreasing end, an end that wraps a null adjustment.
        for (row, value) in [(5u64, 1u64 << 40), (9, 0), (12, u64::MAX)] {
            let bad = patched(&bytes, pos + row * 8, &value.to_le_bytes());
            expect_corrupt(&bad, &[row]);
            let (r, _) = open(&bad);
            assert_eq!(r.take(&[0, 1], &[0]).unwrap(), take(&b, &[0, 1]));
        }
    }

    /// Rewrites the file's column metadata through `edit` (a test-only re-encoding of the tail).
    fn with_metadata(bytes: &[u8], edit: impl Fn(usize, &mut crate::format::file2::ColumnMetadata)) -> Vec<u8> {
        use crate::file::container::{Footer, FOOTER_LEN};
        use crate::format::file2;
        let footer = Footer::parse(&bytes[bytes.len() - FOOTER_LEN..], bytes.len() as u64, "t").unwrap();
        let cmo = &bytes[footer.cmo_table_pos as usize..footer.cmo_table_pos as usize + footer.num_columns as usize * 16];
        let mut out = bytes[..footer.column_meta_start as usize].to_vec();
        let mut table = Vec::new();
        for (i, e) in cmo.chunks_exact(16).enumerate() {
            let pos = u64::from_le_bytes(e[..8].try_into().unwrap()) as usize;
            let len = u64::from_le_bytes(e[8..].try_into().unwrap()) as usize;
            let mut meta = file2::ColumnMetadata::decode(&bytes[pos..pos + len]).unwrap();
            edit(i, &mut meta);
            let m = meta.encode_to_vec();
            table.push((out.len() as u64, m.len() as u64));
            out.extend_from_slice(&m);
        }
        let cmo_table_pos = out.len() as u64;
        for (p, l) in table {
            out.extend_from_slice(&p.to_le_bytes());
            out.extend_from_slice(&l.to_le_bytes());
        }
        let gbo_table_pos = out.len() as u64;
        let gbo = &bytes[footer.gbo_table_pos as usize..footer.gbo_table_pos as usize + footer.num_global_buffers as usize * 16];
        out.extend_from_slice(gbo);
        let f = Footer { cmo_table_pos, gbo_table_pos, ..footer };
        out.extend_from_slice(&f.to_bytes());
        out
    }

    fn page_encoding(meta: &crate::format::file2::ColumnMetadata, page: usize) -> enc20::ArrayEncoding {
        use crate::format::file2::encoding::Location;
        let Some(Location::Direct(d)) = meta.pages[page].encoding.as_ref().and_then(|e| e.location.as_ref()) else {
            panic!("no direct encoding")
        };
        let any = prost_types::Any::decode(d.encoding.clone()).unwrap();
        enc20::ArrayEncoding::decode(any.value.as_slice()).unwrap()
    }

    fn set_page_encoding(meta: &mut crate::format::file2::ColumnMetadata, page: usize, enc: &enc20::ArrayEncoding) {
        use crate::format::file2;
        let any = prost_types::Any { type_url: TYPE_URL_ARRAY_ENCODING.to_string(), value: enc.encode_to_vec() };
        meta.pages[page].encoding = Some(file2::Encoding {
            location: Some(file2::encoding::Location::Direct(file2::DirectEncoding { encoding: any.encode_to_vec().into() })),
        });
    }

    fn edit_list(meta: &mut crate::format::file2::ColumnMetadata, f: impl Fn(&mut enc20::List)) {
        let mut enc = page_encoding(meta, 0);
        let Some(Pb::List(l)) = enc.array_encoding.as_mut() else { panic!("not a list page") };
        f(l);
        set_page_encoding(meta, 0, &enc);
    }

    /// Edits the metadata of column `.0`.
    type MetadataEdit = Box<dyn Fn(usize, &mut crate::format::file2::ColumnMetadata)>;

    #[test]
    fn inconsistent_page_descriptions_are_corrupt_errors() {
        let b = batch(vec![("l", list_of_ints(50)), ("s", struct_of(vec![("x", list_of_ints(50))]))]);
        let bytes = write(&b, 1 << 20);
        assert_eq!(open(&bytes).0.read_range(0, 50, &[0, 1]).unwrap(), b);
        let cases: Vec<MetadataEdit> = vec![
            // More items than the item column holds; fewer (an end then exceeds them).
            Box::new(|c, m| {
                if c == 0 {
                    edit_list(m, |l| l.num_items += 1000)
                }
            }),
            Box::new(|c, m| {
                if c == 0 {
                    edit_list(m, |l| l.num_items = 3)
                }
            }),
            // A null adjustment of 1 makes every end look null with a wrapped value.
            Box::new(|c, m| {
                if c == 0 {
                    edit_list(m, |l| l.null_offset_adjustment = 1)
                }
            }),
            // No offsets, or offsets that point at a missing buffer.
            Box::new(|c, m| {
                if c == 0 {
                    edit_list(m, |l| l.offsets = None)
                }
            }),
            Box::new(|c, m| {
                if c == 0 {
                    m.pages[0].buffer_offsets.clear();
                    m.pages[0].buffer_sizes.clear()
                }
            }),
            // A truncated offsets buffer.
            Box::new(|c, m| {
                if c == 0 {
                    m.pages[0].buffer_sizes[0] = 16
                }
            }),
            // The list page says it has more rows than the file.
            Box::new(|c, m| {
                if c == 0 {
                    m.pages[0].length += 1
                }
            }),
            // A leaf page where the list page should be, and the other way round.
            Box::new(|c, m| {
                if c == 0 {
                    let e = v2_0::no_nulls(enc20::ArrayEncoding::default());
                    set_page_encoding(m, 0, &e)
                }
            }),
        ];
        for (i, edit) in cases.iter().enumerate() {
            let bad = with_metadata(&bytes, edit);
            let (r, _) = open(&bad);
            for result in [r.read_range(0, 50, &[0]), r.take(&[2, 40], &[0])] {
                assert!(matches!(result, Err(Error::Corrupt(_))), "case {i}: {result:?}");
            }
            // The other field is unaffected.
            assert_eq!(r.read_range(0, 50, &[1]).unwrap().column(0), b.column(1), "case {i}");
        }
        // Struct columns: a struct page with the wrong row count, or a list page instead.
        const STRUCT_COL: usize = 2; // l, l.item, s
        for edit in [
            Box::new(|c: usize, m: &mut crate::format::file2::ColumnMetadata| {
                if c == STRUCT_COL {
                    m.pages[0].length = 7
                }
            }) as MetadataEdit,
            Box::new(|c, m| {
                if c == STRUCT_COL {
                    let list = enc20::ArrayEncoding { array_encoding: Some(Pb::List(Box::default())) };
                    set_page_encoding(m, 0, &list)
                }
            }),
        ] {
            let (r, _) = open(&with_metadata(&bytes, edit));
            assert!(matches!(r.read_range(0, 50, &[1]), Err(Error::Corrupt(_))));
            assert_eq!(r.read_range(0, 50, &[0]).unwrap().column(0), b.column(0));
        }
    }

    #[test]
    fn refuses_what_2_0_cannot_store() {
        let null_struct: ArrayRef = Arc::new(StructArray::new(
            Fields::from(vec![Field::new("x", DataType::Int32, true)]),
            vec![Arc::new(Int32Array::from(vec![1, 2]))],
            Some(NullBuffer::from(vec![true, false])),
        ));
        let b = batch(vec![("s", null_struct.clone())]);
        let uri = format!("memory://v2_0_nested-{}/f.lance", uuid::Uuid::new_v4().simple());
        let options = WriterOptions { version: FileVersion::V2_0, max_page_bytes: 1 << 20, ..Default::default() };
        let mut w = FileWriter::try_new(&uri, &b.schema(), options.clone()).unwrap();
        let e = w.write_batch(&b).unwrap_err();
        assert!(matches!(&e, Error::InvalidInput(m) if m.contains("struct validity")), "{e}");
        // Under a list, too.
        let list: ArrayRef = Arc::new(ListArray::new(
            Arc::new(Field::new("item", null_struct.data_type().clone(), true)),
            OffsetBuffer::from_lengths([2]),
            null_struct,
            None,
        ));
        let b = batch(vec![("l", list)]);
        let mut w = FileWriter::try_new(&uri, &b.schema(), options.clone()).unwrap();
        assert!(matches!(w.write_batch(&b), Err(Error::InvalidInput(_))));
        // Fixed-size lists of structs.
        let st = DataType::Struct(Fields::from(vec![Field::new("x", DataType::Int32, true)]));
        let schema = Schema::new(vec![Field::new("f", DataType::FixedSizeList(Arc::new(Field::new("item", st, true)), 2), true)]);
        assert!(matches!(FileWriter::try_new(&uri, &schema, options), Err(Error::NotSupported(_))));
    }

    #[test]
    fn merges_touching_ranges() {
        assert_eq!(merge([0..2, 1..3, 3..4, 6..6, 7..9]), vec![0..4, 7..9]);
        assert_eq!(page_local(&[0..2, 3..5, 6..6, 7..12, 20..30], 4, 10), vec![0..1, 3..6]);
        assert_eq!(page_local(&[0..2, 2..3], 4, 10), Vec::<Range<u64>>::new());
        assert_eq!(split_offset(10, 7), (false, 3));
        assert_eq!(split_offset(6, 7), (true, 6));
        assert_eq!(split_offset(5, 0), (true, 5));
        assert_eq!(page_rows(0, 0, 10), vec![0..0]);
        assert_eq!(page_rows(10, 25, 10), vec![0..4, 4..8, 8..10]);
    }
}
