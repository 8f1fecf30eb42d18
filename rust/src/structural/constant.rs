//! The constant layout (tag 2 of `PageLayout`; `AllNullLayout` in 2.1): a page whose visible
//! values are all null, or (2.2) all the same value.
//!
//! The value is either inline in the message (fixed width ≤ 32 bytes: the Arrow value bytes
//! of a length-1 array, one bitmap byte for booleans) or in an out-of-line buffer holding
//! `u32 num_buffers, u32 len[i]..., bytes...` of a length-1 Arrow array (a string is
//! `[i32 0, i32 len][bytes]`). Levels, when the column has structure, follow in `[rep, def]`
//! buffers: raw u16, or compressed as the message says.

use std::ops::Range;

use arrow_buffer::{Buffer, MutableBuffer};

use super::builder::{LeafBuilder, Selection};
use super::layout::{append_decoded, PageInfo, PageLayout, PageRequest, PageRows, PieceCursor};
use super::miniblock::DecodedChunk;
use super::repdef::{max_def, max_visible_def, Layer};
use super::LeafKind;
use crate::encodings::block::{check_unbacked, ByteCursor};
use crate::encodings::{Compression, DataBlock, FixedSizeListBlock, FixedWidthBlock, VariableWidthBlock};
use crate::error::{Error, Result};
use crate::format::enc21;

/// Largest fixed-width value stored inline.
pub const MAX_INLINE_BYTES: usize = 32;

/// The parsed constant layout.
#[derive(Debug, Clone)]
pub struct ConstantLayout {
    /// Structural layers, innermost first.
    pub layers: Vec<Layer>,
    /// Inline value bytes.
    pub inline_value: Option<bytes::Bytes>,
    /// Compression of the repetition levels buffer.
    pub rep: Option<Compression>,
    /// Compression of the definition levels buffer.
    pub def: Option<Compression>,
    /// Number of repetition levels.
    pub num_rep_values: u64,
    /// Number of definition levels.
    pub num_def_values: u64,
}

impl ConstantLayout {
    /// Parses the protobuf message.
    pub fn from_pb(pb: &enc21::ConstantLayout) -> Result<Self> {
        Ok(Self {
            layers: Layer::parse_all(&pb.layers)?,
            inline_value: pb.inline_value.clone(),
            rep: pb.rep_compression.as_ref().map(Compression::from_pb).transpose()?,
            def: pb.def_compression.as_ref().map(Compression::from_pb).transpose()?,
            num_rep_values: pb.num_rep_values,
            num_def_values: pb.num_def_values,
        })
    }
}

/// Where the page's buffers are: (value, rep, def) indices into the page buffers.
fn buffer_roles(layout: &ConstantLayout, num_buffers: usize) -> Result<(Option<usize>, Option<usize>, Option<usize>)> {
    let has_value = layout.inline_value.is_none() && (num_buffers == 1 || num_buffers == 3);
    Ok(match (num_buffers, has_value) {
        (0, _) => (None, None, None),
        (1, true) => (Some(0), None, None),
        (2, false) => (None, Some(0), Some(1)),
        (3, true) => (Some(0), Some(1), Some(2)),
        (n, _) => return Err(Error::corrupt(format!("constant page with {n} buffers"))),
    })
}

fn levels(buf: &Buffer, comp: Option<&Compression>, n: u64, what: &str) -> Result<Option<Vec<u16>>> {
    if buf.is_empty() {
        return Ok(None);
    }
    let (raw, n) = match comp {
        Some(c) => (c.decode_block(buf, n)?.into_fixed(what)?.data, n),
        // Raw u16 levels; the count may be left 0, so the buffer decides.
        None => (buf.clone(), if n == 0 { buf.len() as u64 / 2 } else { n }),
    };
    if (raw.len() as u64) < n * 2 {
        return Err(Error::corrupt(format!("{what}: buffer too small for {n} levels")));
    }
    Ok(Some(raw.as_slice()[..n as usize * 2].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()))
}

/// Decodes the value of the page as a 1-value block; `None` when the page is all null.
pub fn decode_value(layout: &ConstantLayout, value_buf: Option<&Buffer>, leaf_is_variable: bool) -> Result<Option<DataBlock>> {
    if let Some(v) = &layout.inline_value {
        return Ok(Some(DataBlock::Fixed(FixedWidthBlock {
            data: Buffer::from(v.clone()),
            bits_per_value: v.len() as u64 * 8,
            num_values: 1,
        })));
    }
    let Some(buf) = value_buf else { return Ok(None) };
    let mut c = ByteCursor::new(buf.as_slice(), "constant page value");
    let n = c.uint(4)? as usize;
    if n > 8 {
        return Err(Error::corrupt("constant page value with more than 8 buffers"));
    }
    let mut lens = Vec::with_capacity(n);
    for _ in 0..n {
        lens.push(c.uint(4)? as usize);
    }
    let mut parts = Vec::with_capacity(n);
    for l in lens {
        parts.push(c.take(l)?.to_vec());
    }
    if leaf_is_variable {
        if parts.len() != 2 {
            return Err(Error::corrupt("constant variable-width value needs offsets and bytes"));
        }
        let bits = if parts[0].len() == 8 {
            32
        } else if parts[0].len() == 16 {
            64
        } else {
            return Err(Error::corrupt("constant variable-width value has malformed offsets"));
        };
        let block = VariableWidthBlock {
            offsets: Buffer::from_vec(parts[0].clone()),
            data: Buffer::from_vec(parts[1].clone()),
            bits_per_offset: bits,
            num_values: 1,
        };
        block.validate("constant page value")?;
        Ok(Some(DataBlock::Variable(block)))
    } else {
        let bytes = parts.into_iter().next().ok_or_else(|| Error::corrupt("constant value without bytes"))?;
        Ok(Some(DataBlock::Fixed(FixedWidthBlock {
            bits_per_value: bytes.len() as u64 * 8,
            num_values: 1,
            data: Buffer::from_vec(bytes),
        })))
    }
}

/// The decoded parts of a constant page: its value (`None` when all null) and its levels.
struct Parts {
    value: Option<DataBlock>,
    rep: Option<Vec<u16>>,
    def: Option<Vec<u16>>,
}

/// Decodes the value and the levels (both backed by the page's bytes; nothing is expanded).
fn parts(layout: &ConstantLayout, buffers: &[Buffer], leaf: &LeafKind) -> Result<Parts> {
    let (vi, ri, di) = buffer_roles(layout, buffers.len())?;
    let mut value = decode_value(layout, vi.map(|i| &buffers[i]), matches!(leaf, LeafKind::Variable { .. }))?;
    if let (LeafKind::Bool, Some(DataBlock::Fixed(f))) = (leaf, &mut value) {
        // An inline boolean is one bitmap byte.
        f.bits_per_value = 1;
    }
    let rep = match ri {
        Some(i) => levels(&buffers[i], layout.rep.as_ref(), layout.num_rep_values, "constant page repetition levels")?,
        None => None,
    };
    let def = match di {
        Some(i) => levels(&buffers[i], layout.def.as_ref(), layout.num_def_values, "constant page definition levels")?,
        None => None,
    };
    if let (Some(r), Some(d)) = (&rep, &def) {
        if r.len() != d.len() {
            return Err(Error::corrupt(format!("constant page has {} repetition and {} definition levels", r.len(), d.len())));
        }
    }
    if let Some(d) = &def {
        if d.iter().fold(0, |m, &l| m.max(l)) > max_def(&layout.layers) {
            return Err(Error::corrupt("constant page definition level above the maximum"));
        }
    }
    Ok(Parts { value, rep, def })
}

/// Whether the page stores repetition levels (its rows are lists): such a page is decoded
/// whole with [`decode`]; the others row by row with [`decode_rows`].
pub fn has_repetition(layout: &ConstantLayout, buffers: &[Buffer]) -> Result<bool> {
    let (_, ri, _) = buffer_roles(layout, buffers.len())?;
    Ok(ri.is_some_and(|i| !buffers[i].is_empty()))
}

/// Decodes a constant page of `num_rows` rows. Only for pages with repetition levels (see
/// [`has_repetition`]), whose levels are backed by the page's bytes; a page without them
/// is decoded for the rows asked with [`decode_rows`].
pub fn decode(layout: &ConstantLayout, buffers: &[Buffer], num_rows: u64, leaf: &LeafKind) -> Result<DecodedChunk> {
    let Parts { value, rep, def } = parts(layout, buffers, leaf)?;
    let max_d = max_def(&layout.layers);
    let num_levels = match (&rep, &def) {
        (Some(r), _) => r.len() as u64,
        (None, Some(d)) => d.len() as u64,
        (None, None) => num_rows,
    };
    // Levels and values below are expanded from a count alone: bound it first.
    check_unbacked(num_levels, 2, "constant page levels")?;
    if rep.is_none() && num_levels != num_rows {
        return Err(Error::corrupt(format!("constant page has {num_levels} levels for {num_rows} rows")));
    }
    // With no def buffer, an all-null page is null at the outermost nullable layer.
    let def = match (def, &value) {
        (None, None) if max_d > 0 => Some(vec![max_d; num_levels as usize]),
        (d, _) => d,
    };
    let visible_limit = max_visible_def(&layout.layers);
    let visible = def.as_ref().map(|d| d.iter().filter(|&&l| l <= visible_limit).count() as u64).unwrap_or(num_levels);
    let values = match value {
        None => DataBlock::Empty { num_values: visible },
        Some(v) => repeat(&v, visible)?,
    };
    Ok(DecodedChunk::full(rep, def, values))
}

/// Decodes the rows `rows` (page-local, any order, repeats allowed; `count` of them) of a
/// constant page without repetition levels, in the order given.
///
/// The value is repeated once per row asked, never for the whole page: a constant page needs
/// no bytes per row (FORMAT.md §2.2.5: an all-null or inline-value page without structure
/// has no buffers at all), so its row count alone is no reason to reject it nor to spend
/// memory on rows nobody asked for. A one-row take decodes one row.
pub fn decode_rows(
    layout: &ConstantLayout,
    buffers: &[Buffer],
    num_rows: u64,
    leaf: &LeafKind,
    rows: impl Iterator<Item = u64>,
    count: u64,
) -> Result<DecodedChunk> {
    let Parts { value, rep, def } = parts(layout, buffers, leaf)?;
    if rep.is_some() {
        return Err(Error::corrupt("repetition levels in a constant page of a column without lists"));
    }
    if let Some(d) = &def {
        if d.len() as u64 != num_rows {
            return Err(Error::corrupt(format!("constant page has {} levels for {num_rows} rows", d.len())));
        }
    }
    // What is expanded below is one entry per row asked: bounded by the caller's request.
    check_unbacked(count, 2, "constant page rows")?;
    let max_d = max_def(&layout.layers);
    let mut picked = Vec::with_capacity(count as usize);
    for r in rows {
        let level = match &def {
            Some(d) => d.get(r as usize).copied(),
            None => (r < num_rows).then_some(if value.is_none() { max_d } else { 0 }),
        };
        picked.push(level.ok_or_else(|| Error::corrupt(format!("row {r} is outside a constant page of {num_rows} rows")))?);
    }
    if picked.len() as u64 != count {
        return Err(Error::internal(format!("constant page: {} rows asked, {count} announced", picked.len())));
    }
    let visible_limit = max_visible_def(&layout.layers);
    let visible = picked.iter().filter(|&&l| l <= visible_limit).count() as u64;
    // Levels are only needed where some row is not valid (an all-valid page has none).
    let def = (def.is_some() || max_d > 0 && value.is_none()).then_some(picked);
    let values = match value {
        None => DataBlock::Empty { num_values: visible },
        Some(v) => repeat(&v, visible)?,
    };
    Ok(DecodedChunk { rep: None, def, values, selected: true })
}

/// Repeats a one-value block `n` times.
pub fn repeat(v: &DataBlock, n: u64) -> Result<DataBlock> {
    let width = match v {
        DataBlock::Fixed(f) => f.data.len() as u64,
        DataBlock::Variable(vb) => vb.value(0).len() as u64 + 8,
        _ => 1,
    };
    check_unbacked(n, width, "constant page")?;
    Ok(match v {
        DataBlock::Fixed(f) if f.bits_per_value == 1 => {
            let bit = f.data.as_slice().first().copied().unwrap_or(0) & 1 == 1;
            let mut b = arrow_buffer::BooleanBufferBuilder::new(n as usize);
            b.append_n(n as usize, bit);
            DataBlock::Fixed(FixedWidthBlock { data: b.finish().into_inner(), bits_per_value: 1, num_values: n })
        }
        DataBlock::Fixed(f) => {
            let w = f.data.len();
            let mut out = MutableBuffer::new(w * n as usize);
            for _ in 0..n {
                out.extend_from_slice(f.data.as_slice());
            }
            DataBlock::Fixed(FixedWidthBlock { data: out.into(), bits_per_value: f.bits_per_value, num_values: n })
        }
        DataBlock::Variable(vb) => {
            let value = vb.value(0);
            let mut data = Vec::with_capacity(value.len() * n as usize);
            let mut offsets = Vec::with_capacity(n as usize + 1);
            offsets.push(0u64);
            for _ in 0..n {
                data.extend_from_slice(value);
                offsets.push(data.len() as u64);
            }
            DataBlock::Variable(VariableWidthBlock::from_u64(offsets, data))
        }
        DataBlock::FixedSizeList(l) => DataBlock::FixedSizeList(FixedSizeListBlock {
            child: Box::new(repeat(&l.child, n)?),
            dimension: l.dimension,
            item_validity: None,
        }),
        DataBlock::Empty { .. } => DataBlock::Empty { num_values: n },
        DataBlock::Dictionary { .. } => return Err(Error::corrupt("a constant value cannot be dictionary-encoded")),
    })
}

/// A constant page's state: all its buffers (levels and the out-of-line value), which are
/// small — a page holding a value per row is not constant.
#[derive(Debug)]
pub struct ConstantState {
    /// The page buffers, in order.
    pub buffers: Vec<Buffer>,
}

impl PageLayout for ConstantLayout {
    type State = ConstantState;

    fn layers(&self) -> &[Layer] {
        &self.layers
    }

    fn state_buffers(&self, page: &PageInfo) -> Vec<usize> {
        (0..page.buffers.len()).collect()
    }

    fn load_state(&self, _page: &PageInfo, buffers: Vec<Buffer>, _kind: &LeafKind) -> Result<ConstantState> {
        Ok(ConstantState { buffers })
    }

    fn plan(&self, _: &PageInfo, _: &ConstantState, _: &PageRequest, _: usize, _: &[Buffer]) -> Result<Option<Vec<Range<u64>>>> {
        Ok(None)
    }

    fn decode(
        &self,
        page: &PageInfo,
        state: &ConstantState,
        req: &PageRequest,
        _fetched: &[Buffer],
        out: &mut LeafBuilder,
    ) -> Result<()> {
        let (bufs, n, table) = (&state.buffers, page.num_rows, &req.table[..]);
        if req.nested && has_repetition(self, bufs)? {
            let piece = decode(self, bufs, n, req.kind)?;
            let mut cursor = PieceCursor::new(piece, req.path.max_rep, max_visible_def(&self.layers))?;
            for rows in req.rows.to_runs() {
                cursor.append_rows(out, 0, &rows, table, false)?;
            }
            return Ok(());
        }
        // No lists in this page: one level per row, decoded for the rows asked.
        let decoded = match &req.rows {
            PageRows::Range(r) => decode_rows(self, bufs, n, req.kind, r.clone(), r.end - r.start)?,
            PageRows::Rows(r) => decode_rows(self, bufs, n, req.kind, r.iter().copied(), r.len() as u64)?,
            PageRows::Ranges(r) => decode_rows(self, bufs, n, req.kind, r.iter().flat_map(|r| r.clone()), req.rows.count())?,
        };
        append_decoded(out, &decoded, table, Selection::All)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_counts_are_refused_before_allocating() {
        let one = DataBlock::Fixed(FixedWidthBlock { data: Buffer::from_vec(vec![7u64]), bits_per_value: 64, num_values: 1 });
        // 2^40 rows of 8 bytes would be 8 TiB: refused as corrupt, nothing allocated.
        let err = repeat(&one, 1 << 40).unwrap_err();
        assert!(matches!(err, Error::Corrupt(_)), "{err}");
        let err = repeat(&one, u64::MAX).unwrap_err();
        assert!(matches!(err, Error::Corrupt(_)), "{err}");
        match repeat(&one, 3).unwrap() {
            DataBlock::Fixed(f) => assert_eq!(f.data.typed_data::<u64>(), &[7, 7, 7]),
            _ => panic!("expected a fixed-width block"),
        }
        let c = Compression::Constant { value: Some(vec![1u8, 2, 3, 4].into()) };
        assert!(matches!(c.decode_block(&Buffer::from_vec(Vec::<u8>::new()), 1 << 40), Err(Error::Corrupt(_))));
    }
}
