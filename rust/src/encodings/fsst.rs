//! FSST string compression as a compressive encoding.
//!
//! A page's strings are compressed together with one symbol table (stored in the
//! protobuf description); the compressed strings are then stored as a `variable` block
//! (mini-block chunks) or one by one (full-zip). Decoding a chunk decompresses only that
//! chunk's strings, so random access stays cheap.

use std::sync::Arc;

use arrow_buffer::Buffer;

use super::block::{ensure_aligned, DataBlock, VariableWidthBlock};
use crate::error::{Error, Result};
use crate::kernels::fsst::SymbolTable;

/// Strings shorter than this (max length) or pages smaller than this (total bytes) are not
/// worth a symbol table (pylance uses the same thresholds).
pub const MIN_MAX_LEN: u64 = 5;
/// See [`MIN_MAX_LEN`].
pub const MIN_TOTAL_BYTES: u64 = 32 * 1024;

/// Decompresses every value of a variable block.
pub fn decompress_block(table: &SymbolTable, inner: DataBlock, ctx: &str) -> Result<DataBlock> {
    let v = inner.into_variable(ctx)?;
    let offsets = ensure_aligned(v.offsets.clone(), 8);
    let out = if v.bits_per_offset == 32 {
        let offs: &[u32] = &offsets.typed_data::<u32>()[..v.num_values as usize + 1];
        let (o, d) = table
            .decompress_offsets(offs, v.data.as_slice())
            .map_err(|e| Error::corrupt(format!("{ctx}: invalid FSST data: {e}")))?;
        VariableWidthBlock::from_u32(o, d)
    } else {
        let offs: &[u64] = &offsets.typed_data::<u64>()[..v.num_values as usize + 1];
        let (o, d) = table
            .decompress_offsets(offs, v.data.as_slice())
            .map_err(|e| Error::corrupt(format!("{ctx}: invalid FSST data: {e}")))?;
        VariableWidthBlock::from_u64(o, d)
    };
    Ok(DataBlock::Variable(out))
}

/// Trains a table on `src` and compresses it; returns the table and compressed strings
/// (same offset width as `src`).
pub fn compress_block(src: &VariableWidthBlock) -> Result<(Arc<SymbolTable>, VariableWidthBlock)> {
    let n = src.num_values as usize;
    let strings: Vec<&[u8]> = (0..n).map(|i| src.value(i)).collect();
    let table = SymbolTable::train(&strings);
    let offsets = ensure_aligned(src.offsets.clone(), 8);
    let block = if src.bits_per_offset == 32 {
        let (o, d) = table
            .compress_offsets(&offsets.typed_data::<u32>()[..n + 1], src.data.as_slice())
            .map_err(|e| Error::invalid_input(format!("FSST compression failed: {e}")))?;
        VariableWidthBlock::from_u32(o, d)
    } else {
        let (o, d) = table
            .compress_offsets(&offsets.typed_data::<u64>()[..n + 1], src.data.as_slice())
            .map_err(|e| Error::invalid_input(format!("FSST compression failed: {e}")))?;
        VariableWidthBlock::from_u64(o, d)
    };
    Ok((Arc::new(table), block))
}

/// Decompresses one full-zip value into `out`.
pub fn decompress_value(table: &SymbolTable, value: &[u8], out: &mut Vec<u8>) -> Result<()> {
    table.decompress_into(value, out).map_err(|e| Error::corrupt(format!("invalid FSST value: {e}")))
}

/// Convenience for tests and the writer: a buffer from a byte vector.
pub fn buffer(v: Vec<u8>) -> Buffer {
    Buffer::from_vec(v)
}
