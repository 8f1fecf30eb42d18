//! The blob page layout (2.1 / 2.2): large binary values stored out of line, found through
//! `(position, size)` descriptors kept in an inner mini-block page.
//!
//! Reading rows takes two rounds of fetches: the descriptor chunks holding the rows, then
//! the blobs they point to. A null row's descriptor has size 0 and its definition level in
//! bits 16..32 of the position.

use std::ops::Range;

use arrow_buffer::Buffer;
use arrow_schema::DataType;

use super::builder::{LeafBuilder, Selection};
use super::layout::{to_canonical, PageInfo, PageLayout, PageRequest};
use super::miniblock::{check_fetched, chunk_ranges, decode_chunk, group_by_chunk, MiniBlockLayout, MiniBlockState};
use super::repdef::Layer;
use crate::encodings::{DataBlock, VariableWidthBlock};
use crate::error::{Error, Result};
use crate::schema::LeafKind;

/// A blob page's layout.
#[derive(Debug)]
pub struct BlobLayout {
    /// The descriptors' mini-block layout.
    pub inner: MiniBlockLayout,
    /// The real validity layers of the column.
    pub layers: Vec<Layer>,
}

/// The descriptors of some rows: the raw 16-byte descriptors, each row's definition level,
/// and the byte ranges of the non-empty blobs of valid rows, in row order.
struct Descriptors {
    raw: Buffer,
    def: Vec<u16>,
    blobs: Vec<Range<u64>>,
}

impl BlobLayout {
    fn groups(&self, state: &MiniBlockState, req: &PageRequest) -> Result<Vec<(usize, Vec<u32>)>> {
        if req.nested {
            return Err(Error::not_supported("blob pages in a column with lists"));
        }
        group_by_chunk(&state.chunks, &req.rows.to_rows())
    }

    /// Decodes the descriptors of the rows from their fetched chunks.
    fn descriptors(&self, state: &MiniBlockState, req: &PageRequest, chunks: &[Buffer]) -> Result<Descriptors> {
        let groups = self.groups(state, req)?;
        check_fetched(chunks.len(), groups.len())?;
        let mut descriptors = LeafBuilder::new(LeafKind::Fixed { bytes: 16 }, req.rows.count() as usize);
        for ((c, sel), b) in groups.iter().zip(chunks) {
            crate::interrupt::check()?;
            let decoded = decode_chunk(&self.inner, &state.chunks[*c], b, None, None)?;
            descriptors.append(&decoded.values, None, Selection::Indices(sel))?;
        }
        let raw = descriptors.finish(&DataType::FixedSizeBinary(16))?.values.to_data().buffers()[0].clone();
        let mut def = Vec::with_capacity(raw.len() / 16);
        let mut blobs = Vec::new();
        for d in raw.as_slice().chunks_exact(16) {
            let pos = u64::from_le_bytes(d[..8].try_into().unwrap());
            let size = u64::from_le_bytes(d[8..].try_into().unwrap());
            if size == 0 && pos != 0 {
                def.push(((pos >> 16) & 0xFFFF) as u16);
                continue;
            }
            if pos.checked_add(size).is_none_or(|e| e > req.file_size) {
                return Err(Error::corrupt(format!("blob at {pos}..+{size} lies outside the file")));
            }
            def.push(0);
            if size > 0 {
                blobs.push(pos..pos + size);
            }
        }
        Ok(Descriptors { raw, def, blobs })
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
        fetched: &[Buffer],
    ) -> Result<Option<Vec<Range<u64>>>> {
        Ok(match round {
            0 => Some(chunk_ranges(page, &state.chunks, self.groups(state, req)?.into_iter().map(|g| g.0))),
            1 => Some(self.descriptors(state, req, fetched)?.blobs),
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
        let chunks = self.groups(state, req)?.len().min(fetched.len());
        let Descriptors { raw, def, blobs } = self.descriptors(state, req, &fetched[..chunks])?;
        let fetched_blobs = &fetched[chunks..];
        check_fetched(fetched_blobs.len(), blobs.len())?;
        let mut offsets = Vec::with_capacity(def.len() + 1);
        offsets.push(0u64);
        let mut data = Vec::with_capacity(blobs.iter().map(|b| (b.end - b.start) as usize).sum());
        let mut next = fetched_blobs.iter();
        for (d, desc) in def.iter().zip(raw.as_slice().chunks_exact(16)) {
            let size = u64::from_le_bytes(desc[8..].try_into().unwrap());
            if *d == 0 && size > 0 {
                data.extend_from_slice(next.next().expect("checked above").as_slice());
            }
            offsets.push(data.len() as u64);
        }
        let block = DataBlock::Variable(VariableWidthBlock::from_u64(offsets, data));
        let canonical = if def.iter().any(|&d| d != 0) { Some(to_canonical(&def, &req.table)?) } else { None };
        out.append(&block, canonical.as_deref(), Selection::All)
    }
}
