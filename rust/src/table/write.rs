//! Writing new fragments: Arrow batches → data files under `data/`, described as
//! `DataFragment`s that a transaction can commit.
//!
//! Nothing here is visible to readers: a fragment exists for a dataset only once a manifest
//! lists it. Fragment ids are left at 0; the commit assigns them.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema};

use super::blob_write::{BlobSink, ExternalBlobs};
use super::naming::{new_data_file_name, DATA_DIR};
use crate::error::{Error, Result};
use crate::file::legacy::LegacyWriter;
use crate::file::reader::field_ids_and_columns;
use crate::file::{FileVersion, FileWriter, LanceField, LanceSchema, WriterOptions};
use crate::format::tablepb;
use crate::io::Store;

/// How new data files are cut.
#[derive(Debug, Clone, Copy)]
pub struct FragmentWriteOptions {
    /// Rows per data file (and so per fragment).
    pub max_rows_per_file: u64,
    /// A data file is closed once it holds about this many bytes (pages written plus data
    /// buffered, checked after each batch: a file may pass it by about one batch).
    pub max_bytes_per_file: u64,
    /// Data file version.
    pub version: FileVersion,
    /// What to do with blob values given as external URIs.
    pub external_blobs: ExternalBlobs,
    /// Bytes a column buffers before they become a page.
    pub max_page_bytes: u64,
    /// Largest blob pack file (see [`super::blob_write::PACK_FILE_MAX`]).
    pub blob_pack_file_max: u64,
    /// Rows per batch of a legacy (v1) file (pylance's `max_rows_per_group`).
    pub max_rows_per_group: usize,
}

/// The `DataFile` entry for a file of `schema` written at `path` (relative to `data/`).
pub fn data_file_entry(path: String, schema: &LanceSchema, version: FileVersion, size: u64) -> tablepb::DataFile {
    // A legacy file's fields are every field id (parents too), without column indices.
    let (fields, column_indices) = if version == FileVersion::Legacy {
        (schema.all_fields().iter().map(|f| f.id).collect(), Vec::new())
    } else {
        field_ids_and_columns(schema, version)
    };
    let (major, minor) = version.manifest_version();
    tablepb::DataFile {
        path,
        fields,
        column_indices,
        file_major_version: major,
        file_minor_version: minor,
        file_size_bytes: size,
        base_id: None,
    }
}

/// The writer of one data file: a v2 file writer or a legacy (v1) one.
enum DataWriter {
    V2(FileWriter),
    Legacy(LegacyWriter),
}

impl DataWriter {
    fn num_rows(&self) -> u64 {
        match self {
            DataWriter::V2(w) => w.num_rows(),
            DataWriter::Legacy(w) => w.num_rows(),
        }
    }

    fn written_size(&self) -> u64 {
        match self {
            DataWriter::V2(w) => w.written_size(),
            DataWriter::Legacy(w) => w.written_size(),
        }
    }

    fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        match self {
            DataWriter::V2(w) => w.write_batch(batch),
            DataWriter::Legacy(w) => w.write_batch(batch),
        }
    }

    fn finish(&mut self) -> Result<crate::file::writer::WrittenFile> {
        match self {
            DataWriter::V2(w) => w.finish(),
            DataWriter::Legacy(w) => w.finish(),
        }
    }

    fn v2(&mut self) -> Result<&mut FileWriter> {
        match self {
            DataWriter::V2(w) => Ok(w),
            DataWriter::Legacy(_) => Err(Error::not_supported("blob columns in a legacy (v1) data file")),
        }
    }
}

struct OpenFile {
    writer: DataWriter,
    name: String,
    /// The sidecars of the file's blob columns (when it has any).
    blobs: Option<BlobSink>,
}

/// Writes `batches` (whose columns are `schema`'s top-level fields, in order) into new data
/// files and returns one fragment per file. `on_file` is told every file name as soon as it
/// is created, so that a failed write can be cleaned up.
pub fn write_fragments(
    store: &Store,
    schema: &LanceSchema,
    batches: impl Iterator<Item = Result<RecordBatch>>,
    options: FragmentWriteOptions,
    on_file: impl FnMut(&str),
) -> Result<Vec<tablepb::DataFragment>> {
    write_fragments_named(store, DATA_DIR, schema, batches, options, || Ok(new_data_file_name()), on_file)
}

/// [`write_fragments`] into directory `dir` of `store` (`data` for a dataset root, `""` for
/// a plain base path directory), with the names of new data files chosen by `new_name`
/// (e.g. [`new_tagged_data_file_name`](super::naming::new_tagged_data_file_name)).
/// `on_file` is told each file's path relative to the store.
pub fn write_fragments_named(
    store: &Store,
    dir: &str,
    schema: &LanceSchema,
    batches: impl Iterator<Item = Result<RecordBatch>>,
    options: FragmentWriteOptions,
    mut new_name: impl FnMut() -> Result<String>,
    mut on_file: impl FnMut(&str),
) -> Result<Vec<tablepb::DataFragment>> {
    // Blob-v2 columns (top level, file version 2.2+) are stored as descriptions, their bytes
    // inline or in sidecars (see `blob_write`); top-level legacy blob columns of 2.0 / 2.1
    // files are written by the file writer (values out of line in the data file).
    let blob_columns: Vec<usize> = schema.fields.iter().enumerate().filter(|(_, f)| f.is_blob_v2()).map(|(i, _)| i).collect();
    let mut below_top = Vec::new();
    for f in &schema.fields {
        for c in &f.children {
            c.walk(&mut below_top);
        }
    }
    let nested_blob = below_top.into_iter().find(|f| f.is_blob_v2() || crate::schema::is_blob_metadata(&f.metadata));
    let legacy_ok = |f: &LanceField| f.is_legacy_blob() && options.version < FileVersion::V2_2;
    if let Some(f) = schema
        .fields
        .iter()
        .find(|f| !f.is_blob_v2() && !legacy_ok(f) && crate::schema::is_blob_metadata(&f.metadata))
        .or(nested_blob)
    {
        return Err(Error::not_supported(format!(
            "writing blob column {:?} ({}): lancepy writes top-level blob columns only: large_binary ones in file \
             versions 2.0 / 2.1, blob v2 ones in 2.2",
            f.name, f.data_type
        )));
    }
    if !blob_columns.is_empty() && options.version < FileVersion::V2_2 {
        return Err(Error::not_supported(format!(
            "blob columns need file version 2.2 (\"stable\"); this dataset stores {} files",
            options.version
        )));
    }
    let mut file_schema = schema.clone();
    for &i in &blob_columns {
        file_schema.fields[i] = schema.fields[i].blob_v2_file_field();
    }
    let schema = &file_schema;
    if options.max_rows_per_file == 0 {
        return Err(Error::invalid_input("max_rows_per_file must be positive"));
    }
    if options.max_bytes_per_file == 0 {
        return Err(Error::invalid_input("max_bytes_per_file must be positive"));
    }
    let mut out = Vec::new();
    let mut current: Option<OpenFile> = None;
    let finish = |mut f: OpenFile, out: &mut Vec<tablepb::DataFragment>| -> Result<()> {
        if let Some(b) = f.blobs.as_mut() {
            b.finish()?;
        }
        let mut w = f.writer;
        let written = w.finish()?;
        out.push(tablepb::DataFragment {
            id: 0,
            files: vec![data_file_entry(f.name, schema, options.version, written.size)],
            physical_rows: written.num_rows,
            ..Default::default()
        });
        Ok(())
    };
    // JSON columns given as text are stored as JSONB.
    let json_fields: Vec<(usize, Field)> = schema
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            let mut all = Vec::new();
            f.walk(&mut all);
            all.iter().any(|f| f.is_json())
        })
        .map(|(i, f)| (i, f.to_arrow()))
        .collect();
    for batch in batches {
        crate::interrupt::check()?;
        let batch = match batch? {
            b if json_fields.is_empty() => b,
            b => {
                let (mut fields, mut columns) = (b.schema().fields().to_vec(), b.columns().to_vec());
                for (i, field) in &json_fields {
                    if let (Some(f), Some(c)) = (fields.get_mut(*i), columns.get_mut(*i)) {
                        *c = crate::jsonb::arrow::to_stored_array(c, field)?;
                        *f = Arc::new(field.clone());
                    }
                }
                RecordBatch::try_new(Arc::new(Schema::new_with_metadata(fields, b.schema().metadata().clone())), columns)?
            }
        };
        let mut start = 0usize;
        while start < batch.num_rows() {
            let file = match current.as_mut() {
                Some(f) => f,
                None => {
                    let name = new_name()?;
                    let rel = if dir.is_empty() { name.clone() } else { format!("{dir}/{name}") };
                    let uri = store.child_uri(&rel);
                    on_file(&rel);
                    let opts = WriterOptions {
                        version: options.version,
                        storage_options: store.options().clone(),
                        max_page_bytes: options.max_page_bytes,
                    };
                    let writer = if options.version == FileVersion::Legacy {
                        DataWriter::Legacy(LegacyWriter::try_new(
                            &uri,
                            schema.clone(),
                            options.max_rows_per_group,
                            store.options(),
                        )?)
                    } else {
                        DataWriter::V2(FileWriter::try_new_with_lance_schema(&uri, schema.clone(), opts)?)
                    };
                    let blobs = (!blob_columns.is_empty())
                        .then(|| BlobSink::new(store, &rel, options.external_blobs, options.blob_pack_file_max));
                    current.insert(OpenFile { writer, name, blobs })
                }
            };
            // A batch is cut only where a file reaches max_rows_per_file. max_bytes_per_file is a
            // soft limit, as pylance's: checked after each batch against the bytes the file has
            // written out (pages are buffered until about max_page_bytes), so a file ends at
            // the first batch boundary past it.
            let room = (options.max_rows_per_file - file.writer.num_rows()) as usize;
            let n = room.min(batch.num_rows() - start);
            let slice = batch.slice(start, n);
            match file.blobs.as_mut() {
                None => file.writer.write_batch(&slice)?,
                Some(sink) => {
                    let writer = file.writer.v2()?;
                    let mut columns = slice.columns().to_vec();
                    for &i in &blob_columns {
                        columns[i] = sink.write_column(columns[i].as_ref(), writer, &mut on_file)?;
                    }
                    let described = RecordBatch::try_new(writer.schema(), columns)
                        .map_err(|e| Error::invalid_input(format!("blob column descriptions: {e}")))?;
                    file.writer.write_batch(&described)?;
                }
            }
            start += n;
            if file.writer.num_rows() >= options.max_rows_per_file || file.writer.written_size() >= options.max_bytes_per_file {
                finish(current.take().expect("open file"), &mut out)?;
            }
        }
    }
    if let Some(f) = current.take() {
        if f.writer.num_rows() > 0 {
            finish(f, &mut out)?;
        } else {
            let mut w = f.writer;
            let _ = w.finish();
            if let Some(mut b) = f.blobs {
                b.finish()?;
            }
            store.delete(&if dir.is_empty() { f.name.clone() } else { format!("{dir}/{}", f.name) })?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;
    use crate::table::scan::{ScanOptions, TableSnapshot};

    #[test]
    fn write_then_scan_and_take() {
        let store = Store::open(&format!("memory://wf-{}", uuid::Uuid::new_v4().simple())).unwrap();
        let arrow = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false), Field::new("s", DataType::Utf8, true)]));
        let schema = LanceSchema::from_arrow(&arrow).unwrap();
        let batch = |lo: i64, hi: i64| {
            RecordBatch::try_new(
                arrow.clone(),
                vec![
                    Arc::new(Int64Array::from_iter_values(lo..hi)),
                    Arc::new(StringArray::from_iter((lo..hi).map(|i| (i % 3 != 0).then(|| format!("s{i}"))))),
                ],
            )
            .unwrap()
        };
        let mut files = Vec::new();
        let opts = FragmentWriteOptions {
            max_rows_per_file: 40,
            max_bytes_per_file: u64::MAX,
            version: FileVersion::V2_1,
            external_blobs: Default::default(),
            max_page_bytes: crate::file::writer::DEFAULT_MAX_PAGE_BYTES,
            blob_pack_file_max: crate::table::blob_write::PACK_FILE_MAX,
            max_rows_per_group: crate::file::legacy::DEFAULT_ROWS_PER_BATCH,
        };
        let mut frags = write_fragments(&store, &schema, vec![Ok(batch(0, 30)), Ok(batch(30, 100))].into_iter(), opts, |f| {
            files.push(f.to_string())
        })
        .unwrap();
        assert_eq!(frags.iter().map(|f| f.physical_rows).collect::<Vec<_>>(), vec![40, 40, 20]);
        assert_eq!(files.len(), 3);
        for (i, f) in frags.iter_mut().enumerate() {
            f.id = i as u64;
        }
        // Delete rows 0..5 of fragment 1 (ids 40..45).
        let dv: crate::table::DeletionVector = (0..5u32).collect();
        frags[1].deletion_file = Some(crate::table::deletion::write(&store, 1, 1, &dv, false).unwrap());
        let manifest = tablepb::Manifest { fields: schema.to_pb_fields().unwrap(), fragments: frags, ..Default::default() };
        let snap = TableSnapshot::new(store, &manifest).unwrap();
        assert_eq!(snap.count_rows().unwrap(), 95);
        let proj = snap.projection(None).unwrap();
        let opts = ScanOptions { with_row_id: true, ..Default::default() };
        let tasks = snap.plan_scan(None, 0, None, 16, opts).unwrap();
        let batches = snap.run_tasks(tasks, &proj, opts).unwrap();
        let ids: Vec<i64> =
            batches.iter().flat_map(|b| b.column(0).as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec()).collect();
        let want: Vec<i64> = (0..40).chain(45..100).collect();
        assert_eq!(ids, want);
        // offset/limit across the deletion.
        let tasks = snap.plan_scan(None, 38, Some(5), 16, opts).unwrap();
        let batches = snap.run_tasks(tasks, &proj, opts).unwrap();
        let ids: Vec<i64> =
            batches.iter().flat_map(|b| b.column(0).as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec()).collect();
        assert_eq!(ids, vec![38, 39, 45, 46, 47]);
        // take follows the input order, skips deleted rows in numbering.
        let b = snap.take(&[94, 0, 40, 40], &proj, opts).unwrap();
        let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec();
        assert_eq!(ids, vec![99, 0, 45, 45]);
        let rowid = b.column(2).as_any().downcast_ref::<arrow_array::UInt64Array>().unwrap().values().to_vec();
        assert_eq!(rowid, vec![(2 << 32) | 19, 0, (1 << 32) | 5, (1 << 32) | 5]);
        assert!(snap.take(&[95], &proj, opts).is_err());
    }
}
