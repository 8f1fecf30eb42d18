//! Deletion vectors: which row offsets of a fragment are deleted (FORMAT.md §4.4).
//!
//! Two file formats, chosen by size like pylance does:
//! * `.arrow` — an Arrow IPC *file* with one batch of one column `row_id: uint32 not null`,
//!   ZSTD-compressed buffers; for sparse deletions (fewer than [`BITMAP_THRESHOLD`] rows);
//! * `.bin` — a 32-bit roaring bitmap in the portable serialization; for dense deletions.
//!
//! In memory a deletion vector is always a [`RoaringBitmap`].

use std::io::Cursor;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, UInt32Type};
use arrow_array::{RecordBatch, UInt32Array};
use arrow_ipc::writer::IpcWriteOptions;
use arrow_ipc::CompressionType;
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use roaring::RoaringBitmap;

use super::bases::BasePaths;
use super::naming::deletion_file_path;
pub use super::naming::DELETIONS_DIR;
use crate::error::{Error, Result};
use crate::format::tablepb;
use crate::io::Store;

/// From this many deleted rows on, a deletion file is a roaring bitmap.
pub const BITMAP_THRESHOLD: u64 = 5000;

/// The deleted row offsets of one fragment.
pub type DeletionVector = RoaringBitmap;

/// Largest uncompressed buffer accepted in an Arrow IPC deletion file: 256 Mi row offsets,
/// far more than the `.arrow` form ever holds (it is for sparse deletions).
const MAX_IPC_BUFFER: i64 = 1 << 30;

/// Largest row count accepted in an Arrow IPC deletion file (its values fill
/// [`MAX_IPC_BUFFER`]).
const MAX_IPC_ROWS: i64 = MAX_IPC_BUFFER / 4;

/// Checks everything arrow-ipc's file reader takes on trust before it is handed the bytes:
/// with a block or a buffer outside the file it panics (slicing, or unwrapping a negative
/// length) or allocates the claimed size, and a row count or field node larger than its
/// buffers reaches `Buffer::slice_with_length` (a panic) in the decoders of non-primitive
/// types. So the file must be what a deletion file is: one field, a 32-bit integer without
/// children or dictionary, no dictionary batches, and every record batch one field node
/// and two buffers (validity, values) inside its block, with counts bounded by
/// [`MAX_IPC_ROWS`]. Found by the `deletion_arrow` fuzz target.
fn check_ipc_layout(data: &[u8], path: &str) -> Result<()> {
    let bad = |what: String| Error::corrupt(format!("{path}: not a valid Arrow IPC deletion file: {what}"));
    let n = data.len();
    if n < 16 || &data[n - 6..] != b"ARROW1" {
        return Err(bad("no trailing ARROW1 magic".into()));
    }
    let footer_len = i32::from_le_bytes(data[n - 10..n - 6].try_into().expect("4 bytes"));
    let footer_len = usize::try_from(footer_len).ok().filter(|&l| l <= n - 10).ok_or_else(|| bad("footer length".into()))?;
    let footer = arrow_ipc::root_as_footer(&data[n - 10 - footer_len..n - 10]).map_err(|e| bad(format!("footer: {e}")))?;
    let fields = footer.schema().and_then(|s| s.fields()).ok_or_else(|| bad("the footer has no schema".into()))?;
    if fields.len() != 1 {
        return Err(bad(format!("{} fields, expected one", fields.len())));
    }
    let field = fields.get(0);
    let int32 = field.type_as_int().is_some_and(|t| t.bitWidth() == 32);
    if !int32 || field.dictionary().is_some() || field.children().is_some_and(|c| !c.is_empty()) {
        return Err(bad(format!("the field is a {:?}, expected a 32-bit integer", field.type_type())));
    }
    if footer.dictionaries().is_some_and(|d| !d.is_empty()) {
        return Err(bad("dictionary batches in a deletion file".into()));
    }
    for block in footer.recordBatches().into_iter().flatten() {
        let (offset, meta, body) = (block.offset(), block.metaDataLength() as i64, block.bodyLength());
        let end = offset.checked_add(meta).and_then(|e| e.checked_add(body));
        if offset < 0 || meta < 8 || body < 0 || end.is_none_or(|e| e as u64 > n as u64) {
            return Err(bad(format!("block {offset}..+{meta}+{body} lies outside the file ({n} bytes)")));
        }
        let m = &data[offset as usize..(offset + meta) as usize];
        let flatbuffer = if m[..4] == [0xFF; 4] { &m[8..] } else { &m[4..] };
        let message = arrow_ipc::root_as_message(flatbuffer).map_err(|e| bad(format!("message: {e}")))?;
        let batch = message.header_as_record_batch().ok_or_else(|| bad("a block is not a record batch".into()))?;
        let rows = batch.length();
        if !(0..=MAX_IPC_ROWS).contains(&rows) {
            return Err(bad(format!("a record batch claims {rows} rows")));
        }
        let nodes = batch.nodes().ok_or_else(|| bad("a record batch has no field nodes".into()))?;
        if nodes.len() != 1 {
            return Err(bad(format!("a record batch has {} field nodes, expected one", nodes.len())));
        }
        let node = nodes.get(0);
        if node.length() != rows || !(0..=rows).contains(&node.null_count()) {
            return Err(bad(format!("a field node claims {} rows ({} null) of {rows}", node.length(), node.null_count())));
        }
        let buffers = batch.buffers().ok_or_else(|| bad("a record batch has no buffers".into()))?;
        if buffers.len() != 2 {
            return Err(bad(format!("a record batch has {} buffers, expected two", buffers.len())));
        }
        let compressed = batch.compression().is_some();
        let body_start = (offset + meta) as usize;
        for buffer in buffers {
            let (o, l) = (buffer.offset(), buffer.length());
            if o < 0 || l < 0 || o.checked_add(l).is_none_or(|e| e > body) {
                return Err(bad(format!("buffer {o}..+{l} lies outside its block ({body} bytes)")));
            }
            // A compressed buffer starts with its uncompressed length, which arrow-ipc
            // allocates before decompressing (-1: stored uncompressed).
            if compressed && l >= 8 {
                let at = body_start + o as usize;
                let claimed = i64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"));
                if claimed < -1 || claimed > MAX_IPC_BUFFER {
                    return Err(bad(format!("a compressed buffer claims {claimed} bytes")));
                }
            }
        }
    }
    Ok(())
}

/// Decodes an `.arrow` deletion file.
pub fn decode_arrow(data: Bytes, path: &str) -> Result<DeletionVector> {
    check_ipc_layout(&data, path)?;
    let reader = arrow_ipc::reader::FileReader::try_new(Cursor::new(data), None)
        .map_err(|e| Error::corrupt(format!("{path}: not an Arrow IPC file: {e}")))?;
    let mut out = RoaringBitmap::new();
    let mut batches = 0;
    for batch in reader {
        let batch = batch.map_err(|e| Error::corrupt(format!("{path}: {e}")))?;
        batches += 1;
        if batch.num_columns() != 1 {
            return Err(Error::corrupt(format!("{path}: a deletion file has one column, found {}", batch.num_columns())));
        }
        let col = batch.column(0);
        if col.null_count() > 0 {
            return Err(Error::corrupt(format!("{path}: deleted row offsets contain nulls")));
        }
        match col.data_type() {
            DataType::UInt32 => out.extend(col.as_primitive::<UInt32Type>().values().iter().copied()),
            DataType::Int32 => {
                for &v in col.as_primitive::<Int32Type>().values().iter() {
                    out.insert(u32::try_from(v).map_err(|_| Error::corrupt(format!("{path}: negative row offset {v}")))?);
                }
            }
            other => return Err(Error::corrupt(format!("{path}: deleted row offsets have type {other}, expected uint32"))),
        }
    }
    if batches > 1 {
        return Err(Error::corrupt(format!("{path}: a deletion file has one batch, found {batches}")));
    }
    Ok(out)
}

/// Encodes an `.arrow` deletion file (ascending offsets).
pub fn encode_arrow(dv: &DeletionVector) -> Result<Vec<u8>> {
    let schema = Arc::new(Schema::new(vec![Field::new("row_id", DataType::UInt32, false)]));
    let values = UInt32Array::from_iter_values(dv.iter());
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(values)])?;
    let options = IpcWriteOptions::default().try_with_compression(Some(CompressionType::ZSTD))?;
    let mut out = Vec::new();
    {
        let mut w = arrow_ipc::writer::FileWriter::try_new_with_options(&mut out, &schema, options)?;
        w.write(&batch)?;
        w.finish()?;
    }
    Ok(out)
}

/// Decodes a `.bin` deletion file.
pub fn decode_bitmap(data: &[u8], path: &str) -> Result<DeletionVector> {
    let bm = RoaringBitmap::deserialize_from(data).map_err(|e| Error::corrupt(format!("{path}: not a roaring bitmap: {e}")))?;
    Ok(normalize_bitmap(bm))
}

/// Rebuilds a deserialized bitmap from its values. The roaring crate accepts a bitmap
/// container with no bit set, which it then cannot serialize (its cardinality − 1
/// underflows: a panic, or a wrong file in release builds); rebuilt, empty containers are
/// gone. Found by the `manifest` fuzz target.
pub fn normalize_bitmap(bm: RoaringBitmap) -> RoaringBitmap {
    bm.iter().collect()
}

/// Encodes a `.bin` deletion file.
pub fn encode_bitmap(dv: &DeletionVector) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(dv.serialized_size());
    dv.serialize_into(&mut out).map_err(|e| Error::invalid_input(format!("serializing a roaring bitmap: {e}")))?;
    Ok(out)
}

/// Path (relative to the root) of a fragment's deletion file.
pub fn path_of(fragment_id: u64, file: &tablepb::DeletionFile) -> String {
    let bitmap = file.file_type == tablepb::deletion_file::DeletionFileType::Bitmap as i32;
    deletion_file_path(fragment_id, file.read_version, file.id, bitmap)
}

/// Reads a fragment's deletion vector, wherever its base path puts it (one GET).
pub fn read(store: &Store, bases: &BasePaths, fragment_id: u64, file: &tablepb::DeletionFile) -> Result<DeletionVector> {
    let uri = bases.deletion_file_uri(fragment_id, file)?;
    let data = match file.base_id {
        None => store.read(&path_of(fragment_id, file)),
        Some(_) => {
            let (dir, name) = uri.rsplit_once('/').expect("a deletion file URI has a directory");
            Store::open_with(dir, store.options_for(&uri)).and_then(|s| s.read(name))
        }
    };
    let data = data.map_err(|e| bases.explain_missing(file.base_id, store.options(), e)).map_err(|e| match e {
        Error::NotFound(m) => Error::NotFound(format!("deletion file {uri} of fragment {fragment_id} is missing ({m})")),
        other => other,
    })?;
    if file.file_type == tablepb::deletion_file::DeletionFileType::Bitmap as i32 {
        decode_bitmap(&data, &uri)
    } else {
        decode_arrow(data, &uri)
    }
}

/// Writes a deletion file holding `dv` for a fragment and returns its description. The
/// format follows pylance: a bitmap from [`BITMAP_THRESHOLD`] rows on (or when
/// `keep_bitmap`, i.e. the fragment's previous file already was one), else Arrow.
pub fn write(
    store: &Store,
    fragment_id: u64,
    read_version: u64,
    dv: &DeletionVector,
    keep_bitmap: bool,
) -> Result<tablepb::DeletionFile> {
    let bitmap = keep_bitmap || dv.len() >= BITMAP_THRESHOLD;
    let id = u64::from_le_bytes(uuid::Uuid::new_v4().as_bytes()[..8].try_into().expect("8 bytes")) >> 1;
    let bytes = if bitmap { encode_bitmap(dv)? } else { encode_arrow(dv)? };
    let rel = deletion_file_path(fragment_id, read_version, id, bitmap);
    store.put(&rel, Bytes::from(bytes))?;
    let file_type = if bitmap {
        tablepb::deletion_file::DeletionFileType::Bitmap
    } else {
        tablepb::deletion_file::DeletionFileType::ArrowArray
    };
    Ok(tablepb::DeletionFile { file_type: file_type as i32, read_version, id, num_deleted_rows: dv.len(), base_id: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_round_trip() {
        let dv: DeletionVector = [3u32, 1, 99, 70000].into_iter().collect();
        assert_eq!(decode_arrow(Bytes::from(encode_arrow(&dv).unwrap()), "x").unwrap(), dv);
        assert_eq!(decode_bitmap(&encode_bitmap(&dv).unwrap(), "x").unwrap(), dv);
        assert!(decode_arrow(Bytes::from_static(b"ARROW1 nope"), "x").is_err());
        assert!(decode_bitmap(b"\x01\x02", "x").is_err());
    }

    #[test]
    fn threshold_picks_the_format() {
        let store = Store::open(&format!("memory://dv-{}", uuid::Uuid::new_v4().simple())).unwrap();
        let small: DeletionVector = (0..10u32).collect();
        let bases = BasePaths::new(store.uri(), &[]).unwrap();
        let f = write(&store, 3, 1, &small, false).unwrap();
        assert_eq!(f.file_type, 0);
        assert_eq!(read(&store, &bases, 3, &f).unwrap(), small);
        let big: DeletionVector = (0..BITMAP_THRESHOLD as u32).collect();
        let f = write(&store, 3, 1, &big, false).unwrap();
        assert_eq!(f.file_type, 1);
        assert_eq!(f.num_deleted_rows, BITMAP_THRESHOLD);
        assert_eq!(read(&store, &bases, 3, &f).unwrap(), big);
    }

    #[test]
    fn reads_deletion_files_under_other_bases() {
        let own = Store::open(&format!("memory://dv-own-{}", uuid::Uuid::new_v4().simple())).unwrap();
        let source = Store::open(&format!("memory://dv-src-{}", uuid::Uuid::new_v4().simple())).unwrap();
        let dv: DeletionVector = [1u32, 5, 9].into_iter().collect();
        let mut f = write(&source, 2, 4, &dv, false).unwrap();
        let base = |id, path: &str, is_dataset_root| tablepb::BasePath { id, name: None, is_dataset_root, path: path.into() };
        let bases = BasePaths::new(own.uri(), &[base(3, source.uri(), true)]).unwrap();
        assert!(matches!(read(&own, &bases, 2, &f), Err(Error::NotFound(_))));
        f.base_id = Some(3);
        assert_eq!(read(&own, &bases, 2, &f).unwrap(), dv);
        // A plain base holds the file directly.
        let plain = format!("{}/_deletions", source.uri());
        let bases = BasePaths::new(own.uri(), &[base(3, &plain, false)]).unwrap();
        assert_eq!(read(&own, &bases, 2, &f).unwrap(), dv);
    }
}
