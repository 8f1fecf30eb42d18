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
//!
//! This module holds how a field maps to 2.0 columns and what 2.0 cannot store; `write`
//! encodes a field's pages, `read` reads rows of a field through a [`ColumnSource`].

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, GenericListArray, OffsetSizeTrait};
use arrow_schema::DataType;

use crate::error::{Error, Result};
use crate::schema::LanceField;
use crate::structural::v2_0;
use crate::structural::LeafKind;

mod read;
mod write;

pub use read::{page_local, read_field, ColumnSource, PageRef};
pub use write::{encode_field, struct_page, ColumnPiece};

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

/// Whether `field` holds strings or binary values: what files of pylance before 0.14 (file
/// version 2.0 as first released, written as "0.3") stored as a `List` page of offsets over
/// a second column of `uint8` items, where later 2.0 writers use one `Binary` column.
pub fn is_string_like(field: &LanceField) -> bool {
    matches!(field.data_type, DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary)
}

/// Number of file columns of `field` whose first column is `col`, where `two_columns(c)`
/// says whether the string-like field at column `c` is stored in the two-column layout
/// (see [`is_string_like`]); [`column_count`] otherwise.
pub fn file_column_count(field: &LanceField, col: usize, two_columns: &dyn Fn(usize) -> bool) -> usize {
    let mut next = col;
    for f in column_fields(field) {
        next += if is_string_like(f) && two_columns(next) { 2 } else { 1 };
    }
    next - col
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

#[cfg(test)]
mod tests;
