//! The legacy (v1) Lance data file: what pylance writes for `data_storage_version="legacy"`
//! (footer version 0.2; datasets of these files report storage version "0.1").
//!
//! ```text
//! [pages, in the order written: per batch, per field (pre-order, children after parents)]
//! [page table: i64 (position, length) for every field id min..=max, for every batch]
//! [dictionary values of dictionary fields (plain or var-binary pages)]
//! [u32 length + table `Manifest` holding only the schema (fields with encodings and
//!  dictionary positions) and `data_format`]
//! [u32 length + file `Metadata` (batch offsets, page table and manifest positions)]
//! [footer: u64 metadata position, u16 major = 0, u16 minor = 2, "LANC"]
//! ```
//!
//! Pages (one per field and batch; the page table gives a page's position and its number of
//! values):
//!
//! * fixed-width values (primitives, booleans as bits, fixed-size binary, fixed-size lists
//!   of those): the values back to back, nulls not recorded (a null reads as its slot);
//! * strings and binaries: the bytes, then `n + 1` i64 absolute file positions; the page
//!   position is that of the positions. An empty value of a nullable field reads as null;
//! * lists: `n + 1` offsets (i32, or i64 for large lists) from 0 into the item field's page
//!   of the same batch (length `n + 1`); null lists are empty lists;
//! * structs: no page of their own, only their children's;
//! * dictionaries: the keys as fixed-width values; the values once per file, located by
//!   the schema's `Field.dictionary`;
//! * null columns: no bytes, only the length.

mod read;
mod write;

pub use read::LegacyFile;
pub use write::{encode_dictionary_values, LegacyWriter, DEFAULT_ROWS_PER_BATCH};

/// Size of the legacy footer.
pub const FOOTER_LEN: usize = 16;
/// The `(major, minor)` version pylance 14 writes in legacy footers.
pub const FOOTER_VERSION: (u16, u16) = (0, 2);

/// Whether `tail` (the last bytes of a file, at least [`FOOTER_LEN`] of them) ends in a
/// legacy footer.
pub fn is_legacy_footer(tail: &[u8]) -> bool {
    if tail.len() < FOOTER_LEN || &tail[tail.len() - 4..] != crate::file::container::MAGIC {
        return false;
    }
    let n = tail.len();
    let major = u16::from_le_bytes([tail[n - 8], tail[n - 7]]);
    let minor = u16::from_le_bytes([tail[n - 6], tail[n - 5]]);
    major == 0 && (minor == 1 || minor == 2)
}

#[cfg(test)]
mod tests;
