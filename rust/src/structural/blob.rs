//! The blob page layout (2.1 / 2.2): large binary values stored out of line, found through
//! `(position, size)` descriptions kept in an inner mini-block page.
//!
//! The layout decodes the descriptions (a packed struct of two `u64`s per row, one round of
//! fetches); the reader turns them into bytes with a second fetch when a caller wants the
//! values themselves (see `FileReader::blob_bytes`). A null row's description has size 0
//! and its definition level in bits 16..32 of the position.

use std::ops::Range;

use arrow_buffer::Buffer;
use arrow_schema::DataType;

use super::builder::{LeafBuilder, Selection};
use super::layout::{to_canonical, PageInfo, PageLayout, PageRequest};
use super::miniblock::{check_fetched, chunk_ranges, decode_chunk, group_by_chunk, MiniBlockLayout, MiniBlockState};
use super::repdef::Layer;
use crate::encodings::{DataBlock, FixedWidthBlock};
use crate::error::{Error, Result};
use crate::schema::LeafKind;

/// A blob page's layout.
#[derive(Debug)]
pub struct BlobLayout {
    /// The descriptions' mini-block layout.
    pub inner: MiniBlockLayout,
    /// The real validity layers of the column.
    pub layers: Vec<Layer>,
}

impl BlobLayout {
    fn groups(&self, state: &MiniBlockState, req: &PageRequest) -> Result<Vec<(usize, Vec<u32>)>> {
        if req.nested {
            return Err(Error::not_supported("blob pages in a column with lists"));
        }
        group_by_chunk(&state.chunks, &req.rows.to_rows())
    }

    /// Decodes the raw 16-byte descriptions of the rows from their fetched chunks, and each
    /// row's definition level.
    fn descriptions(&self, state: &MiniBlockState, req: &PageRequest, chunks: &[Buffer]) -> Result<(Buffer, Vec<u16>)> {
        let groups = self.groups(state, req)?;
        check_fetched(chunks.len(), groups.len())?;
        let mut descriptions = LeafBuilder::new(LeafKind::Fixed { bytes: 16 }, req.rows.count() as usize);
        for ((c, sel), b) in groups.iter().zip(chunks) {
            crate::interrupt::check()?;
            let decoded = decode_chunk(&self.inner, &state.chunks[*c], b, None, None)?;
            descriptions.append(&decoded.values, None, Selection::Indices(sel))?;
        }
        let raw = descriptions.finish(&DataType::FixedSizeBinary(16))?.values.to_data().buffers()[0].clone();
        let def = raw
            .as_slice()
            .chunks_exact(16)
            .map(|d| {
                let pos = u64::from_le_bytes(d[..8].try_into().unwrap());
                let size = u64::from_le_bytes(d[8..].try_into().unwrap());
                if size == 0 && pos != 0 {
                    ((pos >> 16) & 0xFFFF) as u16
                } else {
                    0
                }
            })
            .collect();
        Ok((raw, def))
    }
}

impl PageLayout for BlobLayout {
    type State = MiniBlockState;

    fn layers(&self) -> &[Layer] {
        &self.layers
    }

    fn state_buffers(&self, _page: &PageInfo) -> Vec<usize> {
        self.inner.metadata_buffers()
    }

    fn load_state(&self, page: &PageInfo, buffers: Vec<Buffer>, _kind: &LeafKind) -> Result<MiniBlockState> {
        self.inner.parse_state(page, buffers, false)
    }

    fn plan(
        &self,
        page: &PageInfo,
        state: &MiniBlockState,
        req: &PageRequest,
        round: usize,
        _fetched: &[Buffer],
    ) -> Result<Option<Vec<Range<u64>>>> {
        Ok(match round {
            0 => Some(chunk_ranges(page, &state.chunks, self.groups(state, req)?.into_iter().map(|g| g.0))),
            _ => None,
        })
    }

    fn decode(
        &self,
        _page: &PageInfo,
        state: &MiniBlockState,
        req: &PageRequest,
        fetched: &[Buffer],
        out: &mut LeafBuilder,
    ) -> Result<()> {
        if !matches!(req.kind, LeafKind::Packed { widths } if widths == &[8, 8]) {
            // (a file that lays out a column of another type as blob pages)
            return Err(Error::corrupt(format!("blob pages decode to descriptions, not to {:?}", req.kind)));
        }
        let (raw, def) = self.descriptions(state, req, fetched)?;
        let block = DataBlock::Fixed(FixedWidthBlock { num_values: def.len() as u64, data: raw, bits_per_value: 128 });
        let canonical = if def.iter().any(|&d| d != 0) { Some(to_canonical(&def, &req.table)?) } else { None };
        out.append(&block, canonical.as_deref(), Selection::All)
    }
}

/// The values of a legacy blob column (binary or large binary) as the descriptions its
/// pages store, each value's bytes written out of line by `write` (which returns their
/// absolute position in the file). No description is null: a null value is size 0 at a
/// nonzero position — 1 in 2.0 files, its definition level (1) in bits 16..32 in 2.1 ones.
pub fn legacy_descriptions(
    values: &dyn arrow_array::Array,
    structural: bool,
    mut write: impl FnMut(&[u8]) -> Result<u64>,
) -> Result<arrow_array::ArrayRef> {
    use arrow_array::cast::AsArray;
    use arrow_array::{StructArray, UInt64Array};
    let n = values.len();
    let value = |i: usize| -> &[u8] {
        match values.data_type() {
            DataType::Binary => values.as_binary::<i32>().value(i),
            _ => values.as_binary::<i64>().value(i),
        }
    };
    if !matches!(values.data_type(), DataType::Binary | DataType::LargeBinary) {
        return Err(Error::invalid_input(format!("a blob column holds binary values, not {}", values.data_type())));
    }
    let null_position = if structural { 1u64 << 16 } else { 1 };
    let (mut position, mut size) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        crate::interrupt::check()?;
        if values.is_null(i) {
            position.push(null_position);
            size.push(0);
            continue;
        }
        let bytes = value(i);
        position.push(if bytes.is_empty() { 0 } else { write(bytes)? });
        size.push(bytes.len() as u64);
    }
    let DataType::Struct(fields) = crate::schema::legacy_blob_description_type() else { unreachable!("a struct") };
    let columns: Vec<arrow_array::ArrayRef> =
        vec![std::sync::Arc::new(UInt64Array::from(position)), std::sync::Arc::new(UInt64Array::from(size))];
    Ok(std::sync::Arc::new(StructArray::try_new(fields, columns, None)?))
}

/// Which rows of legacy blob descriptions (see [`legacy_descriptions`]) are null values.
pub fn legacy_null_rows(descriptions: &[arrow_array::ArrayRef]) -> Result<Vec<bool>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::UInt64Type;
    let mut out = Vec::new();
    for d in descriptions {
        let s = d.as_struct_opt().ok_or_else(|| Error::Internal("blob descriptions are not a struct".into()))?;
        let (pos, size) = (s.column(0).as_primitive::<UInt64Type>(), s.column(1).as_primitive::<UInt64Type>());
        out.extend(pos.values().iter().zip(size.values().iter()).map(|(&p, &n)| n == 0 && p != 0));
    }
    Ok(out)
}

/// A 2.1+ page of descriptions (a mini-block page of the packed struct) wrapped as a blob
/// page whose outer layer says whether the page has null values (as pylance marks it).
pub fn blob_page(page: super::page::EncodedPage, has_nulls: bool) -> Result<super::page::EncodedPage> {
    use crate::format::enc21;
    use prost::Message;
    let inner = enc21::PageLayout::decode(page.encoding.as_slice())
        .map_err(|e| Error::Internal(format!("a descriptions page's layout does not decode: {e}")))?;
    if !matches!(inner.layout, Some(enc21::page_layout::Layout::MiniBlockLayout(_))) {
        return Err(Error::Internal("blob descriptions were not written as a mini-block page".into()));
    }
    let layer = if has_nulls { enc21::RepDefLayer::RepdefNullableItem } else { enc21::RepDefLayer::RepdefAllValidItem };
    let outer = enc21::PageLayout {
        layout: Some(enc21::page_layout::Layout::BlobLayout(Box::new(enc21::BlobLayout {
            inner_layout: Some(Box::new(inner)),
            layers: vec![layer as i32],
        }))),
    };
    Ok(super::page::EncodedPage { encoding: outer.encode_to_vec(), ..page })
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::UInt64Type;
    use arrow_array::{Array, LargeBinaryArray};

    use super::*;

    #[test]
    fn legacy_descriptions_mark_nulls_as_each_version_does() {
        let values = LargeBinaryArray::from(vec![Some(&b"abc"[..]), None, Some(&b""[..]), Some(&b"xy"[..])]);
        for (structural, null_position) in [(false, 1u64), (true, 1 << 16)] {
            let mut next = 64u64;
            let d = legacy_descriptions(&values, structural, |b| {
                let at = next;
                next += b.len() as u64;
                Ok(at)
            })
            .unwrap();
            let s = d.as_struct();
            assert_eq!(s.null_count(), 0);
            let pos: Vec<u64> = s.column(0).as_primitive::<UInt64Type>().values().to_vec();
            let size: Vec<u64> = s.column(1).as_primitive::<UInt64Type>().values().to_vec();
            assert_eq!(pos, vec![64, null_position, 0, 67]);
            assert_eq!(size, vec![3, 0, 0, 2]);
        }
        let not_binary = arrow_array::Int32Array::from(vec![1]);
        assert!(legacy_descriptions(&not_binary, true, |_| Ok(0)).is_err());
    }
}
