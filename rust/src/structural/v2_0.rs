//! File version 2.0: pages described by `ArrayEncoding` trees.

use arrow_buffer::Buffer;

use super::miniblock::DecodedChunk;
use super::LeafKind;
use crate::error::{Error, Result};
use crate::format::enc20;

/// Decodes a whole 2.0 page of `num_rows` rows.
pub fn decode_page(_enc: &enc20::ArrayEncoding, _buffers: &[Buffer], _num_rows: u64, _kind: &LeafKind) -> Result<DecodedChunk> {
    Err(Error::not_supported("reading file version 2.0 pages is not implemented yet"))
}

/// A one-line description of a 2.0 encoding tree.
pub fn describe(enc: &enc20::ArrayEncoding) -> String {
    format!("{:?}", enc.array_encoding.as_ref().map(|_| "array_encoding"))
}

/// Encodes one 2.0 page.
pub fn encode_page(_array: &arrow_array::ArrayRef, _field: &crate::file::LanceField) -> Result<crate::file::strategy::EncodedPage> {
    Err(Error::not_supported("writing file version 2.0 is not implemented yet"))
}
