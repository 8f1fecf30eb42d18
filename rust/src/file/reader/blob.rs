//! Legacy (2.0 / 2.1) blob columns: reads return their `(position, size)` descriptions, which
//! are resolved here to the bytes they describe.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef, LargeBinaryArray, RecordBatch};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer};
use arrow_schema::{Field, Schema};

use super::read::decoded_batch;
use super::FileReader;
use crate::error::{Error, Result};
use crate::schema::LanceField;

impl FileReader {
    /// The field as its pages store it (a legacy blob column: its descriptions).
    pub(super) fn stored_field(&self, field: usize) -> &LanceField {
        self.stored[field].as_ref().unwrap_or(&self.schema.fields[field])
    }

    /// Whether top-level field `field` is a legacy (2.0 / 2.1) blob column, which reads
    /// return as `(position, size)` descriptions.
    pub fn is_legacy_blob(&self, field: usize) -> bool {
        self.stored.get(field).is_some_and(Option::is_some)
    }

    /// `batch` (a read of `fields`) with each legacy blob column's descriptions replaced by
    /// the values they describe, fetched with one coalescing read.
    pub fn blob_values(&self, batch: RecordBatch, fields: &[usize]) -> Result<RecordBatch> {
        if !fields.iter().any(|&f| self.is_legacy_blob(f)) {
            return Ok(batch);
        }
        let mut columns = batch.columns().to_vec();
        let mut schema_fields: Vec<Field> = batch.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
        for (pos, &f) in fields.iter().enumerate() {
            if self.is_legacy_blob(f) {
                columns[pos] = self.blob_bytes(columns[pos].as_ref())?;
                schema_fields[pos] = self.arrow_schema.field(f).clone();
            }
        }
        let schema = Arc::new(Schema::new_with_metadata(schema_fields, batch.schema().metadata().clone()));
        decoded_batch(schema, columns, batch.num_rows(), &self.path)
    }

    /// The values of legacy blob descriptions (`struct<position: uint64, size: uint64>`) of
    /// this file, as large binary: null descriptions, and 2.0's null marker (size 0 at a
    /// nonzero position), are null; size 0 is an empty value.
    pub fn blob_bytes(&self, descriptions: &dyn Array) -> Result<ArrayRef> {
        let corrupt =
            || Error::corrupt(format!("{}: blob descriptions are not struct<position: uint64, size: uint64>", self.path));
        let s = descriptions.as_struct_opt().ok_or_else(corrupt)?;
        let (Some(pos), Some(size)) = (s.column_by_name("position"), s.column_by_name("size")) else { return Err(corrupt()) };
        let (pos, size) = (
            pos.as_primitive_opt::<UInt64Type>().ok_or_else(corrupt)?,
            size.as_primitive_opt::<UInt64Type>().ok_or_else(corrupt)?,
        );
        let n = s.len();
        let mut valid = Vec::with_capacity(n);
        let mut ranges = Vec::new();
        for i in 0..n {
            let (p, len) = (pos.value(i), size.value(i));
            let ok = s.is_valid(i) && pos.is_valid(i) && size.is_valid(i) && !(len == 0 && p != 0);
            valid.push(ok);
            if ok && len > 0 {
                if p.checked_add(len).is_none_or(|e| e > self.file_size) {
                    return Err(Error::corrupt(format!("{}: blob at {p}..+{len} lies outside the file", self.path)));
                }
                ranges.push(p..p + len);
            }
        }
        // Each value is stored once: descriptions that ask for more bytes than the file has
        // (ranges repeated by a hostile file) would make the output outgrow its input.
        let asked: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        if asked > self.file_size {
            return Err(Error::corrupt(format!(
                "{}: blob descriptions ask for {asked} bytes of a {}-byte file",
                self.path, self.file_size
            )));
        }
        let fetched = if ranges.is_empty() { Vec::new() } else { self.io.read_ranges(&ranges)? };
        let total: usize = fetched.iter().map(|b| b.len()).sum();
        let mut data = Vec::with_capacity(total);
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0i64);
        let mut next = fetched.iter();
        for i in 0..n {
            if valid[i] && size.value(i) > 0 {
                data.extend_from_slice(next.next().ok_or_else(|| Error::Internal("a blob was not fetched".into()))?.as_slice());
            }
            offsets.push(data.len() as i64);
        }
        let nulls = NullBuffer::from(valid);
        let out = LargeBinaryArray::try_new(
            OffsetBuffer::new(offsets.into()),
            Buffer::from_vec(data),
            (nulls.null_count() > 0).then_some(nulls),
        )?;
        Ok(Arc::new(out))
    }
}
