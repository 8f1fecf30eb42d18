//! Reading 2.0 nested columns: plan → fetch → decode per level. A list reads the offsets of
//! the requested rows only, turns them into item ranges and reads just those ranges of its
//! item column; a struct reads its children for the same rows. Everything the file says is
//! checked: damaged input is a corrupt-file error.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, GenericListArray, OffsetSizeTrait, StructArray};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, FieldRef};

use super::{check_writable, file_column_count, is_single_column, is_string_like};
use crate::encodings::DataBlock;
use crate::error::{Error, Result};
use crate::format::enc20;
use crate::format::enc20::array_encoding::ArrayEncoding as Pb;
use crate::schema::LanceField;
use crate::structural::v2_0::{self, PageSource};
use crate::structural::LeafKind;

const CTX: &str = "2.0 nested column";

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
    /// Whether the string-like field at column `col` is stored as offsets over a second
    /// column of bytes (see [`is_string_like`]).
    fn two_column_string(&self, _col: usize) -> bool {
        false
    }
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
    if is_string_like(field) && src.two_column_string(col) {
        return read_two_column_string(src, field, col, num_rows, ranges);
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
                child_col += file_column_count(c, child_col, &|k| src.two_column_string(k));
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

/// A string or binary field stored as a list of `uint8` (offsets in column `col`, bytes in
/// column `col + 1`): read as that list, then its offsets and bytes taken as the field's.
fn read_two_column_string(
    src: &impl ColumnSource,
    field: &LanceField,
    col: usize,
    num_rows: u64,
    ranges: &[Range<u64>],
) -> Result<ArrayRef> {
    let large = matches!(field.data_type, DataType::LargeUtf8 | DataType::LargeBinary);
    let bytes =
        LanceField { name: "item".into(), data_type: DataType::UInt8, nullable: false, children: vec![], ..field.clone() };
    let item = Arc::new(bytes.to_arrow());
    let list_type = if large { DataType::LargeList(item.clone()) } else { DataType::List(item.clone()) };
    let list_field = LanceField { data_type: list_type, children: vec![bytes], ..field.clone() };
    let list = if large {
        read_list::<i64>(src, &list_field, &item, col, num_rows, ranges)?
    } else {
        read_list::<i32>(src, &list_field, &item, col, num_rows, ranges)?
    };
    let data = list.to_data();
    let values = data.child_data().first().ok_or_else(|| Error::Internal("a list without items".into()))?;
    if values.null_count() > 0 {
        return Err(Error::corrupt(format!("{CTX}: string {:?}: its bytes column has nulls", field.name)));
    }
    // Same offsets and validity over the item bytes: a valid string array when the bytes
    // are (checked: UTF-8 for strings).
    let out = arrow_data::ArrayData::builder(field.data_type.clone())
        .len(data.len())
        .offset(data.offset())
        .nulls(data.nulls().cloned())
        .add_buffer(data.buffers()[0].clone())
        .add_buffer(values.buffers()[0].slice_with_length(values.offset(), values.len()))
        .build()
        .map_err(|e| Error::corrupt(format!("{CTX}: string {:?}: {e}", field.name)))?;
    Ok(arrow_array::make_array(out))
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
pub(super) fn split_offset(v: u64, adjustment: u64) -> (bool, u64) {
    if adjustment > 0 && v >= adjustment {
        (false, v - adjustment)
    } else {
        (true, v)
    }
}

/// Sorted, merged ranges: `a..b` and `b..c` become `a..c`.
pub(super) fn merge(ranges: impl IntoIterator<Item = Range<u64>>) -> Vec<Range<u64>> {
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
