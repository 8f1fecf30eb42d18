//! Blob columns of a snapshot: the values that blob descriptions (what a read returns for a
//! blob column) stand for, at row addresses.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};

use super::TableSnapshot;
use crate::error::{Error, Result};

impl TableSnapshot {
    /// The values of blob column `column` described by `descriptions` (what a read returns
    /// for it) at row addresses `addresses`, as large binary, each file's byte ranges fetched
    /// with one coalescing read. Legacy (2.0 / 2.1) values are in the row's data file;
    /// blob-v2 values inline in it or in its sidecars. External blobs are not supported.
    pub fn blob_values(&self, column: &str, addresses: &[u64], descriptions: &dyn Array) -> Result<ArrayRef> {
        use arrow_array::cast::AsArray;
        use arrow_array::types::{UInt32Type, UInt64Type, UInt8Type};
        let fidx = self.projection(Some(&[column.to_string()]))?[0];
        let field = &self.schema.fields[fidx];
        let (legacy, v2) = (field.is_legacy_blob(), field.is_blob_v2());
        if !legacy && !v2 {
            return Err(Error::invalid_input(format!("column {column:?} is not a blob column")));
        }
        let bad = || Error::invalid_input(format!("the descriptions of blob column {column:?} do not have its description type"));
        let s = descriptions.as_struct_opt().ok_or_else(bad)?;
        if s.len() != addresses.len() {
            return Err(Error::invalid_input(format!("{} descriptions for {} row addresses", s.len(), addresses.len())));
        }
        let u64_col =
            |name: &str| s.column_by_name(name).and_then(|c| c.as_primitive_opt::<UInt64Type>().cloned()).ok_or_else(bad);
        let (pos, size) = (u64_col("position")?, u64_col("size")?);
        let kinds = if v2 {
            Some(s.column_by_name("kind").and_then(|c| c.as_primitive_opt::<UInt8Type>().cloned()).ok_or_else(bad)?)
        } else {
            None
        };
        let ids = if v2 {
            Some(s.column_by_name("blob_id").and_then(|c| c.as_primitive_opt::<UInt32Type>().cloned()).ok_or_else(bad)?)
        } else {
            None
        };
        // Where each row's bytes are: (object, range), or None for a null value.
        let blob_uris = s.column_by_name("blob_uri").and_then(|c| c.as_string_opt::<i32>().cloned());
        let mut uris: Vec<String> = Vec::new();
        let mut uri_index: HashMap<String, usize> = HashMap::new();
        let mut external_uris: std::collections::HashSet<usize> = std::collections::HashSet::new();
        // (an external blob without a slice is all of its object: its end is known once it
        // is opened, and marked `u64::MAX` until then)
        let mut wanted: Vec<Option<(usize, Range<u64>)>> = Vec::with_capacity(s.len());
        for (i, &addr) in addresses.iter().enumerate() {
            let (p, n) = (pos.value(i), size.value(i));
            let null = s.is_null(i) || pos.is_null(i) || size.is_null(i) || (legacy && n == 0 && p != 0);
            let external = kinds.as_ref().is_some_and(|k| k.value(i) == 3);
            if null || (n == 0 && !external) {
                wanted.push(if null { None } else { Some((usize::MAX, 0..0)) });
                continue;
            }
            let frag = self.fragment_meta(self.fragment_index(addr >> 32)?);
            let (file_idx, _, _) = self.locate(frag, field).ok_or_else(|| {
                Error::invalid_input(format!("row address {addr}: its fragment holds no data for column {column:?}"))
            })?;
            let data_uri = self.bases.data_file_uri(&frag.files[file_idx])?;
            let uri = match kinds.as_ref().map(|k| k.value(i)) {
                None | Some(0) => data_uri,
                Some(1 | 2) => {
                    let stem = data_uri.strip_suffix(".lance").unwrap_or(&data_uri);
                    format!("{stem}/{}", crate::table::blob_write::sidecar_name(ids.as_ref().expect("v2").value(i)))
                }
                Some(3) => {
                    let uri = blob_uris.as_ref().filter(|u| u.is_valid(i)).map(|u| u.value(i)).unwrap_or("");
                    if !(uri.contains("://") || uri.starts_with('/')) {
                        return Err(Error::not_supported(format!(
                            "row address {addr}: external blob {uri:?} is not an absolute URI (base-relative external \
                             blobs are not supported)"
                        )));
                    }
                    uri.to_string()
                }
                Some(k) => return Err(Error::corrupt(format!("row address {addr}: unknown blob kind {k}"))),
            };
            let end = if external && p == 0 && n == 0 {
                u64::MAX
            } else {
                p.checked_add(n).ok_or_else(|| Error::corrupt(format!("row address {addr}: blob at {p}..+{n} overflows")))?
            };
            let next = uris.len();
            let u = *uri_index.entry(uri.clone()).or_insert(next);
            if u == next {
                uris.push(uri);
            }
            if external {
                external_uris.insert(u);
            }
            wanted.push(Some((u, p..end)));
        }
        let mut fetched: Vec<std::vec::IntoIter<arrow_buffer::Buffer>> = Vec::with_capacity(uris.len());
        let mut total = 0usize;
        for (u, uri) in uris.iter().enumerate() {
            let reader = self.store.reader_for_uri(uri)?;
            let size = reader.size()?;
            let ranges: Vec<Range<u64>> = wanted
                .iter()
                .flatten()
                .filter(|(w, _)| *w == u)
                .map(|(_, r)| if r.end == u64::MAX { 0..size } else { r.clone() })
                .collect();
            // Values stored in the dataset are stored once: more bytes asked of one file than it
            // has means descriptions repeated by a hostile file (external objects may be shared).
            let asked: u64 = ranges.iter().map(|r| r.end - r.start).sum();
            if asked > size && !external_uris.contains(&u) {
                return Err(Error::corrupt(format!("{uri}: blob descriptions ask for {asked} bytes of a {size}-byte file")));
            }
            if let Some(r) = ranges.iter().find(|r| r.end > size) {
                return Err(Error::corrupt(format!(
                    "{uri}: blob at {}..{} lies outside the object ({size} bytes)",
                    r.start, r.end
                )));
            }
            let bufs = reader.read_ranges(&ranges)?;
            total += bufs.iter().map(|b| b.len()).sum::<usize>();
            fetched.push(bufs.into_iter());
        }
        let mut builder = arrow_array::builder::LargeBinaryBuilder::with_capacity(s.len(), total);
        for w in &wanted {
            match w {
                None => builder.append_null(),
                Some((usize::MAX, _)) => builder.append_value(b""),
                Some((u, _)) => {
                    let b = fetched[*u].next().ok_or_else(|| Error::Internal("a blob was not fetched".into()))?;
                    builder.append_value(b.as_slice());
                }
            }
        }
        Ok(Arc::new(builder.finish()))
    }
}
