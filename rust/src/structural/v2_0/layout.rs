//! 2.0 pages on the [`PageLayout`] trait: the reader plans, fetches and decodes them like
//! every other layout, so a 2.0 page's byte ranges join the one coalesced fetch of a request.
//!
//! The 2.0 decoders ([`read_rows`]) read by byte ranges in a fixed sequence (a binary page:
//! its indices, then the bytes they point at). The layout replays that sequence against the
//! bytes fetched so far: [`PageLayout::plan`] runs the decoder with a source that serves the
//! earlier rounds' bytes and, at the first request beyond them, stops and returns that
//! request as the next round; when nothing more is asked for, the plan is complete. Decoding
//! is then pure: the decoder runs once more over the fetched bytes (or the result of the
//! plan's last replay, kept for it, is taken). Pages that cannot be read by ranges are
//! loaded whole as the page state and decoded from it, with no round at all.

use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::sync::Mutex;

use arrow_buffer::Buffer;

use super::ranged::{read_rows, supports_ranged_reads, PageSource};
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

/// A 2.0 page's state: its buffers when it is decoded whole (none when read by ranges),
/// and the last decode a plan ran, kept for the decode that follows it.
#[derive(Debug, Default)]
pub struct V20State {
    buffers: Vec<Buffer>,
    planned: Mutex<Option<Planned>>,
}

/// A decode run by [`PageLayout::plan`]: the rows and fetched bytes it used, and its result.
#[derive(Debug)]
struct Planned {
    rows: Vec<Range<u64>>,
    fetched: usize,
    decoded: DecodedChunk,
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
        if supports_ranged_reads(&self.encoding, page.buffers.len()) {
            vec![] // read by byte ranges on demand: nothing to cache
        } else {
            (0..page.buffers.len()).collect()
        }
    }

    fn load_state(&self, _page: &PageInfo, buffers: Vec<Buffer>, _kind: &LeafKind) -> Result<V20State> {
        Ok(V20State { buffers, planned: Mutex::new(None) })
    }

    fn plan(
        &self,
        page: &PageInfo,
        state: &V20State,
        req: &PageRequest,
        _round: usize,
        fetched: &[Buffer],
    ) -> Result<Option<Vec<Range<u64>>>> {
        if req.nested {
            return Err(Error::not_supported("this page layout for a column with lists"));
        }
        let rows = req.rows.to_runs();
        match self.replay(page, state, req, &rows, fetched)? {
            Err(next) => Ok(Some(next)),
            Ok(decoded) => {
                *state.planned.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(Planned { rows, fetched: fetched.len(), decoded });
                Ok(None)
            }
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
        let kept = {
            let mut planned = state.planned.lock().unwrap_or_else(|p| p.into_inner());
            match planned.take() {
                Some(p) if p.rows == rows && p.fetched == fetched.len() => Some(p.decoded),
                other => {
                    *planned = other; // another request's: leave it
                    None
                }
            }
        };
        let decoded = match kept {
            Some(d) => d,
            None => match self.replay(page, state, req, &rows, fetched)? {
                Ok(d) => d,
                Err(_) => return Err(Error::Internal("2.0 page: decoding asked for bytes its plan did not".into())),
            },
        };
        append_decoded(out, &decoded, req.table, Selection::All)
    }
}
