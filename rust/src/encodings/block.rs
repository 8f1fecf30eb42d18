//! [`DataBlock`]: decoded values between the compressive encodings and Arrow.
//!
//! Encodings turn bytes into data blocks and back; the structural layer turns data blocks
//! (plus repetition/definition levels) into Arrow arrays. Blocks hold no validity: nulls
//! live in definition levels (2.1+) or in the 2.0 `nullable` encoding.

use arrow_buffer::{Buffer, MutableBuffer};

use crate::error::{Error, Result};

/// Values of one fixed width (`bits_per_value` is 1 for booleans, otherwise a multiple of 8).
#[derive(Debug, Clone)]
pub struct FixedWidthBlock {
    /// Little-endian values back to back (LSB-first bitmap when 1 bit wide).
    pub data: Buffer,
    /// Width of one value in bits.
    pub bits_per_value: u64,
    /// Number of values.
    pub num_values: u64,
}

/// Variable-width values (strings, binary) addressed by offsets.
#[derive(Debug, Clone)]
pub struct VariableWidthBlock {
    /// `num_values + 1` little-endian offsets into `data`, each `bits_per_offset` wide; they
    /// need not start at zero.
    pub offsets: Buffer,
    /// The value bytes.
    pub data: Buffer,
    /// 32 or 64.
    pub bits_per_offset: u8,
    /// Number of values.
    pub num_values: u64,
}

/// Fixed-size lists: `dimension` child items per value.
#[derive(Debug, Clone)]
pub struct FixedSizeListBlock {
    /// The items, `num_values * dimension` of them.
    pub child: Box<DataBlock>,
    /// Items per value.
    pub dimension: u64,
    /// Validity of the items (bitmap of `num_values * dimension` bits), if any are null.
    pub item_validity: Option<Buffer>,
}

/// Decoded values.
#[derive(Debug, Clone)]
pub enum DataBlock {
    /// Fixed-width values.
    Fixed(FixedWidthBlock),
    /// Variable-width values.
    Variable(VariableWidthBlock),
    /// Fixed-size lists.
    FixedSizeList(FixedSizeListBlock),
    /// `num_values` values with no bytes (nulls, or the null type).
    Empty {
        /// Number of values.
        num_values: u64,
    },
    /// Values given as indices into a page dictionary; expanded only for the values that
    /// are actually selected.
    Dictionary {
        /// One index per value (8, 16, 32 or 64 bits).
        indices: FixedWidthBlock,
        /// The dictionary (fixed or variable width).
        items: std::sync::Arc<DataBlock>,
    },
}

impl DataBlock {
    /// Number of values in the block.
    pub fn num_values(&self) -> u64 {
        match self {
            DataBlock::Fixed(b) => b.num_values,
            DataBlock::Variable(b) => b.num_values,
            DataBlock::FixedSizeList(b) => b.child.num_values() / b.dimension.max(1),
            DataBlock::Empty { num_values } => *num_values,
            DataBlock::Dictionary { indices, .. } => indices.num_values,
        }
    }

    /// The fixed-width block, or a corrupt-data error naming `ctx`.
    pub fn into_fixed(self, ctx: &str) -> Result<FixedWidthBlock> {
        match self {
            DataBlock::Fixed(b) => Ok(b),
            other => Err(Error::corrupt(format!("{ctx}: expected fixed-width values, found {}", other.kind()))),
        }
    }

    /// The variable-width block, or a corrupt-data error naming `ctx`.
    pub fn into_variable(self, ctx: &str) -> Result<VariableWidthBlock> {
        match self {
            DataBlock::Variable(b) => Ok(b),
            other => Err(Error::corrupt(format!("{ctx}: expected variable-width values, found {}", other.kind()))),
        }
    }

    /// A short name of the block's kind, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            DataBlock::Fixed(_) => "fixed-width",
            DataBlock::Variable(_) => "variable-width",
            DataBlock::FixedSizeList(_) => "fixed-size-list",
            DataBlock::Empty { .. } => "empty",
            DataBlock::Dictionary { .. } => "dictionary",
        }
    }
}

impl FixedWidthBlock {
    /// Bytes per value (panics on bit-packed widths other than multiples of 8).
    pub fn bytes_per_value(&self) -> usize {
        (self.bits_per_value / 8) as usize
    }

    /// Checks the buffer is large enough for the values it claims to hold.
    pub fn validate(&self, ctx: &str) -> Result<()> {
        let need_bits = self.bits_per_value.checked_mul(self.num_values);
        match need_bits {
            Some(bits) if bits.div_ceil(8) <= self.data.len() as u64 => Ok(()),
            _ => Err(Error::corrupt(format!(
                "{ctx}: {} values of {} bits need more than the {} bytes present",
                self.num_values,
                self.bits_per_value,
                self.data.len()
            ))),
        }
    }
}

impl VariableWidthBlock {
    /// Offset `i` as u64.
    #[inline]
    pub fn offset(&self, i: usize) -> u64 {
        let o = self.offsets.as_slice();
        if self.bits_per_offset == 32 {
            u32::from_le_bytes(o[i * 4..i * 4 + 4].try_into().unwrap()) as u64
        } else {
            u64::from_le_bytes(o[i * 8..i * 8 + 8].try_into().unwrap())
        }
    }

    /// Bytes of value `i`.
    #[inline]
    pub fn value(&self, i: usize) -> &[u8] {
        &self.data.as_slice()[self.offset(i) as usize..self.offset(i + 1) as usize]
    }

    /// Checks that offsets are present, non-decreasing and within the data.
    pub fn validate(&self, ctx: &str) -> Result<()> {
        let width = (self.bits_per_offset / 8) as u64;
        if self.bits_per_offset != 32 && self.bits_per_offset != 64 {
            return Err(Error::corrupt(format!("{ctx}: offsets of {} bits", self.bits_per_offset)));
        }
        if (self.offsets.len() as u64) < (self.num_values + 1) * width {
            return Err(Error::corrupt(format!("{ctx}: too few offsets for {} values", self.num_values)));
        }
        let mut prev = self.offset(0);
        for i in 1..=self.num_values as usize {
            let o = self.offset(i);
            if o < prev {
                return Err(Error::corrupt(format!("{ctx}: offsets decrease at value {i}")));
            }
            prev = o;
        }
        if prev > self.data.len() as u64 {
            return Err(Error::corrupt(format!(
                "{ctx}: offsets reach byte {prev} but only {} bytes are present",
                self.data.len()
            )));
        }
        Ok(())
    }

    /// Total bytes of all values.
    pub fn data_len(&self) -> u64 {
        self.offset(self.num_values as usize) - self.offset(0)
    }

    /// Builds a block from owned offsets (u32) and data.
    pub fn from_u32(offsets: Vec<u32>, data: Vec<u8>) -> Self {
        let n = offsets.len() as u64 - 1;
        Self { offsets: Buffer::from_vec(offsets), data: Buffer::from_vec(data), bits_per_offset: 32, num_values: n }
    }

    /// Builds a block from owned offsets (u64) and data.
    pub fn from_u64(offsets: Vec<u64>, data: Vec<u8>) -> Self {
        let n = offsets.len() as u64 - 1;
        Self { offsets: Buffer::from_vec(offsets), data: Buffer::from_vec(data), bits_per_offset: 64, num_values: n }
    }
}

/// Copies `bytes` into a new 64-byte aligned buffer.
pub fn aligned_copy(bytes: &[u8]) -> Buffer {
    let mut m = MutableBuffer::with_capacity(bytes.len());
    m.extend_from_slice(bytes);
    m.into()
}

/// Returns `buf` unchanged if its start is aligned to `align`, else an aligned copy.
pub fn ensure_aligned(buf: Buffer, align: usize) -> Buffer {
    if (buf.as_ptr() as usize) % align == 0 {
        buf
    } else {
        aligned_copy(buf.as_slice())
    }
}

/// Reads a little-endian unsigned integer of `width` bytes (1, 2, 4 or 8) at `pos`.
#[inline]
pub fn read_uint(b: &[u8], pos: usize, width: usize) -> u64 {
    match width {
        1 => b[pos] as u64,
        2 => u16::from_le_bytes([b[pos], b[pos + 1]]) as u64,
        4 => u32::from_le_bytes(b[pos..pos + 4].try_into().unwrap()) as u64,
        8 => u64::from_le_bytes(b[pos..pos + 8].try_into().unwrap()),
        _ => unreachable!("integer width {width}"),
    }
}

/// A bounds-checked little-endian cursor over a byte slice.
pub struct ByteCursor<'a> {
    data: &'a [u8],
    pos: usize,
    ctx: &'a str,
}

impl<'a> ByteCursor<'a> {
    /// A cursor at the start of `data`; `ctx` names the structure in errors.
    pub fn new(data: &'a [u8], ctx: &'a str) -> Self {
        Self { data, pos: 0, ctx }
    }
    /// Current position.
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// Moves to `pos` (error if beyond the end).
    pub fn seek(&mut self, pos: usize) -> Result<()> {
        if pos > self.data.len() {
            return Err(Error::corrupt(format!("{}: position {pos} beyond {} bytes", self.ctx, self.data.len())));
        }
        self.pos = pos;
        Ok(())
    }
    /// Takes `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        match self.pos.checked_add(n) {
            Some(end) if end <= self.data.len() => {
                let s = &self.data[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            _ => Err(Error::corrupt(format!(
                "{}: needs {n} bytes at {} but only {} are present",
                self.ctx,
                self.pos,
                self.data.len()
            ))),
        }
    }
    /// Reads an unsigned integer of `width` bytes.
    pub fn uint(&mut self, width: usize) -> Result<u64> {
        let b = self.take(width)?;
        Ok(read_uint(b, 0, width))
    }
}

/// Most bytes (or values) one decode may expand from data that no buffer backs (a constant
/// value repeated, all-null levels): counts read from a file are untrusted, and a writer cuts
/// pages by size, so a real page never comes close. 2 GiB.
pub const MAX_UNBACKED_BYTES: u64 = 1 << 31;

/// Checks that expanding `count` values of `width` bytes each (for `what`) stays within
/// [`MAX_UNBACKED_BYTES`], before anything is allocated.
pub fn check_unbacked(count: u64, width: u64, what: &str) -> crate::error::Result<()> {
    match count.checked_mul(width.max(1)) {
        Some(bytes) if bytes <= MAX_UNBACKED_BYTES => Ok(()),
        _ => Err(crate::error::Error::corrupt(format!(
            "{what}: {count} values of {width} bytes would be expanded from data no buffer backs \
             (more than {MAX_UNBACKED_BYTES} bytes); the counts are corrupt"
        ))),
    }
}
