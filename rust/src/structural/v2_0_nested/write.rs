//! Writing 2.0 nested columns: a field's buffered values encoded into the pages of all its
//! columns (struct pages, list offsets pages as pylance writes them, and leaf pages cut to
//! about the maximum page size).

use std::ops::Range;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, GenericListArray, OffsetSizeTrait};
use arrow_buffer::Buffer;
use arrow_schema::DataType;
use prost::Message;

use super::{check_struct_validity, check_writable, column_count, is_single_column, list_items};
use crate::error::{Error, Result};
use crate::format::enc20;
use crate::format::enc20::array_encoding::ArrayEncoding as Pb;
use crate::format::TYPE_URL_ARRAY_ENCODING;
use crate::schema::LanceField;
use crate::structural::page::EncodedPage;
use crate::structural::v2_0;

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
pub(super) fn page_rows(len: usize, bytes: u64, max_page_bytes: u64) -> Vec<Range<usize>> {
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
