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
use arrow_array::{Array, ArrayRef, StructArray, UInt32Array, UInt64Array, UInt8Array};
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
const KIND_EXTERNAL: u8 = 3;

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

impl<'a> Bin<'a> {
    fn value(&self, i: usize) -> &'a [u8] {
        match self {
            Bin::Small(a) => a.value(i),
            Bin::Large(a) => a.value(i),
        }
    }

    fn is_valid(&self, i: usize) -> bool {
        match self {
            Bin::Small(a) => a.is_valid(i),
            Bin::Large(a) => a.is_valid(i),
        }
    }
}

/// What to do with blob values given as external URIs (pylance's `external_blob_mode` and
/// `allow_external_blob_outside_bases`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ExternalBlobs {
    /// Refuse them: pylance stores URIs inside registered bases relative to them (which
    /// lancepy does not write) and refuses others unless allowed.
    #[default]
    Refuse,
    /// Store the absolute URI (and slice) as the description (kind 3).
    Reference,
    /// Read the bytes and store them like any other value.
    Ingest,
}

/// The values given for a blob-v2 column, per row: bytes, an external URI with an optional
/// slice, or null. Either plain binary, or pylance's `blob_array` storage
/// `struct<data: large_binary, uri: utf8, position: uint64, size: uint64>` (`position` /
/// `size` optional).
struct BlobInput<'a> {
    values: &'a dyn Array,
    data: Option<Bin<'a>>,
    uri: Option<&'a arrow_array::StringArray>,
    position: Option<&'a UInt64Array>,
    size: Option<&'a UInt64Array>,
}

enum BlobValue<'a> {
    Null,
    Bytes(&'a [u8]),
    External { uri: &'a str, position: Option<u64>, size: Option<u64> },
}

impl<'a> BlobInput<'a> {
    fn new(values: &'a dyn Array) -> Result<Self> {
        let bin = |a: &'a dyn Array| match a.data_type() {
            DataType::Binary => Some(Bin::Small(a.as_binary::<i32>())),
            DataType::LargeBinary => Some(Bin::Large(a.as_binary::<i64>())),
            _ => None,
        };
        if let Some(data) = bin(values) {
            return Ok(BlobInput { values, data: Some(data), uri: None, position: None, size: None });
        }
        let refuse = || {
            Error::invalid_input(format!(
                "a blob column is written from binary or large_binary values, or from pylance's blob_array \
                 struct<data: large_binary, uri: utf8, position: uint64, size: uint64>; got {}",
                values.data_type()
            ))
        };
        let s = values.as_struct_opt().ok_or_else(refuse)?;
        let child = |name: &str| s.column_by_name(name).map(|c| c.as_ref());
        let data = match child("data") {
            Some(c) => Some(bin(c).ok_or_else(refuse)?),
            None => None,
        };
        let uri = match child("uri") {
            Some(c) => Some(c.as_string_opt::<i32>().ok_or_else(refuse)?),
            None => None,
        };
        let u64_child = |name: &str| -> Result<Option<&'a UInt64Array>> {
            match s.column_by_name(name) {
                Some(c) => Ok(Some(c.as_primitive_opt::<arrow_array::types::UInt64Type>().ok_or_else(refuse)?)),
                None => Ok(None),
            }
        };
        let (position, size) = (u64_child("position")?, u64_child("size")?);
        if data.is_none() && uri.is_none() {
            return Err(refuse());
        }
        Ok(BlobInput { values, data, uri, position, size })
    }

    fn get(&self, i: usize) -> BlobValue<'a> {
        if self.values.is_null(i) {
            return BlobValue::Null;
        }
        if let Some(d) = self.data.as_ref().filter(|d| d.is_valid(i)) {
            return BlobValue::Bytes(d.value(i));
        }
        if let Some(u) = self.uri.filter(|u| u.is_valid(i)) {
            let opt = |a: Option<&UInt64Array>| a.filter(|a| a.is_valid(i)).map(|a| a.value(i));
            return BlobValue::External { uri: u.value(i), position: opt(self.position), size: opt(self.size) };
        }
        BlobValue::Null
    }
}

/// The blob sidecars of one data file.
pub struct BlobSink {
    store: Store,
    /// `<data dir>/<data file stem>`, relative to the store.
    dir: String,
    next_id: u32,
    pack: Option<(u32, Box<dyn Writer>)>,
    external: ExternalBlobs,
    /// A pack file is closed once the next packed blob would take it past this size.
    pack_file_max: u64,
}

impl BlobSink {
    /// Sidecars of the data file at `data_file` (relative to `store`, ending in `.lance`).
    /// `pack_file_max`: see [`PACK_FILE_MAX`] (pylance's `blob_pack_file_size_threshold`).
    pub fn new(store: &Store, data_file: &str, external: ExternalBlobs, pack_file_max: u64) -> BlobSink {
        let dir = data_file.strip_suffix(".lance").unwrap_or(data_file).to_string();
        BlobSink { store: store.clone(), dir, next_id: 1, pack: None, external, pack_file_max }
    }

    fn create(&mut self, on_file: &mut dyn FnMut(&str)) -> Result<(u32, Box<dyn Writer>)> {
        let id = self.next_id;
        self.next_id =
            self.next_id.checked_add(1).ok_or_else(|| Error::invalid_input("more than 2^32 blob sidecars for one data file"))?;
        let rel = format!("{}/{}", self.dir, sidecar_name(id));
        on_file(&rel);
        Ok((id, open_writer_with(&self.store.child_uri(&rel), self.store.options())?))
    }

    /// The bytes of an external blob (its slice, or the whole object).
    fn ingest(&self, uri: &str, position: Option<u64>, size: Option<u64>) -> Result<arrow_buffer::Buffer> {
        let reader = crate::io::open_reader_with(uri, self.store.options())?;
        let start = position.unwrap_or(0);
        let end = match size {
            Some(n) => {
                start.checked_add(n).ok_or_else(|| Error::invalid_input(format!("external blob {uri}: slice overflows")))?
            }
            None => reader.size()?,
        };
        if end < start {
            return Err(Error::invalid_input(format!("external blob {uri}: position {start} is past its end")));
        }
        reader.read_range(start..end)
    }

    /// Stores one value's bytes; returns its (kind, position, blob id).
    fn store_bytes(&mut self, bytes: &[u8], file: &mut FileWriter, on_file: &mut dyn FnMut(&str)) -> Result<(u8, u64, u32)> {
        if bytes.len() <= INLINE_MAX {
            return Ok((KIND_INLINE, file.write_inline_bytes(bytes)?, 0));
        }
        if bytes.len() <= PACKED_MAX {
            if self.pack.as_ref().is_some_and(|(_, w)| w.position() + bytes.len() as u64 > self.pack_file_max) {
                let (_, w) = self.pack.take().expect("pack open");
                w.finish()?;
            }
            if self.pack.is_none() {
                self.pack = Some(self.create(on_file)?);
            }
            let (id, w) = self.pack.as_mut().expect("pack open");
            let position = w.position();
            w.write_all(bytes)?;
            return Ok((KIND_PACKED, position, *id));
        }
        let (id, mut w) = self.create(on_file)?;
        w.write_all(bytes)?;
        w.finish()?;
        Ok((KIND_DEDICATED, 0, id))
    }

    /// Stores the values of `values` (see [`BlobInput`]) and returns their descriptions;
    /// inline bytes go to `file`.
    pub fn write_column(&mut self, values: &dyn Array, file: &mut FileWriter, on_file: &mut dyn FnMut(&str)) -> Result<ArrayRef> {
        let input = BlobInput::new(values)?;
        let n = values.len();
        let (mut kind, mut position, mut size, mut blob_id) =
            (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        let mut uris = arrow_array::builder::StringBuilder::with_capacity(n, 0);
        let mut valid = Vec::with_capacity(n);
        for i in 0..n {
            crate::interrupt::check()?;
            let (k, p, len, id) = match input.get(i) {
                BlobValue::Null => {
                    valid.push(false);
                    (KIND_INLINE, 0, 0, 0)
                }
                BlobValue::Bytes(bytes) => {
                    valid.push(true);
                    let (k, p, id) = self.store_bytes(bytes, file, on_file)?;
                    (k, p, bytes.len() as u64, id)
                }
                BlobValue::External { uri, position: pos, size: len } => {
                    valid.push(true);
                    match self.external {
                        ExternalBlobs::Refuse => {
                            return Err(Error::invalid_input(format!(
                                "external blob URI {uri:?}: lancepy stores external blobs as absolute URIs only; pass \
                                 allow_external_blob_outside_bases=True to store it so, or external_blob_mode='ingest' \
                                 to copy its bytes into the dataset"
                            )))
                        }
                        ExternalBlobs::Reference => {
                            uris.append_value(uri);
                            kind.push(KIND_EXTERNAL);
                            position.push(pos.unwrap_or(0));
                            size.push(len.unwrap_or(0));
                            blob_id.push(0);
                            continue;
                        }
                        ExternalBlobs::Ingest => {
                            let bytes = self.ingest(uri, pos, len)?;
                            let (k, p, id) = self.store_bytes(bytes.as_slice(), file, on_file)?;
                            (k, p, bytes.len() as u64, id)
                        }
                    }
                }
            };
            uris.append_value("");
            kind.push(k);
            position.push(p);
            size.push(len);
            blob_id.push(id);
        }
        let DataType::Struct(fields) = crate::schema::blob_v2_description_type() else {
            unreachable!("the description type is a struct")
        };
        let columns: Vec<ArrayRef> = vec![
            Arc::new(UInt8Array::from(kind)),
            Arc::new(UInt64Array::from(position)),
            Arc::new(UInt64Array::from(size)),
            Arc::new(UInt32Array::from(blob_id)),
            Arc::new(uris.finish()),
        ];
        let nulls = NullBuffer::from(valid);
        let nulls = (nulls.null_count() > 0).then_some(nulls);
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
