//! File version 2.0: pages described by `ArrayEncoding` trees (FORMAT.md §2.1).
//!
//! A 2.0 page is a tree of encodings whose leaves name page buffers. The shapes pylance 14
//! writes, and that [`encode_page`] reproduces, are:
//!
//! ```text
//! fixed width, bool     nullable{no_nulls{flat(bits, buf 0)}}
//!   with nulls          nullable{some_nulls{validity: flat(1, buf 0), values: flat(bits, buf 1)}}
//!   all null, null type nullable{all_nulls}                              (no buffers)
//! fixed-size list       nullable{…, values: fixed_size_list{dim, items: nullable{…flat}}}
//! string / binary       binary{indices: nullable{no_nulls{flat(64)}}, bytes: flat(8), null_adjustment}
//! low-cardinality utf8  dictionary{indices: …flat(8), items: binary{…}, n}   indices 1-based, 0 = null
//! Arrow dictionary      dictionary{indices: …flat(key bits), items: …, n}    indices 0-based
//! packed struct         packed_struct{inner: [nullable{no_nulls{flat(bits, buf 0)}} per child], buf 0}
//! ```
//!
//! A page of no values is `nullable{all_nulls}` (or an empty binary / dictionary), as
//! pylance writes for the items of lists that have none. Struct and list columns, whose
//! pages describe structure rather than values, are in [`super::v2_0_nested`].
//!
//! Binary indices are the **end** offsets of the values (no leading 0); a null value stores
//! `end + null_adjustment` (the writer uses total bytes + 1), so `v >= null_adjustment` means
//! null and `v - null_adjustment` is the real end. An Arrow dictionary column with null keys
//! gets one extra null dictionary item that the null rows point at. Whether a dictionary's
//! indices are 0- or 1-based depends on the column's Arrow type, not on the page; see
//! [`DictionaryIndices`].
//!
//! Older writers also produced `bitpacked` (a plain LSB-first bit stream, optionally
//! sign-extended), `bitpacked_for_non_neg` (FastLanes blocks of 1024 values, last block
//! zero-padded), `fixed_size_binary` (equal-length strings stored without offsets), `fsst`
//! (a `binary` of compressed strings plus a symbol table) and `constant`; they are decoded
//! here but never written.
//!
//! Decoding parses the protobuf tree once into a [`Node`] tree (the one dispatch point on
//! the `ArrayEncoding` oneof), checking every buffer reference, then decodes values and
//! validity bottom-up. Offsets, indices and lengths read from the file are bounds-checked:
//! damaged input is [`Error::Corrupt`], never a panic.
//!
//! Random access: flat, nullable flat, fixed-size lists of flat items and binary pages are
//! read by byte ranges ([`read_rows`]): a value is `bits/8` bytes at a computed position and
//! a validity bit is at a computed bit, and a binary value needs the index before it and its
//! own index, then its bytes — two small reads. Pages of other shapes (dictionaries, whose
//! items every row needs; compressed buffers, which decompress as a whole; bit-packing) are
//! fetched whole and decoded whole, but a dictionary only gathers the rows asked for.

// Row selections are slices of ranges; one range is the common case, not a typo.
#![allow(clippy::single_range_in_vec_init)]

use arrow_schema::DataType;

mod decode;
mod describe;
mod encode;
mod layout;
mod parse;
mod ranged;
#[cfg(test)]
mod tests;

pub use decode::{decode_page, decode_page_rows, decode_page_with};
pub use describe::describe;
pub(crate) use encode::no_nulls;
pub use encode::{encode_page, struct_validity_error};
pub use layout::{V20Layout, V20State};
pub use ranged::{read_rounds, read_rows, supports_ranged_reads, FetchRanges, PageSource};
// The parts share their crate-private items through this module.
use decode::*;
use describe::*;
use parse::*;

/// Most values (or constant bytes) one decode may produce without a buffer that bounds
/// them (all-null and constant nodes); guards against hostile row counts. Pages read by
/// byte ranges (all-null ones included) only ever allocate the rows asked for.
const MAX_UNBACKED_VALUES: u64 = 1 << 28;
/// Widest flat value accepted, in bits (a fixed-size binary of 512 MiB).
const MAX_FLAT_BITS: u64 = 1 << 32;
/// The writer dictionary-encodes a utf8 page of at least this many rows with fewer than
/// this many distinct values (pylance's default `LANCE_DICT_ENCODING_THRESHOLD`).
pub const AUTO_DICTIONARY_THRESHOLD: usize = 100;

const CTX: &str = "2.0 page";

/// How a `dictionary` encoding's indices refer to its items. It follows from the column's
/// Arrow type, not from anything stored in the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DictionaryIndices {
    /// Arrow dictionary columns: index `i` is item `i`; null rows point at a null item.
    ZeroBased,
    /// Plain utf8 columns the writer dictionary-encoded on its own: index 0 is null and
    /// index `i > 0` is item `i - 1`.
    OneBasedNullZero,
}

impl DictionaryIndices {
    /// The indexing of a column of Arrow type `dt`.
    pub fn for_type(dt: &DataType) -> Self {
        if matches!(dt, DataType::Dictionary(_, _)) {
            DictionaryIndices::ZeroBased
        } else {
            DictionaryIndices::OneBasedNullZero
        }
    }
}
