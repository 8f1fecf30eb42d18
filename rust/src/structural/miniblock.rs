//! The mini-block page layout (2.1 / 2.2): small values in independently decodable chunks.
//!
//! Page buffers: `0` chunk metadata (one word per chunk), `1` the chunks back to back,
//! `2` the dictionary (if any), and last the repetition index (if `repetition_index_depth`
//! is above 0). A metadata word is `((chunk_bytes/8 − 1) << 4) | log2(values in chunk)`, u16 in 2.1
//! and u32 in 2.2 (`has_large_chunk`); every chunk but the last holds a power of two values.
//!
//! A chunk is a header (`u16 num_levels`, `u16 rep_size`?, `u16 def_size`?, one u16/u32 size
//! per value buffer, padded with 0xFE to 8 bytes), then the rep bytes, def bytes and value
//! buffers, each padded to 8 bytes. Levels are compressed per chunk in block context.
//!
//! Random access: the metadata gives every chunk's byte range and first value, so a take
//! reads and decodes only the chunks that hold the requested values.

use std::ops::Range;
use std::sync::Arc;

use arrow_buffer::Buffer;

use super::builder::{LeafBuilder, Selection};
use super::layout::{append_decoded, append_whole_piece, PageInfo, PageLayout, PageRequest, PageRows, PieceCursor};
use super::repdef::{max_def, max_rep, max_visible_def, Layer};
use crate::encodings::{Compression, DataBlock};
use crate::error::{Error, Result};
use crate::format::enc21;
use crate::schema::LeafKind;

/// Filler inside chunks.
const CHUNK_PAD: u8 = 0xFE;
/// Largest chunk 2.1's u16 metadata word can describe.
pub const MAX_CHUNK_BYTES_V2_1: usize = 4096 * 8;

/// The parsed `MiniBlockLayout` message.
#[derive(Debug, Clone)]
pub struct MiniBlockLayout {
    /// Compression of repetition levels, if the column has lists.
    pub rep: Option<Compression>,
    /// Compression of definition levels, if the column has nulls.
    pub def: Option<Compression>,
    /// Compression of the values (the indices when there is a dictionary).
    pub values: Compression,
    /// Compression of the dictionary buffer.
    pub dictionary: Option<Compression>,
    /// Number of dictionary items.
    pub num_dictionary_items: u64,
    /// Structural layers, innermost first.
    pub layers: Vec<Layer>,
    /// Value buffers per chunk.
    pub num_buffers: usize,
    /// Depth of the repetition index (0 = none).
    pub repetition_index_depth: u32,
    /// Number of values (visible items) in the page.
    pub num_items: u64,
    /// u32 chunk words and value-buffer sizes (2.2).
    pub large_chunk: bool,
}

impl MiniBlockLayout {
    /// Parses the protobuf message.
    pub fn from_pb(pb: &enc21::MiniBlockLayout) -> Result<Self> {
        let values = Compression::from_pb(
            pb.value_compression.as_ref().ok_or_else(|| Error::corrupt("mini-block page without value compression"))?,
        )?;
        let layout = Self {
            rep: pb.rep_compression.as_ref().map(Compression::from_pb).transpose()?,
            def: pb.def_compression.as_ref().map(Compression::from_pb).transpose()?,
            num_buffers: pb.num_buffers as usize,
            dictionary: pb.dictionary.as_ref().map(Compression::from_pb).transpose()?,
            num_dictionary_items: pb.num_dictionary_items,
            layers: Layer::parse_all(&pb.layers)?,
            repetition_index_depth: pb.repetition_index_depth,
            num_items: pb.num_items,
            large_chunk: pb.has_large_chunk,
            values,
        };
        if layout.num_buffers != layout.values.miniblock_buffers() {
            return Err(Error::corrupt(format!(
                "mini-block page declares {} value buffers but its encoding {} uses {}",
                layout.num_buffers,
                layout.values.describe(),
                layout.values.miniblock_buffers()
            )));
        }
        if layout.num_buffers > 64 {
            return Err(Error::corrupt("mini-block page with more than 64 value buffers"));
        }
        Ok(layout)
    }

    /// Index of the dictionary page buffer, if any.
    pub fn dictionary_buffer(&self) -> Option<usize> {
        self.dictionary.as_ref().map(|_| 2)
    }

    /// Index of the repetition-index page buffer, if any.
    pub fn rep_index_buffer(&self) -> Option<usize> {
        (self.repetition_index_depth > 0).then_some(2 + self.dictionary.is_some() as usize)
    }
}

/// Where one chunk lives and which values it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkInfo {
    /// Byte offset within page buffer 1.
    pub offset: u64,
    /// Size in bytes.
    pub len: u64,
    /// Index of the chunk's first value within the page.
    pub first_value: u64,
    /// Number of values in the chunk.
    pub num_values: u64,
}

/// Parses chunk metadata words into chunk positions, checking them against the page.
pub fn parse_chunk_metadata(meta: &[u8], layout: &MiniBlockLayout, data_len: u64) -> Result<Vec<ChunkInfo>> {
    let word = if layout.large_chunk { 4 } else { 2 };
    if meta.len() % word != 0 {
        return Err(Error::corrupt("mini-block chunk metadata has a partial word"));
    }
    let n_chunks = meta.len() / word;
    let mut chunks = Vec::with_capacity(n_chunks);
    let (mut offset, mut first_value) = (0u64, 0u64);
    for (i, w) in meta.chunks_exact(word).enumerate() {
        let w = if word == 4 {
            u32::from_le_bytes(w.try_into().unwrap()) as u64
        } else {
            u16::from_le_bytes(w.try_into().unwrap()) as u64
        };
        let len = ((w >> 4) + 1) * 8;
        let num_values = if i + 1 == n_chunks {
            layout.num_items.checked_sub(first_value).ok_or_else(|| {
                Error::corrupt(format!("mini-block chunks hold more than the page's {} values", layout.num_items))
            })?
        } else {
            1u64 << (w & 0xF)
        };
        chunks.push(ChunkInfo { offset, len, first_value, num_values });
        offset += len;
        first_value += num_values;
    }
    if first_value != layout.num_items && !(n_chunks == 0 && layout.num_items == 0) {
        return Err(Error::corrupt(format!("mini-block chunks hold {first_value} values, the page says {}", layout.num_items)));
    }
    if offset > data_len {
        return Err(Error::corrupt(format!("mini-block chunks span {offset} bytes, the data buffer has {data_len}")));
    }
    Ok(chunks)
}

/// One decoded chunk (or a whole decoded page of another layout).
#[derive(Debug, Clone)]
pub struct DecodedChunk {
    /// Repetition levels, if the page has them.
    pub rep: Option<Vec<u16>>,
    /// Definition levels, if the page has them.
    pub def: Option<Vec<u16>>,
    /// The chunk's values (dictionary pages give [`DataBlock::Dictionary`]).
    pub values: DataBlock,
    /// Whether `values` and `def` already hold only the rows that were asked for, in order.
    pub selected: bool,
}

impl DecodedChunk {
    /// A decoded piece holding every value.
    pub fn full(rep: Option<Vec<u16>>, def: Option<Vec<u16>>, values: DataBlock) -> Self {
        Self { rep, def, values, selected: false }
    }
}

/// Decodes `n` levels stored with compression `c`.
fn decode_levels(c: &Compression, buf: &Buffer, n: usize, what: &str) -> Result<Vec<u16>> {
    if let Compression::OutOfLineBitpacking { bits: 16, width } = c {
        // Straight into 16-bit words (no intermediate buffer).
        return crate::encodings::bitpacking::decode_ool_vec::<u16>(buf.as_slice(), *width as usize, n, what);
    }
    levels_to_vec(c.decode_block(buf, n as u64)?, n, what)
}

fn levels_to_vec(block: DataBlock, n: usize, what: &str) -> Result<Vec<u16>> {
    let f = block.into_fixed(what)?;
    if f.bits_per_value != 16 {
        return Err(Error::corrupt(format!("{what} stored as {}-bit values, expected 16", f.bits_per_value)));
    }
    let b = f.data.as_slice();
    if b.len() < n * 2 {
        return Err(Error::corrupt(format!("{what}: too few levels")));
    }
    Ok(b[..n * 2].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect())
}

/// Decodes one chunk's bytes. `dictionary` is the page's decoded dictionary, if any. With
/// `rows` (chunk-local value indices of a column without repetition), only those values are
/// decoded when the encoding allows it (`DecodedChunk::selected` says whether it did).
pub fn decode_chunk(
    layout: &MiniBlockLayout,
    chunk: &ChunkInfo,
    bytes: &Buffer,
    dictionary: Option<&Arc<DataBlock>>,
    rows: Option<&[u32]>,
) -> Result<DecodedChunk> {
    const CTX: &str = "mini-block chunk";
    let b = bytes.as_slice();
    let mut pos = 0usize;
    let mut read = |width: usize| -> Result<u64> {
        let v = b.get(pos..pos + width).ok_or_else(|| Error::corrupt(format!("{CTX}: header truncated")))?;
        pos += width;
        Ok(if width == 2 { u16::from_le_bytes([v[0], v[1]]) as u64 } else { u32::from_le_bytes(v.try_into().unwrap()) as u64 })
    };
    let num_levels = read(2)? as usize;
    let rep_size = if layout.rep.is_some() { read(2)? as usize } else { 0 };
    let def_size = if layout.def.is_some() { read(2)? as usize } else { 0 };
    let size_width = if layout.large_chunk { 4 } else { 2 };
    let mut buf_sizes = [0usize; 64];
    for s in buf_sizes.iter_mut().take(layout.num_buffers) {
        *s = read(size_width)? as usize;
    }
    let mut pos = pos.next_multiple_of(8);
    let mut take = |len: usize| -> Result<Buffer> {
        if pos.checked_add(len).is_none_or(|end| end > b.len()) {
            return Err(Error::corrupt(format!(
                "{CTX}: a buffer of {len} bytes at {pos} overruns the chunk ({} bytes)",
                b.len()
            )));
        }
        let out = bytes.slice_with_length(pos, len);
        pos = (pos + len).next_multiple_of(8);
        Ok(out)
    };
    let rep_buf = if layout.rep.is_some() { Some(take(rep_size)?) } else { None };
    let def_buf = if layout.def.is_some() { Some(take(def_size)?) } else { None };
    let mut value_bufs = Vec::with_capacity(layout.num_buffers);
    for &s in &buf_sizes[..layout.num_buffers] {
        value_bufs.push(take(s)?);
    }
    let rep = match (&layout.rep, rep_buf) {
        (Some(c), Some(buf)) => Some(decode_levels(c, &buf, num_levels, "repetition levels")?),
        _ => None,
    };
    let def = match (&layout.def, def_buf) {
        (Some(c), Some(buf)) => Some(decode_levels(c, &buf, num_levels, "definition levels")?),
        _ => None,
    };
    if let Some(d) = &def {
        let limit = max_def(&layout.layers);
        if d.iter().fold(0, |m, &l| m.max(l)) > limit {
            return Err(Error::corrupt(format!("{CTX}: definition level above the maximum {limit}")));
        }
    }
    if let Some(r) = &rep {
        let limit = max_rep(&layout.layers);
        if r.iter().fold(0, |m, &l| m.max(l)) > limit {
            return Err(Error::corrupt(format!("{CTX}: repetition level above the maximum {limit}")));
        }
    }
    let selective = match rows {
        Some(r) if rep.is_none() => layout.values.decode_miniblock_rows(&value_bufs, chunk.num_values, r)?,
        _ => None,
    };
    let (mut values, selected, expected) = match selective {
        Some(v) => (v, true, rows.map(|r| r.len() as u64).unwrap_or(0)),
        None => (layout.values.decode_miniblock(&value_bufs, chunk.num_values)?, false, chunk.num_values),
    };
    if let Some(dict) = dictionary {
        let indices = values.into_fixed("dictionary indices")?;
        values = DataBlock::Dictionary { indices, items: dict.clone() };
    }
    if values.num_values() != expected {
        return Err(Error::corrupt(format!("{CTX}: decoded {} values, expected {expected}", values.num_values())));
    }
    let def = match (def, selected, rows) {
        (Some(d), true, Some(r)) => {
            if d.len() as u64 != chunk.num_values {
                return Err(Error::corrupt(format!("{CTX}: {} definition levels for {} values", d.len(), chunk.num_values)));
            }
            Some(r.iter().map(|&i| d[i as usize]).collect())
        }
        (d, _, _) => d,
    };
    Ok(DecodedChunk { rep, def, values, selected })
}

// ---------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------

/// The value buffers of one chunk, as produced by a value compressor.
#[derive(Debug, Clone, Default)]
pub struct ValueChunk {
    /// The chunk's value buffers.
    pub buffers: Vec<Vec<u8>>,
    /// Number of values (a power of two unless it is the last chunk).
    pub num_values: u64,
}

/// Page buffers 0 and 1 of a mini-block page, and the repetition index.
#[derive(Debug, Default)]
pub struct SerializedChunks {
    /// Chunk metadata words.
    pub metadata: Vec<u8>,
    /// All chunks back to back.
    pub data: Vec<u8>,
    /// The repetition index (depth 1), when the page has repetition levels.
    pub rep_index: Option<Vec<u8>>,
}

/// The levels of a page being written, in the page's own def numbering.
pub struct ChunkLevels<'a> {
    /// Repetition levels, if the column has lists.
    pub rep: Option<&'a [u16]>,
    /// Definition levels, if anything is null or empty.
    pub def: Option<&'a [u16]>,
    /// Largest repetition level (a level with it starts a row).
    pub max_rep: u16,
    /// Levels ≤ this have a value slot.
    pub visible_limit: u16,
    /// Bit width the repetition levels are packed with.
    pub rep_width: u64,
    /// Bit width the definition levels are packed with.
    pub def_width: u64,
}

fn pack_levels(levels: &[u16], width: u64) -> Result<Vec<u8>> {
    let bytes: Vec<u8> = levels.iter().flat_map(|l| l.to_le_bytes()).collect();
    let mut out = Vec::new();
    crate::encodings::bitpacking::encode_out_of_line(&bytes, 16, width, &mut out)?;
    Ok(out)
}

/// Serialises value chunks with their levels. A chunk's levels run from the level of its
/// first value (the page's first level for chunk 0) to the level of the next chunk's first
/// value (the page's end for the last chunk), so invisible levels (null or empty lists)
/// travel with the values before them.
pub fn serialize_chunks(chunks: &[ValueChunk], levels: &ChunkLevels, large_chunk: bool) -> Result<SerializedChunks> {
    let mut out = SerializedChunks::default();
    let num_levels = levels.rep.map(|r| r.len()).or(levels.def.map(|d| d.len()));
    // Level position of every value.
    let value_levels: Option<Vec<usize>> = num_levels.map(|n| match levels.def {
        Some(d) => (0..n).filter(|&p| d[p] <= levels.visible_limit).collect(),
        None => (0..n).collect(),
    });
    let total_values: u64 = chunks.iter().map(|c| c.num_values).sum();
    if let Some(v) = &value_levels {
        if v.len() as u64 != total_values {
            return Err(Error::internal(format!("{} visible levels for {total_values} values", v.len())));
        }
    }
    let mut rep_index: Vec<u8> = Vec::new();
    let mut first_value = 0usize;
    for (ci, chunk) in chunks.iter().enumerate() {
        let n = chunk.num_values as usize;
        let is_last = ci + 1 == chunks.len();
        let start = out.data.len();
        let level_range = value_levels.as_ref().map(|v| {
            let lo = if ci == 0 { 0 } else { v[first_value] };
            let hi = if is_last { num_levels.unwrap() } else { v[first_value + n] };
            lo..hi
        });
        let chunk_levels = level_range.clone().map(|r| r.len()).unwrap_or(0);
        if chunk_levels > u16::MAX as usize {
            return Err(Error::invalid_input(
                "more than 65535 levels (e.g. consecutive empty or null lists) fall into one mini-block chunk",
            ));
        }
        let rep_bytes = match (levels.rep, &level_range) {
            (Some(r), Some(range)) => Some(pack_levels(&r[range.clone()], levels.rep_width)?),
            _ => None,
        };
        let def_bytes = match (levels.def, &level_range) {
            (Some(d), Some(range)) => Some(pack_levels(&d[range.clone()], levels.def_width)?),
            _ => None,
        };
        out.data.extend_from_slice(&(chunk_levels as u16).to_le_bytes());
        for b in [&rep_bytes, &def_bytes].into_iter().flatten() {
            let len = u16::try_from(b.len()).map_err(|_| Error::invalid_input("levels of a chunk exceed 64 KiB"))?;
            out.data.extend_from_slice(&len.to_le_bytes());
        }
        for buf in &chunk.buffers {
            if large_chunk {
                let len = u32::try_from(buf.len()).map_err(|_| Error::invalid_input("mini-block buffer exceeds 4 GiB"))?;
                out.data.extend_from_slice(&len.to_le_bytes());
            } else {
                let len = u16::try_from(buf.len()).map_err(|_| {
                    Error::invalid_input("a mini-block value buffer exceeds 64 KiB, which file version 2.1 cannot store")
                })?;
                out.data.extend_from_slice(&len.to_le_bytes());
            }
        }
        pad_to_8(&mut out.data, start, CHUNK_PAD);
        for b in [&rep_bytes, &def_bytes].into_iter().flatten() {
            out.data.extend_from_slice(b);
            pad_to_8(&mut out.data, start, CHUNK_PAD);
        }
        for buf in &chunk.buffers {
            out.data.extend_from_slice(buf);
            pad_to_8(&mut out.data, start, CHUNK_PAD);
        }
        let chunk_len = out.data.len() - start;
        let log2 = if is_last {
            if n.is_power_of_two() {
                n.trailing_zeros() as u64
            } else {
                0
            }
        } else {
            if !n.is_power_of_two() || n > 1 << 15 {
                return Err(Error::internal(format!("non-last chunk of {n} values")));
            }
            n.trailing_zeros() as u64
        };
        let words_minus_one = (chunk_len / 8 - 1) as u64;
        if large_chunk {
            if words_minus_one >= 1 << 28 {
                return Err(Error::invalid_input("mini-block chunk exceeds 2 GiB"));
            }
            out.metadata.extend_from_slice(&(((words_minus_one << 4) | log2) as u32).to_le_bytes());
        } else {
            if chunk_len > MAX_CHUNK_BYTES_V2_1 {
                return Err(Error::invalid_input(format!(
                    "a mini-block chunk of {chunk_len} bytes exceeds the 32 KiB that file version 2.1 allows"
                )));
            }
            out.metadata.extend_from_slice(&(((words_minus_one << 4) | log2) as u16).to_le_bytes());
        }
        if let (Some(r), Some(range)) = (levels.rep, &level_range) {
            // Rows completed in this chunk, and levels of an unfinished last row.
            let chunk_rep = &r[range.clone()];
            let next_starts_row = is_last || r.get(range.end).is_some_and(|&x| x == levels.max_rep);
            let starts: Vec<usize> = (0..chunk_rep.len()).filter(|&p| chunk_rep[p] == levels.max_rep).collect();
            let inner = starts.iter().filter(|&&p| p >= 1).count() as u64;
            let (rows, leftover) = if next_starts_row {
                (inner + 1, 0)
            } else {
                (inner, (chunk_rep.len() - starts.last().copied().unwrap_or(0)) as u64)
            };
            // A chunk with no levels at all completes nothing.
            let rows = if chunk_rep.is_empty() { 0 } else { rows };
            rep_index.extend_from_slice(&rows.to_le_bytes());
            rep_index.extend_from_slice(&leftover.to_le_bytes());
        }
        first_value += n;
    }
    if levels.rep.is_some() {
        out.rep_index = Some(rep_index);
    }
    Ok(out)
}

fn pad_to_8(data: &mut Vec<u8>, chunk_start: usize, byte: u8) {
    let rel = data.len() - chunk_start;
    data.resize(chunk_start + rel.next_multiple_of(8), byte);
}

/// What goes into the `MiniBlockLayout` message.
pub struct LayoutParts<'a> {
    /// Value (or dictionary index) compression.
    pub values: &'a Compression,
    /// Repetition-level compression.
    pub rep: Option<&'a Compression>,
    /// Definition-level compression.
    pub def: Option<&'a Compression>,
    /// Dictionary compression and item count.
    pub dictionary: Option<(&'a Compression, u64)>,
    /// Layers, innermost first.
    pub layers: &'a [Layer],
    /// Number of values.
    pub num_items: u64,
    /// 2.2 chunk grammar.
    pub large_chunk: bool,
    /// Whether a repetition index (depth 1) follows.
    pub has_rep_index: bool,
}

/// Builds the `PageLayout` message of a mini-block page.
pub fn layout_pb(p: &LayoutParts) -> enc21::PageLayout {
    enc21::PageLayout {
        layout: Some(enc21::page_layout::Layout::MiniBlockLayout(enc21::MiniBlockLayout {
            rep_compression: p.rep.map(|r| r.to_pb()),
            def_compression: p.def.map(|d| d.to_pb()),
            value_compression: Some(p.values.to_pb()),
            dictionary: p.dictionary.map(|(d, _)| d.to_pb()),
            num_dictionary_items: p.dictionary.map(|(_, n)| n).unwrap_or(0),
            layers: p.layers.iter().map(|l| l.to_pb()).collect(),
            num_buffers: p.values.miniblock_buffers() as u64,
            repetition_index_depth: p.has_rep_index as u32,
            num_items: p.num_items,
            has_large_chunk: p.large_chunk,
        })),
    }
}

/// A mini-block page's metadata: where its chunks are, its dictionary and repetition index.
#[derive(Debug)]
pub struct MiniBlockState {
    /// The chunks, in order.
    pub chunks: Vec<ChunkInfo>,
    /// The decoded dictionary, if the page has one.
    pub dictionary: Option<Arc<DataBlock>>,
    /// Rows completed before each chunk (prefix sums of the repetition index, with a final
    /// total), and the levels each chunk leaves for the next one.
    pub rep_index: Option<(Vec<u64>, Vec<u64>)>,
}

impl MiniBlockLayout {
    /// The buffers [`MiniBlockState`] is parsed from: chunk metadata, dictionary, repetition index.
    pub(crate) fn metadata_buffers(&self) -> Vec<usize> {
        let mut v = vec![0];
        v.extend(self.dictionary_buffer());
        v.extend(self.rep_index_buffer());
        v
    }

    /// Parses a page's [`MiniBlockState`]; `rows_are_values` when each row is one value
    /// (a page without lists: its value count must equal its row count).
    pub(crate) fn parse_state(&self, page: &PageInfo, bufs: Vec<Buffer>, rows_are_values: bool) -> Result<MiniBlockState> {
        if page.buffers.len() < 2 || bufs.len() != self.metadata_buffers().len() {
            return Err(Error::corrupt("mini-block page with fewer than 2 buffers"));
        }
        let chunks = parse_chunk_metadata(bufs[0].as_slice(), self, page.buffers[1].1)?;
        if rows_are_values && self.repetition_index_depth == 0 && self.num_items != page.num_rows && self.layers.len() == 1 {
            return Err(Error::corrupt(format!("mini-block page holds {} values for {} rows", self.num_items, page.num_rows)));
        }
        let dictionary = match (&self.dictionary, self.dictionary_buffer()) {
            (Some(c), Some(_)) => Some(Arc::new(c.decode_block(&bufs[1], self.num_dictionary_items)?)),
            _ => None,
        };
        let rep_index = match self.rep_index_buffer() {
            Some(_) => Some(parse_rep_index(bufs.last().unwrap(), self.repetition_index_depth, &chunks, page.num_rows)?),
            None => None,
        };
        Ok(MiniBlockState { chunks, dictionary, rep_index })
    }
}

/// Parses a mini-block repetition index (`depth + 1` u64 values per chunk: rows completed in
/// the chunk, ..., levels left over for the next chunk) into rows completed before each chunk
/// (with a final total) and leftovers.
fn parse_rep_index(buf: &Buffer, depth: u32, chunks: &[ChunkInfo], num_rows: u64) -> Result<(Vec<u64>, Vec<u64>)> {
    let per = depth as usize + 1;
    let b = buf.as_slice();
    if b.len() != chunks.len() * per * 8 {
        return Err(Error::corrupt(format!(
            "repetition index of {} bytes for {} chunks of depth {depth}",
            b.len(),
            chunks.len()
        )));
    }
    let word = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
    let mut before = Vec::with_capacity(chunks.len() + 1);
    let mut leftover = Vec::with_capacity(chunks.len());
    let mut total = 0u64;
    for c in 0..chunks.len() {
        before.push(total);
        total = total.checked_add(word(c * per)).ok_or_else(|| Error::corrupt("repetition index overflows"))?;
        leftover.push(word(c * per + depth as usize));
    }
    before.push(total);
    if total != num_rows {
        return Err(Error::corrupt(format!("repetition index counts {total} rows, the page has {num_rows}")));
    }
    Ok((before, leftover))
}

/// Groups sorted page-local rows (= values, for columns without lists) by chunk:
/// `(chunk index, chunk-local positions)`.
pub(crate) fn group_by_chunk(chunks: &[ChunkInfo], rows: &[u64]) -> Result<Vec<(usize, Vec<u32>)>> {
    let mut groups: Vec<(usize, Vec<u32>)> = Vec::new();
    let mut ci = 0;
    for &r in rows {
        if ci < chunks.len() && chunks[ci].first_value + chunks[ci].num_values <= r {
            // Rows are sorted: search forward from the current chunk.
            ci += chunks[ci..].partition_point(|c| c.first_value + c.num_values <= r);
        }
        let chunk = chunks.get(ci).ok_or_else(|| Error::corrupt(format!("row {r} lies beyond the page's mini-block chunks")))?;
        let local = (r - chunk.first_value) as u32;
        match groups.last_mut() {
            Some((c, v)) if *c == ci => v.push(local),
            _ => groups.push((ci, vec![local])),
        }
    }
    Ok(groups)
}

/// Absolute byte ranges of chunks `which` of a page.
pub(crate) fn chunk_ranges(page: &PageInfo, chunks: &[ChunkInfo], which: impl Iterator<Item = usize>) -> Vec<Range<u64>> {
    let data_pos = page.buffers[1].0;
    which.map(|c| data_pos + chunks[c].offset..data_pos + chunks[c].offset + chunks[c].len).collect()
}

/// The chunks holding a range of values.
fn chunks_of_range(chunks: &[ChunkInfo], rows: &Range<u64>) -> Range<usize> {
    let first = chunks.partition_point(|c| c.first_value + c.num_values <= rows.start);
    let last = chunks.partition_point(|c| c.first_value < rows.end);
    first..last.max(first)
}

/// For each run of rows of a page with lists, the chunks holding it (from the one where its
/// first row begins to the one where its last row ends) and the rows completed before the
/// first; then every chunk needed, sorted.
fn chunks_of_runs(state: &MiniBlockState, runs: &[Range<u64>]) -> (Vec<(usize, usize, u64)>, Vec<usize>) {
    let chunks = &state.chunks;
    let spans: Vec<(usize, usize, u64)> = runs
        .iter()
        .map(|rows| match &state.rep_index {
            Some((before, leftover)) => {
                let completes_in = |row: u64| before.partition_point(|&c| c <= row).saturating_sub(1).min(chunks.len() - 1);
                let mut j0 = completes_in(rows.start);
                while j0 > 0 && leftover[j0 - 1] > 0 && before[j0] == rows.start {
                    j0 -= 1;
                }
                (j0, completes_in(rows.end - 1), before[j0])
            }
            None => (0, chunks.len() - 1, 0),
        })
        .collect();
    let mut needed: Vec<usize> = spans.iter().flat_map(|&(a, b, _)| a..=b).collect();
    needed.sort_unstable();
    needed.dedup();
    (spans, needed)
}

impl PageLayout for MiniBlockLayout {
    type State = MiniBlockState;

    fn layers(&self) -> &[Layer] {
        &self.layers
    }

    fn state_buffers(&self, _page: &PageInfo) -> Vec<usize> {
        self.metadata_buffers()
    }

    fn load_state(&self, page: &PageInfo, buffers: Vec<Buffer>, _kind: &LeafKind) -> Result<MiniBlockState> {
        self.parse_state(page, buffers, true)
    }

    fn plan(
        &self,
        page: &PageInfo,
        state: &MiniBlockState,
        req: &PageRequest,
        round: usize,
        _fetched: &[Buffer],
    ) -> Result<Option<Vec<Range<u64>>>> {
        if round > 0 {
            return Ok(None);
        }
        let chunks = &state.chunks;
        Ok(Some(match (&req.rows, req.nested) {
            (_, true) => {
                let runs = req.rows.to_runs();
                if chunks.is_empty() || runs.is_empty() {
                    return Ok(None);
                }
                chunk_ranges(page, chunks, chunks_of_runs(state, &runs).1.into_iter())
            }
            (PageRows::Range(r), false) => chunk_ranges(page, chunks, chunks_of_range(chunks, r)),
            (PageRows::Rows(r), false) => chunk_ranges(page, chunks, group_by_chunk(chunks, r)?.into_iter().map(|g| g.0)),
            (rows @ PageRows::Ranges(_), false) => {
                chunk_ranges(page, chunks, group_by_chunk(chunks, &rows.to_rows())?.into_iter().map(|g| g.0))
            }
        }))
    }

    fn decode(
        &self,
        _page: &PageInfo,
        state: &MiniBlockState,
        req: &PageRequest,
        fetched: &[Buffer],
        out: &mut LeafBuilder,
    ) -> Result<()> {
        let (chunks, dictionary, table) = (&state.chunks, state.dictionary.as_ref(), &req.table[..]);
        let decode_groups = |groups: Vec<(usize, Vec<u32>)>, out: &mut LeafBuilder| -> Result<()> {
            check_fetched(fetched.len(), groups.len())?;
            for ((c, sel), b) in groups.iter().zip(fetched) {
                crate::interrupt::check()?;
                // Few rows of a chunk: decode just those values when the encoding allows.
                let rows = (sel.len() * 8 < chunks[*c].num_values as usize).then_some(&sel[..]);
                let decoded = decode_chunk(self, &chunks[*c], b, dictionary, rows)?;
                let s = if decoded.selected { Selection::All } else { Selection::Indices(sel) };
                append_decoded(out, &decoded, table, s)?;
            }
            Ok(())
        };
        match (&req.rows, req.nested) {
            (_, true) => self.decode_nested(state, req, fetched, out),
            (PageRows::Range(rows), false) => {
                let selected = &chunks[chunks_of_range(chunks, rows)];
                check_fetched(fetched.len(), selected.len())?;
                for (c, b) in selected.iter().zip(fetched) {
                    crate::interrupt::check()?;
                    let decoded = decode_chunk(self, c, b, dictionary, None)?;
                    let s = rows.start.max(c.first_value) - c.first_value;
                    let e = rows.end.min(c.first_value + c.num_values) - c.first_value;
                    append_decoded(out, &decoded, table, Selection::Range(s as usize, (e - s) as usize))?;
                }
                Ok(())
            }
            (PageRows::Rows(r), false) => decode_groups(group_by_chunk(chunks, r)?, out),
            (rows @ PageRows::Ranges(_), false) => decode_groups(group_by_chunk(chunks, &rows.to_rows())?, out),
        }
    }

    fn num_levels(&self, _page: &PageInfo) -> u64 {
        self.num_items
    }
}

impl MiniBlockLayout {
    /// Decodes runs of rows of a page of a column with lists: every chunk once.
    fn decode_nested(&self, state: &MiniBlockState, req: &PageRequest, fetched: &[Buffer], out: &mut LeafBuilder) -> Result<()> {
        let runs = req.rows.to_runs();
        let chunks = &state.chunks;
        if chunks.is_empty() || runs.is_empty() {
            return Ok(());
        }
        let (max_rep, table) = (req.path.max_rep, &req.table[..]);
        let visible_limit = max_visible_def(&self.layers);
        let (spans, needed) = chunks_of_runs(state, &runs);
        check_fetched(fetched.len(), needed.len())?;
        let dictionary = state.dictionary.as_ref();
        let mut decoded: Vec<Option<PieceCursor>> = (0..needed.len()).map(|_| None).collect();
        for (rows, &(j0, j1, completed_before)) in runs.iter().zip(&spans) {
            crate::interrupt::check()?;
            let mut next_start_row = completed_before;
            for j in j0..=j1 {
                let slot = needed.binary_search(&j).expect("chunk planned");
                if decoded[slot].is_none() && spans.len() == 1 {
                    // One run (a scan): a chunk whose rows all belong to it is appended
                    // whole, without indexing its row starts.
                    let piece = decode_chunk(self, &chunks[j], &fetched[slot], dictionary, None)?;
                    if let Some(starts) = append_whole_piece(out, &piece, (max_rep, visible_limit), next_start_row, rows, table)?
                    {
                        next_start_row += starts;
                        continue;
                    }
                    decoded[slot] = Some(PieceCursor::new(piece, max_rep, visible_limit)?);
                } else if decoded[slot].is_none() {
                    let piece = decode_chunk(self, &chunks[j], &fetched[slot], dictionary, None)?;
                    decoded[slot] = Some(PieceCursor::new(piece, max_rep, visible_limit)?);
                }
                let cursor = decoded[slot].as_mut().unwrap();
                if j == j0 && cursor.starts_inside_row() {
                    next_start_row += 1; // the chunk starts inside a row begun earlier
                }
                next_start_row += cursor.append_rows(out, next_start_row, rows, table, j < j1)?;
            }
        }
        Ok(())
    }
}

/// An error unless a decode got the buffers its plan asked for.
pub(crate) fn check_fetched(got: usize, planned: usize) -> Result<()> {
    if got != planned {
        return Err(Error::Internal(format!("{got} buffers fetched for a plan of {planned}")));
    }
    Ok(())
}
