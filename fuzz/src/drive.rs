//! The drivers themselves, without the allocator: `rust/tests/corrupt_inputs.rs` includes
//! this file to replay the fuzzers' findings exactly as they were found.

use std::sync::Arc;

use _lancepy::file::FileReader;
use _lancepy::io::BufferReader;
use arrow_array::{Array, RecordBatch};
use arrow_buffer::Buffer;

/// Most rows a single read or take asks for.
pub const MAX_ROWS: u64 = 1024;

/// Largest physical row count for which a fragment's row-id sequence is decoded (8 bytes
/// of output per row: a sequence for more rows may rightly need more memory).
pub const MAX_ROW_ID_ROWS: u64 = 1 << 20;

/// Touches every value of a decoded batch (validation catches inconsistent Arrow data the
/// decoders built without checking).
fn check_batch(batch: &RecordBatch, expected_rows: usize) {
    assert_eq!(batch.num_rows(), expected_rows, "a read returned a batch of the wrong length");
    for col in batch.columns() {
        col.to_data().validate_full().expect("decoded arrays are valid Arrow data");
        std::hint::black_box(col.null_count());
    }
}

/// An error from corrupt bytes must say so: `Error::Internal` claims a bug in lancepy, and a
/// bare Arrow error (e.g. a batch of the wrong length) means a decoder handed on data it
/// did not check. Either is a finding.
pub fn check_error(e: &_lancepy::Error) {
    use _lancepy::Error;
    assert!(!matches!(e, Error::Internal(_) | Error::Arrow(_)), "corrupt input gave an untyped error: {e:?}");
}

/// `r`'s value, or `None` after checking its error with [`check_error`].
pub fn checked<T>(r: _lancepy::Result<T>) -> Option<T> {
    r.map_err(|e| check_error(&e)).ok()
}

/// Opens `data` as a Lance file in memory.
pub fn open(data: &[u8]) -> Option<FileReader> {
    let io = Arc::new(BufferReader::new("fuzz.lance", Buffer::from(data.to_vec())));
    checked(FileReader::open_with(io))
}

/// Rows at the edges of every page of every column, plus the first and last rows.
fn interesting_rows(reader: &FileReader) -> Vec<u64> {
    let n = reader.num_rows();
    let mut rows = vec![0, 1, n / 2, n.saturating_sub(2), n.saturating_sub(1)];
    if let Ok(cols) = reader.describe() {
        for c in cols.iter().take(16) {
            let mut start = 0u64;
            for p in c.pages.iter().take(64) {
                rows.extend([start.saturating_sub(1), start, start.saturating_add(1)]);
                start = start.saturating_add(p.num_rows);
            }
        }
    }
    rows.retain(|&r| r < n);
    rows.sort_unstable();
    rows.dedup();
    rows.truncate(MAX_ROWS as usize);
    rows
}

/// One range read, checked.
pub fn range(reader: &FileReader, start: u64, len: u64, fields: &[usize]) {
    let len = len.min(MAX_ROWS);
    if let Some(b) = checked(reader.read_range(start, len, fields)) {
        check_batch(&b, len as usize);
    }
}

/// One take, checked.
pub fn take(reader: &FileReader, rows: &[u64], fields: &[usize]) {
    let rows = &rows[..rows.len().min(MAX_ROWS as usize)];
    if let Some(b) = checked(reader.take(rows, fields)) {
        check_batch(&b, rows.len());
    }
}

/// What a reader of the file can be asked, with rows picked from the page layout: the
/// metadata, then per field a full read of the first rows, ranges across page edges and
/// takes (sorted, unsorted, repeated, single rows), then all fields together.
pub fn drive_file(data: &[u8]) {
    let Some(reader) = open(data) else { return };
    let n = reader.num_rows();
    std::hint::black_box((reader.schema(), reader.version(), reader.footer(), reader.global_buffers().len()));
    for i in 0..reader.global_buffers().len().min(4) {
        checked(reader.read_global_buffer(i));
    }
    checked(reader.describe());
    let nfields = reader.lance_schema().fields.len();
    let edges = interesting_rows(&reader);
    for f in 0..nfields.min(16) {
        let fields = [f];
        range(&reader, 0, n, &fields);
        for &e in edges.iter().take(8) {
            range(&reader, e, (n - e).min(3), &fields);
        }
        take(&reader, &edges, &fields);
        let mut reversed: Vec<u64> = edges.iter().rev().copied().collect();
        reversed.extend(edges.first().copied());
        take(&reader, &reversed, &fields);
        if let Some(&last) = edges.last() {
            take(&reader, &[last], &fields);
        }
        if let Some(Some(plan)) = checked(reader.direct_rows(f)) {
            let mut out = _lancepy::file::reader::Gathered::new(&plan, edges.len());
            if checked(reader.gather_rows(&plan, &edges, &mut out)).is_some() {
                checked(out.into_array(reader.schema().field(f).data_type()));
            }
        }
    }
    let all: Vec<usize> = (0..nfields).collect();
    range(&reader, n.saturating_sub(MAX_ROWS), n.min(MAX_ROWS), &all);
    take(&reader, &edges, &all);
}

/// Little-endian u64 from up to 8 bytes.
fn le(b: &[u8]) -> u64 {
    let mut x = [0u8; 8];
    x[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
    u64::from_le_bytes(x)
}

/// Length of the operation header of [`drive_file_ops`].
pub const OPS_HEADER: usize = 16;

/// The fuzzer picks the requests: the first [`OPS_HEADER`] bytes say which field, which
/// range and which rows to take from the file made of the remaining bytes.
pub fn drive_file_ops(data: &[u8]) {
    if data.len() < OPS_HEADER {
        return;
    }
    let (ops, file) = data.split_at(OPS_HEADER);
    let Some(reader) = open(file) else { return };
    let n = reader.num_rows();
    if n == 0 {
        return;
    }
    let nfields = reader.lance_schema().fields.len();
    let fields: Vec<usize> = match ops[0] as usize {
        x if nfields > 0 && x < 0x80 => vec![x % nfields],
        _ => (0..nfields).collect(),
    };
    let start = le(&ops[1..6]) % n;
    let len = (ops[6] as u64 * 8 + 1).min(n - start);
    range(&reader, start, len, &fields);
    // Takes: a few rows spread by the seed bytes, some of them repeated or out of order.
    let count = (ops[7] % 24) as usize + 1;
    let mut seed = le(&ops[8..16]) | 1;
    let rows: Vec<u64> = (0..count)
        .map(|i| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if i % 5 == 4 {
                start
            } else {
                (seed >> 11) % n
            }
        })
        .collect();
    take(&reader, &rows, &fields);
    let mut sorted = rows.clone();
    sorted.sort_unstable();
    sorted.dedup();
    take(&reader, &sorted, &fields);
    take(&reader, &[rows[0]], &fields);
}

/// A manifest file and what a dataset does with it: the schema, the index section, the
/// inline transaction, the fragments' row-id sequences, and the JSON the Python API sees.
pub fn drive_manifest(data: &[u8]) {
    use _lancepy::format::tablepb::data_fragment::RowIdSequence;
    use _lancepy::schema::LanceSchema;
    use _lancepy::table::{manifest, rowids};

    let Some(m) = checked(manifest::read_manifest(bytes::Bytes::from(data.to_vec()), "fuzz.manifest")) else { return };
    checked(_lancepy::table::json::to_json(&m.manifest));
    if let Some(schema) = checked(LanceSchema::from_pb(&m.manifest.fields, &m.manifest.schema_metadata)) {
        std::hint::black_box(schema.to_arrow());
    }
    if let Some(section) = &m.index_section {
        checked(manifest::describe_index_section(section));
        checked(manifest::prune_index_section(section, &[0, 1]));
        checked(manifest::filter_index_section(section, |f| f % 2 == 0));
    }
    if let Some(t) = &m.transaction {
        if let Some(t) = checked(manifest::read_transaction(t, "fuzz.manifest")) {
            checked(_lancepy::table::json::to_json(&t));
        }
    }
    for f in m.manifest.fragments.iter().take(64) {
        if let Some(RowIdSequence::InlineRowIds(b)) = &f.row_id_sequence {
            if f.physical_rows <= MAX_ROW_ID_ROWS {
                checked(rowids::decode_row_ids(b, f.physical_rows));
            }
        }
    }
}

/// A transaction file and its JSON form.
pub fn drive_transaction(data: &[u8]) {
    if let Some(t) = checked(_lancepy::table::manifest::read_transaction(data, "fuzz.txn")) {
        checked(_lancepy::table::json::to_json(&t));
    }
}

/// An Arrow IPC deletion file; a decoded vector re-encodes to itself.
pub fn drive_deletion_arrow(data: &[u8]) {
    use _lancepy::table::deletion::{decode_arrow, encode_arrow};
    if let Some(dv) = checked(decode_arrow(bytes::Bytes::from(data.to_vec()), "fuzz.arrow")) {
        let again = encode_arrow(&dv).expect("a decoded deletion vector encodes");
        assert_eq!(decode_arrow(bytes::Bytes::from(again), "again").expect("re-encoded file decodes"), dv);
    }
}

/// A roaring-bitmap deletion file; a decoded vector re-encodes to itself.
pub fn drive_deletion_bitmap(data: &[u8]) {
    use _lancepy::table::deletion::{decode_bitmap, encode_bitmap};
    if let Some(dv) = checked(decode_bitmap(data, "fuzz.bin")) {
        let again = encode_bitmap(&dv).expect("a decoded deletion vector encodes");
        assert_eq!(decode_bitmap(&again, "again").expect("re-encoded bitmap decodes"), dv);
    }
}

/// A `RowIdSequence`: counted without expanding, then expanded for the size it claims (when
/// that is a sane request) and refused for a wrong size.
pub fn drive_row_ids(data: &[u8]) {
    use _lancepy::table::rowids::{decode_row_ids, encode_row_ids, row_id_count};
    let Some(n) = checked(row_id_count(data)) else { return };
    if n <= MAX_ROW_ID_ROWS {
        let ids = decode_row_ids(data, n).expect("a counted sequence decodes");
        assert_eq!(ids.len() as u64, n);
        assert_eq!(decode_row_ids(&encode_row_ids(&ids), n).expect("re-encoded sequence decodes"), ids);
    }
    assert!(decode_row_ids(data, n.wrapping_add(1)).is_err());
}
