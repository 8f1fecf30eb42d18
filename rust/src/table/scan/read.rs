//! Reading fragments: each projected field found in the data file that holds it (NULLs where
//! none does), deleted rows dropped, `_rowid` / `_rowaddr` appended; and scans planned as
//! tasks (physical row ranges of fragments) and run in parallel.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, RecordBatch, StructArray, UInt64Array};
use arrow_schema::{DataType, Field, Fields};

use super::{Rows, ScanOptions, ScanTask, TableSnapshot, TOMBSTONE_FIELD_ID};
use crate::error::{Error, Result};
use crate::file::reader::{decoded_batch, fixed_byte_width};
use crate::file::LanceField;
use crate::format::tablepb;

/// See [`TableSnapshot::read_unit_rows`].
pub const READ_UNIT_BYTES: u64 = 8 << 20;
/// See [`TableSnapshot::read_unit_rows`].
pub const READ_UNIT_ROWS: u64 = 64 * 1024;

impl TableSnapshot {
    /// Where `field`'s data is in fragment `frag`: (data file index, the file column its
    /// first stored field starts at if recorded, that field's id).
    pub(super) fn locate(&self, frag: &tablepb::DataFragment, field: &LanceField) -> Option<(usize, Option<usize>, i32)> {
        let mut ids = Vec::new();
        field.walk(&mut ids);
        for f in ids {
            for (fi, file) in frag.files.iter().enumerate().rev() {
                if let Some(pos) = file.fields.iter().position(|&id| id == f.id && id != TOMBSTONE_FIELD_ID) {
                    let col = file.column_indices.get(pos).and_then(|&c| usize::try_from(c).ok());
                    return Some((fi, col, f.id));
                }
            }
        }
        None
    }

    /// Physical rows `rows` of fragment `i` (see [`TableSnapshot::read_fragment`]).
    pub(in crate::table) fn read_fragment_range(
        &self,
        i: usize,
        projection: &[usize],
        rows: Range<u64>,
        opts: ScanOptions,
    ) -> Result<RecordBatch> {
        self.read_fragment(i, projection, Rows::Range(rows), opts)
    }

    pub(super) fn read_fragment(&self, i: usize, projection: &[usize], rows: Rows<'_>, opts: ScanOptions) -> Result<RecordBatch> {
        let frag = self.fragment_meta(i);
        let phys = self.physical_rows(i)?;
        let last = match &rows {
            Rows::Range(r) => r.end,
            Rows::Offsets(o) => o.last().map(|l| l + 1).unwrap_or(0),
        };
        if last > phys {
            return Err(Error::IndexOutOfRange(format!(
                "row {} is past the end of fragment {} ({phys} rows)",
                last - 1,
                frag.id
            )));
        }
        let n = rows.len();
        let mut columns: Vec<Option<ArrayRef>> = vec![None; projection.len()];
        // Group the projected fields by data file.
        let mut by_file: Vec<(usize, Vec<(usize, Option<usize>, i32)>)> = Vec::new();
        for (pos, &fidx) in projection.iter().enumerate() {
            if let Some((file, col, id)) = self.locate(frag, &self.schema.fields[fidx]) {
                match by_file.iter_mut().find(|(f, _)| *f == file) {
                    Some((_, v)) => v.push((pos, col, id)),
                    None => by_file.push((file, vec![(pos, col, id)])),
                }
            }
        }
        for (file_idx, wanted) in by_file {
            crate::interrupt::check()?;
            let reader = self.open_file_at(i, file_idx, opts.admission)?;
            let mut file_fields = Vec::with_capacity(wanted.len());
            for &(_, col, id) in &wanted {
                let f = col
                    .and_then(|c| reader.field_starting_at_column(c))
                    .or_else(|| reader.field_with_id(id))
                    .or_else(|| reader.field_containing_id(id));
                file_fields.push(f.ok_or_else(|| {
                    Error::corrupt(format!("{}: no column for field id {id} (column index {col:?})", reader.path()))
                })?);
            }
            if reader.num_rows() < phys {
                return Err(Error::corrupt(format!(
                    "{}: has {} rows but fragment {} has {phys}",
                    reader.path(),
                    reader.num_rows(),
                    frag.id
                )));
            }
            let arrays = match &rows {
                Rows::Range(r) => reader.read_range_columns(r.start, r.end - r.start, &file_fields)?,
                Rows::Offsets(o) => reader.take(o, &file_fields)?.columns().to_vec(),
            };
            for (((pos, _, _), array), &ff) in wanted.iter().zip(arrays).zip(&file_fields) {
                let stored = reader.lance_schema().fields.get(ff);
                let want = &self.schema.fields[projection[*pos]];
                columns[*pos] = Some(match stored {
                    Some(stored) => with_struct_children_of(array, stored, want)?,
                    None => array,
                });
            }
        }
        let schema = self.output_schema(projection, opts);
        let mut arrays = Vec::with_capacity(projection.len() + 2);
        for (column, field) in columns.into_iter().zip(schema.fields()) {
            let array = match column {
                Some(a) => conform(a, field).map_err(|e| match e {
                    Error::Corrupt(m) => Error::corrupt(format!("fragment {}: {m}", frag.id)),
                    e => e,
                })?,
                None => {
                    if !field.is_nullable() {
                        return Err(Error::corrupt(format!(
                            "fragment {} has no data for the non-nullable column {:?}",
                            frag.id,
                            field.name()
                        )));
                    }
                    new_null_array(field.data_type(), n)
                }
            };
            arrays.push(array);
        }
        let mut offsets: Option<Vec<u64>> = None;
        // Drop deleted rows.
        if !opts.include_deleted {
            if let Some(dv) = self.deletions(i)? {
                let offs = rows.offsets();
                let keep: BooleanArray = offs.iter().map(|&o| Some(!dv.contains(o as u32))).collect();
                if keep.false_count() > 0 {
                    arrays = arrays
                        .iter()
                        .map(|a| arrow_select::filter::filter(a.as_ref(), &keep).map_err(Error::from))
                        .collect::<Result<_>>()?;
                    offsets = Some(offs.into_iter().filter(|&o| !dv.contains(o as u32)).collect());
                } else {
                    offsets = Some(offs);
                }
            }
        }
        let num_out = offsets.as_ref().map(|o| o.len()).unwrap_or(n);
        if opts.with_row_id || opts.with_row_address {
            let offs = offsets.unwrap_or_else(|| rows.offsets());
            // Deleted rows read anyway have neither a row id nor an address (null, as in pylance).
            let deleted = if opts.include_deleted { self.deletions(i)? } else { None };
            let deleted = deleted.filter(|dv| offs.iter().any(|&o| dv.contains(o as u32)));
            let unless_deleted = |a: UInt64Array| -> UInt64Array {
                match &deleted {
                    Some(dv) => a.iter().zip(&offs).map(|(v, &o)| v.filter(|_| !dv.contains(o as u32))).collect(),
                    None => a,
                }
            };
            if opts.with_row_id {
                let ids: UInt64Array = if self.stable_row_ids {
                    let seq = self.row_ids(i)?;
                    offs.iter().map(|&o| seq[o as usize]).collect()
                } else {
                    offs.iter().map(|&o| (frag.id << 32) | o).collect()
                };
                arrays.push(Arc::new(unless_deleted(ids)));
            }
            if opts.with_row_address {
                arrays.push(Arc::new(unless_deleted(offs.iter().map(|&o| (frag.id << 32) | o).collect())));
            }
        }
        decoded_batch(schema, arrays, num_out, format_args!("fragment {}", frag.id))
    }

    /// Plans a scan of `fragments` (indices; `None` = all) skipping `offset` live rows and
    /// returning at most `limit`, in tasks of at most `batch_rows` physical rows.
    pub fn plan_scan(
        &self,
        fragments: Option<&[usize]>,
        offset: u64,
        limit: Option<u64>,
        batch_rows: u64,
        opts: ScanOptions,
    ) -> Result<Vec<ScanTask>> {
        let batch_rows = batch_rows.max(1);
        let all: Vec<usize> = (0..self.fragments.len()).collect();
        let order = fragments.unwrap_or(&all);
        let mut skip = offset;
        let mut remaining = limit.unwrap_or(u64::MAX);
        let mut tasks = Vec::new();
        for &i in order {
            if remaining == 0 {
                break;
            }
            if i >= self.fragments.len() {
                return Err(Error::IndexOutOfRange(format!("fragment index {i}")));
            }
            let phys = self.physical_rows(i)?;
            let dv = if opts.include_deleted { None } else { self.deletions(i)? };
            let live = match &dv {
                Some(d) => phys - d.range_cardinality(0..phys.min(u32::MAX as u64 + 1) as u32).min(phys),
                None => phys,
            };
            if skip >= live {
                skip -= live;
                continue;
            }
            let start = self.nth_live(i, skip, dv.as_deref())?;
            skip = 0;
            let mut pos = start;
            while pos < phys && remaining > 0 {
                let mut end = (pos + batch_rows).min(phys);
                let live_in = match &dv {
                    Some(d) => (end - pos) - d.range_cardinality(pos as u32..end as u32),
                    None => end - pos,
                };
                if live_in > remaining {
                    // Cut right after the last live row that is still wanted.
                    let before = match &dv {
                        Some(d) => pos - d.range_cardinality(0..pos as u32),
                        None => pos,
                    };
                    end = self.nth_live(i, before + remaining - 1, dv.as_deref())? + 1;
                    remaining = 0;
                } else {
                    remaining -= live_in;
                }
                tasks.push(ScanTask { fragment: i, rows: pos..end });
                pos = end;
            }
        }
        Ok(tasks)
    }

    /// Physical rows a streaming scan handing out batches of `batch_rows` should read at a
    /// time: a multiple of `batch_rows` of about [`READ_UNIT_BYTES`] of the projected columns
    /// (at most [`READ_UNIT_ROWS`] rows). A scan read batch by batch fetched each batch's
    /// bytes separately: small batches re-read the mini-block chunks they share (1.5× the
    /// bytes at 1,000 rows a batch) and made one request per column per batch (one GET
    /// each on object storage). The stream cuts what it reads back into `batch_rows`.
    pub fn read_unit_rows(&self, projection: &[usize], batch_rows: u64) -> u64 {
        let batch_rows = batch_rows.max(1);
        if batch_rows >= READ_UNIT_ROWS {
            return batch_rows;
        }
        // Bytes of a row: of the projected values when all are fixed-width; else of the
        // widest fragment's stored rows, every column counted (images or documents can make
        // a row megabytes); unknown (no recorded file sizes): read batch by batch.
        let fixed: Option<u64> = projection
            .iter()
            .map(|&f| fixed_byte_width(self.schema.fields[f].output_arrow().data_type()).map(|w| w.max(1) as u64))
            .sum();
        let Some(row_bytes) = fixed.or_else(|| self.stored_row_bytes()) else { return batch_rows };
        let rows = READ_UNIT_ROWS.min(READ_UNIT_BYTES / row_bytes.max(1));
        batch_rows * (rows / batch_rows).max(1)
    }

    /// The largest bytes per row of any fragment's data files (`None` when a file's size is
    /// not recorded).
    fn stored_row_bytes(&self) -> Option<u64> {
        let mut widest = 1u64;
        for frag in &self.manifest.fragments {
            let mut bytes = 0u64;
            for file in &frag.files {
                if file.file_size_bytes == 0 {
                    return None;
                }
                bytes = bytes.saturating_add(file.file_size_bytes);
            }
            if frag.physical_rows > 0 {
                widest = widest.max(bytes.div_ceil(frag.physical_rows));
            }
        }
        Some(widest)
    }

    /// Runs one scan task.
    pub fn run_task(&self, task: &ScanTask, projection: &[usize], opts: ScanOptions) -> Result<RecordBatch> {
        self.read_fragment(task.fragment, projection, Rows::Range(task.rows.clone()), opts)
    }

    /// Runs tasks in parallel; batches come back in task order.
    pub fn run_tasks(&self, tasks: Vec<ScanTask>, projection: &[usize], opts: ScanOptions) -> Result<Vec<RecordBatch>> {
        self.map_files(tasks, true, |t| self.run_task(&t, projection, opts)).into_iter().collect()
    }
}

/// `array` (a column stored as `stored`) with the struct children of `want`, matched by field
/// id at every struct level: children the file does not hold are NULL, children the schema no
/// longer has are left out. pylance 14 writes a struct appended without some of its (nullable)
/// children as a file of just the children given (the data file lists only their ids), and
/// keeps the files of a struct whose child was dropped. Any other column is returned as it is
/// (for [`conform`] to check).
fn with_struct_children_of(array: ArrayRef, stored: &LanceField, want: &LanceField) -> Result<ArrayRef> {
    let (Some(s), DataType::Struct(_)) = (array.as_any().downcast_ref::<StructArray>(), &want.data_type) else {
        return Ok(array);
    };
    if want.is_packed_struct()
        || stored.is_packed_struct()
        || s.num_columns() != stored.children.len()
        || same_struct_ids(stored, want)
    {
        return Ok(array); // (the usual case: nothing to rebuild)
    }
    let mut changed = !stored.children.iter().map(|c| c.id).eq(want.children.iter().map(|c| c.id));
    let mut fields = Vec::with_capacity(want.children.len());
    let mut columns = Vec::with_capacity(want.children.len());
    for w in &want.children {
        match stored.children.iter().position(|c| c.id == w.id) {
            Some(i) => {
                let child = s.column(i).clone();
                let widened = with_struct_children_of(child.clone(), &stored.children[i], w)?;
                changed |= !Arc::ptr_eq(&child, &widened);
                let f = s.fields()[i].as_ref().clone();
                fields.push(Arc::new(f.with_data_type(widened.data_type().clone())));
                columns.push(widened);
            }
            None => {
                let f = w.output_arrow();
                columns.push(new_null_array(f.data_type(), s.len()));
                fields.push(Arc::new(f.with_nullable(true)));
            }
        }
    }
    if !changed {
        return Ok(array);
    }
    let widened = StructArray::try_new(Fields::from(fields), columns, s.nulls().cloned())
        .map_err(|e| Error::corrupt(format!("column {:?}: its struct children cannot be assembled: {e}", want.name)))?;
    Ok(Arc::new(widened))
}

/// Whether `stored` and `want` have the same child field ids at every struct level.
fn same_struct_ids(stored: &LanceField, want: &LanceField) -> bool {
    stored.children.len() == want.children.len()
        && stored
            .children
            .iter()
            .zip(&want.children)
            .all(|(s, w)| s.id == w.id && (!matches!(w.data_type, DataType::Struct(_)) || same_struct_ids(s, w)))
}

/// Gives `array` the exact type of `field` when the two differ only in names or
/// nullability of nested children (e.g. a fixed-size list's item field).
pub(super) fn conform(array: ArrayRef, field: &Field) -> Result<ArrayRef> {
    if array.data_type() == field.data_type() {
        return Ok(array);
    }
    if crate::jsonb::arrow::has_arrow_json(field) {
        // JSON columns: stored as JSONB, read as text.
        return crate::jsonb::arrow::to_text_array(&array, field);
    }
    if !same_layout(array.data_type(), field.data_type()) {
        // A file whose column disagrees with the schema (a hostile file, or one written
        // for another field under a reused id): reinterpreting its buffers would be a
        // wrong answer, e.g. an int64 read as the int32 of its low bytes.
        return Err(Error::corrupt(format!(
            "column {:?}: the file stores {} where the dataset's schema says {}",
            field.name(),
            array.data_type(),
            field.data_type()
        )));
    }
    let data = array.to_data().into_builder().data_type(field.data_type().clone()).build().map_err(|e| {
        Error::SchemaMismatch(format!(
            "column {:?}: data of type {} cannot be read as {}: {e}",
            field.name(),
            array.data_type(),
            field.data_type()
        ))
    })?;
    Ok(arrow_array::make_array(data))
}

/// Whether values of type `a` may be read as type `b`: the same physical layout, the
/// types differing at most in nested fields' names, nullability and metadata, or in a
/// timestamp's time zone (which does not change the stored instants).
pub(super) fn same_layout(a: &DataType, b: &DataType) -> bool {
    use DataType::*;
    let fields = |x: &Fields, y: &Fields| {
        x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| same_layout(p.data_type(), q.data_type()))
    };
    match (a, b) {
        (List(x), List(y)) | (LargeList(x), LargeList(y)) | (ListView(x), ListView(y)) => {
            same_layout(x.data_type(), y.data_type())
        }
        (LargeListView(x), LargeListView(y)) => same_layout(x.data_type(), y.data_type()),
        (FixedSizeList(x, m), FixedSizeList(y, n)) => m == n && same_layout(x.data_type(), y.data_type()),
        (Map(x, _), Map(y, _)) => same_layout(x.data_type(), y.data_type()),
        (Struct(x), Struct(y)) => fields(x, y),
        (Dictionary(kx, vx), Dictionary(ky, vy)) => kx == ky && same_layout(vx, vy),
        (Timestamp(ux, _), Timestamp(uy, _)) => ux == uy,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, TimeUnit};

    use super::{conform, same_layout};
    use crate::error::Error;

    #[test]
    fn layouts_differ_in_types_not_in_names_or_time_zones() {
        let item = |name: &str, t: DataType, nullable: bool| Arc::new(Field::new(name, t, nullable));
        assert!(same_layout(&DataType::Int64, &DataType::Int64));
        assert!(!same_layout(&DataType::Int64, &DataType::Int32));
        assert!(!same_layout(&DataType::Utf8, &DataType::Binary));
        assert!(same_layout(
            &DataType::FixedSizeList(item("item", DataType::Float32, true), 4),
            &DataType::FixedSizeList(item("element", DataType::Float32, false), 4)
        ));
        assert!(!same_layout(
            &DataType::FixedSizeList(item("item", DataType::Float32, true), 4),
            &DataType::FixedSizeList(item("item", DataType::Float32, true), 2)
        ));
        assert!(!same_layout(
            &DataType::List(item("item", DataType::Int32, true)),
            &DataType::List(item("item", DataType::Int64, true))
        ));
        assert!(same_layout(
            &DataType::Timestamp(TimeUnit::Microsecond, None),
            &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        ));
        assert!(!same_layout(
            &DataType::Timestamp(TimeUnit::Microsecond, None),
            &DataType::Timestamp(TimeUnit::Nanosecond, None)
        ));
        let s = |t: DataType| DataType::Struct(vec![Field::new("x", t, true)].into());
        assert!(!same_layout(&s(DataType::Int32), &s(DataType::Float32)));
    }

    #[test]
    fn a_column_of_another_type_is_corrupt_not_reinterpreted() {
        let wide: arrow_array::ArrayRef = Arc::new(Int64Array::from(vec![1i64 << 40, 5, 6]));
        let err = conform(wide, &Field::new("a", DataType::Int32, true)).unwrap_err();
        assert!(matches!(err, Error::Corrupt(ref m) if m.contains("Int64") && m.contains("Int32")), "{err:?}");
    }
}
