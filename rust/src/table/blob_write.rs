//! Writing blob-v2 columns (file version 2.2) as pylance 14 writes them.
//!
//! A blob-v2 column's values (Arrow `binary` / `large_binary`) are not stored in the data
//! file's pages: each row gets a *description* `struct<kind: uint8, position: uint64, size:
//! uint64, blob_id: uint32, blob_uri: utf8>` (one packed-struct column), and the bytes go
//! where the size sends them:
//!
//! * up to [`INLINE_MAX`] bytes: *inline*, in the data file itself, 64-byte aligned, before
//!   or between its pages (kind 0, `position` = absolute offset in the data file);
//! * up to [`PACKED_MAX`]: *packed* one after another into a shared sidecar
//!   `<data dir>/<data file stem>/<blob_id>.blob` (kind 1, `position` within it);
//! * larger: a *dedicated* sidecar of its own (kind 2, `position` 0).
//!
//! Sidecar ids count from 1 in the order they are first needed (the pack file takes the
//! next id when its first blob arrives); a file name is the id's 32 bits, least significant
//! first, as `0`/`1` characters. A null value has a null description; an empty one is
//! inline with size 0. Bytes are written as they arrive: memory holds one batch.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, StringArray, StructArray, UInt32Array, UInt64Array, UInt8Array};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Fields};

use crate::error::{Error, Result};
use crate::file::FileWriter;
use crate::io::{open_writer_with, Store, Writer};

/// Largest blob stored inline in the data file (pylance 14's threshold).
pub const INLINE_MAX: usize = 64 * 1024;
/// Largest blob packed into the shared sidecar (pylance 14's threshold); larger ones get a
/// sidecar of their own.
pub const PACKED_MAX: usize = 4 * 1024 * 1024;
/// Size at which a pack file is closed and the next packed blob starts a new one.
pub const PACK_FILE_MAX: u64 = 1 << 30;

const KIND_INLINE: u8 = 0;
const KIND_PACKED: u8 = 1;
const KIND_DEDICATED: u8 = 2;

/// Name of sidecar `id`: its 32 bits, least significant first, then `.blob`.
pub fn sidecar_name(id: u32) -> String {
    let mut s: String = (0..32).map(|i| if id >> i & 1 == 1 { '1' } else { '0' }).collect();
    s.push_str(".blob");
    s
}

/// A binary array of either offset width.
enum Bin<'a> {
    Small(&'a arrow_array::BinaryArray),
    Large(&'a arrow_array::LargeBinaryArray),
}

impl Bin<'_> {
    fn value(&self, i: usize) -> &[u8] {
        match self {
            Bin::Small(a) => a.value(i),
            Bin::Large(a) => a.value(i),
        }
    }
}

/// The blob sidecars of one data file.
pub struct BlobSink {
    store: Store,
    /// `<data dir>/<data file stem>`, relative to the store.
    dir: String,
    next_id: u32,
    pack: Option<(u32, Box<dyn Writer>)>,
}

impl BlobSink {
    /// Sidecars of the data file at `data_file` (relative to `store`, ending in `.lance`).
    pub fn new(store: &Store, data_file: &str) -> BlobSink {
        let dir = data_file.strip_suffix(".lance").unwrap_or(data_file).to_string();
        BlobSink { store: store.clone(), dir, next_id: 1, pack: None }
    }

    fn create(&mut self, on_file: &mut dyn FnMut(&str)) -> Result<(u32, Box<dyn Writer>)> {
        let id = self.next_id;
        self.next_id =
            self.next_id.checked_add(1).ok_or_else(|| Error::invalid_input("more than 2^32 blob sidecars for one data file"))?;
        let rel = format!("{}/{}", self.dir, sidecar_name(id));
        on_file(&rel);
        Ok((id, open_writer_with(&self.store.child_uri(&rel), self.store.options())?))
    }

    /// Stores the values of `values` (binary or large binary) and returns their
    /// descriptions; inline bytes go to `file`.
    pub fn write_column(&mut self, values: &dyn Array, file: &mut FileWriter, on_file: &mut dyn FnMut(&str)) -> Result<ArrayRef> {
        let n = values.len();
        let get = match values.data_type() {
            DataType::Binary => Bin::Small(values.as_binary::<i32>()),
            DataType::LargeBinary => Bin::Large(values.as_binary::<i64>()),
            other => {
                return Err(Error::not_supported(format!(
                    "writing {other} values to a blob column: lancepy writes blob columns from binary or large_binary \
                     values (rewriting stored blob descriptions, e.g. by compaction or update, is not supported)"
                )))
            }
        };
        let (mut kind, mut position, mut size, mut blob_id) =
            (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 0..n {
            crate::interrupt::check()?;
            if values.is_null(i) {
                kind.push(KIND_INLINE);
                position.push(0);
                size.push(0);
                blob_id.push(0);
                continue;
            }
            let bytes = get.value(i);
            size.push(bytes.len() as u64);
            if bytes.len() <= INLINE_MAX {
                kind.push(KIND_INLINE);
                position.push(file.write_inline_bytes(bytes)?);
                blob_id.push(0);
            } else if bytes.len() <= PACKED_MAX {
                if self.pack.as_ref().is_some_and(|(_, w)| w.position() + bytes.len() as u64 > PACK_FILE_MAX) {
                    let (_, w) = self.pack.take().expect("pack open");
                    w.finish()?;
                }
                if self.pack.is_none() {
                    self.pack = Some(self.create(on_file)?);
                }
                let (id, w) = self.pack.as_mut().expect("pack open");
                kind.push(KIND_PACKED);
                position.push(w.position());
                blob_id.push(*id);
                w.write_all(bytes)?;
            } else {
                let (id, mut w) = self.create(on_file)?;
                w.write_all(bytes)?;
                w.finish()?;
                kind.push(KIND_DEDICATED);
                position.push(0);
                blob_id.push(id);
            }
        }
        let DataType::Struct(fields) = crate::schema::blob_v2_description_type() else {
            unreachable!("the description type is a struct")
        };
        let columns: Vec<ArrayRef> = vec![
            Arc::new(UInt8Array::from(kind)),
            Arc::new(UInt64Array::from(position)),
            Arc::new(UInt64Array::from(size)),
            Arc::new(UInt32Array::from(blob_id)),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n("", n))),
        ];
        let nulls = values.logical_nulls().filter(|b: &NullBuffer| b.null_count() > 0);
        let out = StructArray::try_new(Fields::from(fields.to_vec()), columns, nulls)
            .map_err(|e| Error::Internal(format!("blob descriptions: {e}")))?;
        Ok(Arc::new(out))
    }

    /// Closes the pack file, if any.
    pub fn finish(&mut self) -> Result<()> {
        if let Some((_, w)) = self.pack.take() {
            w.finish()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sidecar_names_are_bits_least_significant_first() {
        assert_eq!(sidecar_name(1), format!("1{}.blob", "0".repeat(31)));
        assert_eq!(sidecar_name(6), format!("011{}.blob", "0".repeat(29)));
    }
}
