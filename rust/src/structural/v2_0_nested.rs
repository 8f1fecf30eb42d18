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

use super::v2_0::{self, PageSource};
use super::LeafKind;
use crate::encodings::DataBlock;
use crate::error::{Error, Result};
use crate::file::strategy::EncodedPage;
use crate::file::LanceField;
use crate::format::enc20;
use crate::format::enc20::array_encoding::ArrayEncoding as Pb;
use crate::format::TYPE_URL_ARRAY_ENCODING;

const CTX: &str = "2.0 nested column";

// ---------------------------------------------------------------------------------------
// Columns of a field
// ---------------------------------------------------------------------------------------

/// Whether `field` is stored as one 2.0 column without child columns: flat types,
/// fixed-size lists and packed structs.
pub fn is_single_column(field: &LanceField) -> bool {
    field.children.is_empty() || field.is_packed_struct() || matches!(field.data_type, DataType::FixedSizeList(_, _))
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
    let pages = bytes.div_ceil(max_page_bytes.max(1)).max(1) as usize;
    let per_page = len.div_ceil(pages).max(1);
    if len == 0 {
        return vec![0..0];
    }
    (0..len).step_by(per_page).map(|s| s..(s + per_page).min(len)).collect()
}

fn encode_column(array: &ArrayRef, field: &LanceField, col: usize, max_page_bytes: u64, out: &mut Vec<ColumnPiece>) -> Result<()> {
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
pub fn read_field(src: &impl ColumnSource, field: &LanceField, col: usize, num_rows: u64, ranges: &[Range<u64>]) -> Result<ArrayRef> {
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
        let offsets = l
            .offsets
            .as_deref()
            .ok_or_else(|| Error::corrupt(format!("{CTX}: list {name:?}, page {i} has no offsets")))?;
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
            Ok(f.data.as_slice()[..count as usize * 8].chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect())
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
        let page_end = p.first_row + p.page.num_rows;
        // Page-local ranges of the request.
        let local: Vec<Range<u64>> = ranges
            .iter()
            .filter(|r| r.start < page_end && r.end > p.first_row)
            .map(|r| r.start.max(p.first_row) - p.first_row..r.end.min(page_end) - p.first_row)
            .collect();
        if local.is_empty() {
            continue;
        }
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
        let at = |i: u64| -> u64 {
            let k = wanted.partition_point(|w| w.end <= i);
            stored[(starts[k] + i - wanted[k].start) as usize]
        };
        let adjustment = p.null_offset_adjustment;
        for r in &local {
            let mut prev = if r.start == 0 { 0 } else { split_offset(at(r.start - 1), adjustment).1 };
            for i in r.clone() {
                let (valid, end) = split_offset(at(i), adjustment);
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
