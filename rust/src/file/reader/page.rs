//! Pages of a column: their layouts, parsed from the protobuf page descriptions, and the
//! page metadata (chunk tables, dictionaries, repetition indexes) fetched and cached on
//! first use; planning and decoding a page dispatch on its layout here.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use arrow_buffer::Buffer;

use super::FileReader;
use crate::encodings::Compression;
use crate::error::{Error, Result};
use crate::format::enc21;
use crate::structural::blob::BlobLayout;
use crate::structural::builder::LeafBuilder;
use crate::structural::constant::{ConstantLayout, ConstantState};
use crate::structural::fullzip::{self, FullZipLayout, FullZipState};
use crate::structural::layout::{PageInfo, PageLayout, PageRequest, PageRows};
use crate::structural::miniblock::{MiniBlockLayout, MiniBlockState};
use crate::structural::repdef::Layer;
use crate::structural::{v2_0, LeafKind};

/// A page's layout, parsed from its protobuf description.
#[derive(Debug)]
pub enum PageKind {
    /// 2.1+ mini-block.
    MiniBlock(MiniBlockLayout),
    /// 2.1+ full-zip.
    FullZip(FullZipLayout),
    /// 2.1+ constant / all-null.
    Constant(ConstantLayout),
    /// 2.1+ blob: (position, size) descriptors in an inner mini-block page.
    Blob(BlobLayout),
    /// 2.0 `ArrayEncoding` tree.
    V2_0(v2_0::V20Layout),
}

/// Page metadata loaded on first use.
#[derive(Debug)]
pub(super) enum PageState {
    MiniBlock(MiniBlockState),
    FullZip(FullZipState),
    Constant(ConstantState),
    /// A 2.0 page's buffers (none for pages read by byte ranges).
    V2_0(v2_0::V20State),
}

/// Runs `$body` with the page's layout (`$l`, a [`PageLayout`]) and loaded state (`$s`).
macro_rules! with_layout {
    ($page:expr, |$l:ident, $s:ident| $body:expr) => {{
        let state = $page.state.get().ok_or_else(|| Error::Internal("page state not loaded".into()))?;
        match (&$page.kind, state.as_ref()) {
            (PageKind::MiniBlock($l), PageState::MiniBlock($s)) => $body,
            (PageKind::FullZip($l), PageState::FullZip($s)) => $body,
            (PageKind::Constant($l), PageState::Constant($s)) => $body,
            (PageKind::Blob($l), PageState::MiniBlock($s)) => $body,
            (PageKind::V2_0($l), PageState::V2_0($s)) => $body,
            _ => Err(Error::corrupt("page state does not match its layout")),
        }
    }};
}

/// One page of a column.
#[derive(Debug)]
pub struct Page {
    /// First row of the page within the file.
    pub first_row: u64,
    /// Rows in the page.
    pub num_rows: u64,
    /// (absolute position, size) of each page buffer.
    pub buffers: Vec<(u64, u64)>,
    /// The layout.
    pub kind: PageKind,
    pub(super) state: OnceLock<Arc<PageState>>,
}

/// One column of the file.
#[derive(Debug)]
pub struct Column {
    /// Pages in row order.
    pub pages: Vec<Page>,
}

impl Page {
    fn info(&self) -> PageInfo<'_> {
        PageInfo { num_rows: self.num_rows, buffers: &self.buffers }
    }

    /// The structural layers of a 2.1+ page.
    pub(super) fn layers(&self) -> Option<&[Layer]> {
        match &self.kind {
            PageKind::MiniBlock(l) => Some(l.layers()),
            PageKind::FullZip(l) => Some(l.layers()),
            PageKind::Constant(l) => Some(l.layers()),
            PageKind::Blob(l) => Some(l.layers()),
            PageKind::V2_0(_) => None,
        }
    }

    /// Page buffers that make up the page's cached state.
    fn state_buffers(&self) -> Vec<usize> {
        let info = self.info();
        match &self.kind {
            PageKind::MiniBlock(l) => l.state_buffers(&info),
            PageKind::FullZip(l) => l.state_buffers(&info),
            PageKind::Constant(l) => l.state_buffers(&info),
            PageKind::Blob(l) => l.state_buffers(&info),
            PageKind::V2_0(l) => l.state_buffers(&info),
        }
    }

    fn build_state(&self, bufs: Vec<Buffer>, kind: &LeafKind) -> Result<PageState> {
        // Rows of a variable packed struct must be laid out as the schema's children say, and
        // only such a column may have them.
        let page_packed = match &self.kind {
            PageKind::FullZip(l) => match &l.kind {
                fullzip::ValueKind::Variable { packed, .. } => packed.as_ref(),
                _ => None,
            },
            _ => None,
        };
        match (kind, page_packed) {
            (LeafKind::VarPacked { fields }, Some(page)) if fields == page => {}
            // (an all-null page of such a column: constant layout, no packed rows at all)
            (LeafKind::VarPacked { .. }, None) if matches!(self.kind, PageKind::Constant(_)) => {}
            (LeafKind::VarPacked { .. }, _) | (_, Some(_)) => {
                return Err(Error::corrupt("the page's packed struct layout does not match the column's type"));
            }
            _ => {}
        }
        let info = self.info();
        Ok(match &self.kind {
            PageKind::MiniBlock(l) => PageState::MiniBlock(l.load_state(&info, bufs, kind)?),
            PageKind::FullZip(l) => PageState::FullZip(l.load_state(&info, bufs, kind)?),
            PageKind::Constant(l) => PageState::Constant(l.load_state(&info, bufs, kind)?),
            PageKind::Blob(l) => PageState::MiniBlock(l.load_state(&info, bufs, kind)?),
            PageKind::V2_0(l) => PageState::V2_0(l.load_state(&info, bufs, kind)?),
        })
    }

    /// Levels the page holds.
    pub(super) fn num_levels(&self) -> u64 {
        let info = self.info();
        match &self.kind {
            PageKind::MiniBlock(l) => l.num_levels(&info),
            PageKind::FullZip(l) => l.num_levels(&info),
            _ => self.num_rows,
        }
    }

    /// Bytes of the values of `rows`, if the page's state tells (see [`PageLayout::value_bytes`]).
    pub(super) fn value_bytes(&self, rows: &PageRows) -> u64 {
        match (&self.kind, self.state.get().map(|s| s.as_ref())) {
            (PageKind::FullZip(l), Some(PageState::FullZip(s))) => l.value_bytes(&self.info(), s, rows),
            _ => 0,
        }
    }
}

/// Round `round` of the plan of a page (see [`PageLayout::plan`]).
pub(super) fn plan_page(page: &Page, req: &PageRequest, round: usize, fetched: &[Buffer]) -> Result<Option<Vec<Range<u64>>>> {
    let info = page.info();
    with_layout!(page, |l, s| l.plan(&info, s, req, round, fetched))
}

pub(super) fn parse_page_layout(layout: enc21::PageLayout, ctx: &str) -> Result<PageKind> {
    use enc21::page_layout::Layout;
    Ok(match layout.layout {
        Some(Layout::MiniBlockLayout(m)) => PageKind::MiniBlock(MiniBlockLayout::from_pb(&m)?),
        Some(Layout::FullZipLayout(f)) => PageKind::FullZip(FullZipLayout::from_pb(&f)?),
        Some(Layout::ConstantLayout(c)) => PageKind::Constant(ConstantLayout::from_pb(&c)?),
        Some(Layout::BlobLayout(b)) => {
            let layers = crate::structural::repdef::Layer::parse_all(&b.layers)?;
            match b.inner_layout.and_then(|l| l.layout) {
                Some(Layout::MiniBlockLayout(m)) => {
                    let inner = MiniBlockLayout::from_pb(&m)?;
                    match &inner.values {
                        Compression::PackedStruct { bits, .. } if bits == &[64, 64] => {}
                        other => {
                            return Err(Error::not_supported(format!("{ctx}: blob descriptors encoded as {}", other.describe())))
                        }
                    }
                    PageKind::Blob(BlobLayout { inner, layers })
                }
                _ => return Err(Error::not_supported(format!("{ctx}: blob page whose descriptors are not mini-block"))),
            }
        }
        None => return Err(Error::corrupt(format!("{ctx}: page layout is empty"))),
    })
}

impl FileReader {
    /// Fetches and caches the metadata buffers of pages that have none yet.
    pub(super) fn load_states(&self, pages: &[(&Page, &LeafKind)]) -> Result<()> {
        let mut wanted: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut ranges = Vec::new();
        for (i, (p, _)) in pages.iter().enumerate() {
            if p.state.get().is_some() {
                continue;
            }
            let idx = p.state_buffers();
            for &b in &idx {
                // The layout names buffers the page may not have (found by fuzzing).
                let &(pos, len) =
                    p.buffers.get(b).ok_or_else(|| Error::corrupt(format!("{}: a page lacks its buffer {b}", self.path)))?;
                ranges.push(pos..pos + len);
            }
            wanted.push((i, idx));
        }
        if wanted.is_empty() {
            return Ok(());
        }
        let mut fetched = self.io.read_ranges(&ranges)?.into_iter();
        for (i, idx) in wanted {
            let bufs: Vec<Buffer> = fetched.by_ref().take(idx.len()).collect();
            let bytes: u64 = bufs.iter().map(|b| b.len() as u64).sum();
            let (page, kind) = pages[i];
            let state = page.build_state(bufs, kind)?;
            if page.state.set(Arc::new(state)).is_ok() {
                self.held.fetch_add(bytes, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Decodes the rows of `req` of a page from the bytes its plan fetched.
    pub(super) fn decode_page(&self, page: &Page, req: &PageRequest, fetched: &[Buffer], out: &mut LeafBuilder) -> Result<()> {
        let info = page.info();
        with_layout!(page, |l, s| l.decode(&info, s, req, fetched, out))
    }
}
