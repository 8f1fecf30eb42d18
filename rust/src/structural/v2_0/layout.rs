//! 2.0 pages on the [`PageLayout`] trait: the reader plans, fetches and decodes them like
//! every other layout, so a 2.0 page's byte ranges join the one coalesced fetch of a request.
//!
//! The 2.0 decoders ([`read_rows`]) read by byte ranges in a fixed sequence whose length
//! depends only on the page's shape ([`read_rounds`]: fixed-width values and fixed-size lists
//! one read, a binary page two — its indices, then the bytes they point at). Round `r` of
//! [`PageLayout::plan`] replays the decoder with a source that serves the earlier rounds'
//! bytes; the decoder's read number `r` is the round's ranges (the work before it is only
//! range arithmetic). Past the shape's last read the plan is complete, and decoding runs the
//! decoder once over the fetched bytes, with no I/O. Pages that cannot be read by ranges are
//! loaded whole as the page state and decoded from it, with no round at all.

use std::cell::{Cell, RefCell};
use std::ops::Range;

use arrow_buffer::Buffer;

use super::ranged::{read_rounds, read_rows, PageSource};
use crate::error::{Error, Result};
use crate::format::enc20;
use crate::schema::LeafKind;
use crate::structural::builder::{LeafBuilder, Selection};
use crate::structural::layout::{append_decoded, PageInfo, PageLayout, PageRequest};
use crate::structural::miniblock::DecodedChunk;
use crate::structural::repdef::Layer;

/// A 2.0 page's layout: its `ArrayEncoding` tree.
#[derive(Debug)]
pub struct V20Layout {
    /// The page's encoding.
    pub encoding: enc20::ArrayEncoding,
}

/// A 2.0 page's state: its buffers when it is decoded whole (none when read by ranges), and
/// the number of reads the decoder makes.
#[derive(Debug, Default)]
pub struct V20State {
    buffers: Vec<Buffer>,
    rounds: usize,
}

impl V20Layout {
    /// Runs the decoder over the bytes fetched so far: the decoded rows, or the byte ranges
    /// it asks for next.
    fn replay(
        &self,
        page: &PageInfo,
        state: &V20State,
        req: &PageRequest,
        rows: &[Range<u64>],
        fetched: &[Buffer],
    ) -> Result<std::result::Result<DecodedChunk, Vec<Range<u64>>>> {
        let served = Cell::new(0usize);
        let asked: RefCell<Option<Vec<Range<u64>>>> = RefCell::new(None);
        let fetch = |ranges: &[Range<u64>]| -> Result<Vec<Buffer>> {
            let start = served.get();
            if start + ranges.len() > fetched.len() {
                *asked.borrow_mut() = Some(ranges.to_vec());
                return Err(Error::Internal("2.0 page: bytes not fetched yet".into()));
            }
            let got = &fetched[start..start + ranges.len()];
            if ranges.iter().zip(got).any(|(r, b)| b.len() as u64 != r.end - r.start) {
                return Err(Error::Internal("2.0 page: a replayed read does not match its plan".into()));
            }
            served.set(start + ranges.len());
            Ok(got.to_vec())
        };
        let src = PageSource { locations: page.buffers, loaded: &state.buffers, fetch: &fetch };
        match read_rows(&self.encoding, &src, page.num_rows, req.kind, req.data_type, rows) {
            Ok(decoded) => Ok(Ok(decoded)),
            Err(e) => match asked.into_inner() {
                Some(ranges) => Ok(Err(ranges)),
                None => Err(e),
            },
        }
    }
}

impl PageLayout for V20Layout {
    type State = V20State;

    fn layers(&self) -> &[Layer] {
        &[]
    }

    fn state_buffers(&self, page: &PageInfo) -> Vec<usize> {
        if read_rounds(&self.encoding, page.buffers.len()).is_some() {
            vec![] // read by byte ranges on demand: nothing to cache
        } else {
            (0..page.buffers.len()).collect()
        }
    }

    fn load_state(&self, page: &PageInfo, buffers: Vec<Buffer>, _kind: &LeafKind) -> Result<V20State> {
        Ok(V20State { buffers, rounds: read_rounds(&self.encoding, page.buffers.len()).unwrap_or(0) })
    }

    fn plan(
        &self,
        page: &PageInfo,
        state: &V20State,
        req: &PageRequest,
        round: usize,
        fetched: &[Buffer],
    ) -> Result<Option<Vec<Range<u64>>>> {
        if req.nested {
            return Err(Error::not_supported("this page layout for a column with lists"));
        }
        if round >= state.rounds {
            return Ok(None);
        }
        let rows = req.rows.to_runs();
        match self.replay(page, state, req, &rows, fetched)? {
            Err(next) => Ok(Some(next)),
            Ok(_) => Ok(None), // (no rows: the decoder needed nothing)
        }
    }

    fn decode(
        &self,
        page: &PageInfo,
        state: &V20State,
        req: &PageRequest,
        fetched: &[Buffer],
        out: &mut LeafBuilder,
    ) -> Result<()> {
        let rows = req.rows.to_runs();
        let decoded = match self.replay(page, state, req, &rows, fetched)? {
            Ok(d) => d,
            Err(_) => return Err(Error::Internal("2.0 page: decoding asked for bytes its plan did not".into())),
        };
        append_decoded(out, &decoded, req.table, Selection::All)
    }
}
