//! Hostile and corrupt inputs: the regression tests of the fuzz targets in `fuzz/` (each
//! names the target that found the bytes) and hand-crafted files.
//!
//! What every test checks: corrupt bytes give a typed error (`Error::Corrupt` and friends),
//! never a panic, an allocation sized by an unchecked count, or a hang.
//!
//! Only the crate's public API is used.

use std::sync::Arc;
use std::time::{Duration, Instant};

use _lancepy::file::container::{Footer, FOOTER_LEN};
use _lancepy::file::{FileReader, FileVersion, FileWriter, WriterOptions};
use _lancepy::format::{file2, filepb};
use _lancepy::io::{open_reader, BufferReader};
use _lancepy::Error;
use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, Int32Array, RecordBatch, StringArray};
use arrow_buffer::Buffer;
use arrow_schema::{Field, Schema};
use prost::Message;

/// The fuzz targets' drivers (`fuzz/src/drive.rs`), so that a finding is replayed exactly
/// as the fuzzer ran it.
#[allow(dead_code)]
#[path = "../../fuzz/src/drive.rs"]
mod drive;

/// A finding of the fuzzers, kept under `rust/tests/data/fuzz/`.
fn finding(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rust/tests/data/fuzz").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Writes `array` as the one column `v` of a file in memory and returns the file's bytes.
fn write_file(name: &str, array: ArrayRef, version: FileVersion) -> Vec<u8> {
    let uri = format!("memory://corrupt-inputs/{name}-{version}.lance");
    let schema = Arc::new(Schema::new(vec![Field::new("v", array.data_type().clone(), true)]));
    let mut w = FileWriter::try_new(&uri, &schema, WriterOptions { version, ..Default::default() }).unwrap();
    w.write_batch(&RecordBatch::try_new(schema, vec![array]).unwrap()).unwrap();
    w.finish().unwrap();
    let io = open_reader(&uri).unwrap();
    io.read_range(0..io.size().unwrap()).unwrap().as_slice().to_vec()
}

fn open_bytes(data: Vec<u8>) -> _lancepy::Result<FileReader> {
    FileReader::open_with(Arc::new(BufferReader::new("crafted.lance", Buffer::from_vec(data))))
}

/// Rewrites a one-column, one-page file so that the page and the file claim `rows` rows.
/// The page buffers stay where they are; the schema, the column metadata, both offset
/// tables and the footer are written anew after them.
fn with_row_count(file: &[u8], rows: u64) -> Vec<u8> {
    let footer = Footer::parse(&file[file.len() - FOOTER_LEN..], file.len() as u64, "x").unwrap();
    let entry = |table: u64, i: u64| {
        let at = (table + i * 16) as usize;
        let pos = u64::from_le_bytes(file[at..at + 8].try_into().unwrap());
        let len = u64::from_le_bytes(file[at + 8..at + 16].try_into().unwrap());
        (pos as usize, len as usize)
    };
    assert_eq!(footer.num_columns, 1);
    assert_eq!(footer.num_global_buffers, 1, "the rewrite keeps only the schema buffer");
    let (gb0, gb0_len) = entry(footer.gbo_table_pos, 0);
    let (cm, cm_len) = entry(footer.cmo_table_pos, 0);
    let mut descriptor = filepb::FileDescriptor::decode(&file[gb0..gb0 + gb0_len]).unwrap();
    descriptor.length = rows;
    let mut meta = file2::ColumnMetadata::decode(&file[cm..cm + cm_len]).unwrap();
    assert_eq!(meta.pages.len(), 1);
    meta.pages[0].length = rows;
    // Everything before the first metadata byte is page data.
    let keep = (footer.column_meta_start as usize).min(gb0);
    let mut out = file[..keep].to_vec();
    let gb0 = out.len() as u64;
    let descriptor = descriptor.encode_to_vec();
    out.extend_from_slice(&descriptor);
    let column_meta_start = out.len() as u64;
    let meta = meta.encode_to_vec();
    out.extend_from_slice(&meta);
    let cmo_table_pos = out.len() as u64;
    out.extend_from_slice(&column_meta_start.to_le_bytes());
    out.extend_from_slice(&(meta.len() as u64).to_le_bytes());
    let gbo_table_pos = out.len() as u64;
    out.extend_from_slice(&gb0.to_le_bytes());
    out.extend_from_slice(&(descriptor.len() as u64).to_le_bytes());
    let footer = Footer { column_meta_start, cmo_table_pos, gbo_table_pos, ..footer };
    out.extend_from_slice(&footer.to_bytes());
    out
}

/// A constant page needs no bytes per row (FORMAT.md §2.2.5: all-null and inline-value pages
/// without structure have no buffers), so a page claiming 2^40 rows is a valid file, not a
/// corrupt one. Reading a few of its rows must cost a few rows: the value is repeated for the
/// rows asked, not for the page (before, the whole page was expanded first, which either
/// allocated terabytes or was refused as corrupt).
#[test]
fn constant_page_with_huge_row_count_reads_only_the_rows_asked() {
    const ROWS: u64 = 1 << 40;
    let cases: [(&str, ArrayRef, FileVersion, Option<i32>); 3] = [
        ("all-null-2.1", Arc::new(Int32Array::from(vec![None::<i32>; 3])), FileVersion::V2_1, None),
        ("all-null-2.2", Arc::new(Int32Array::from(vec![None::<i32>; 3])), FileVersion::V2_2, None),
        ("inline-2.2", Arc::new(Int32Array::from(vec![7; 3])), FileVersion::V2_2, Some(7)),
    ];
    for (name, array, version, value) in cases {
        let file = write_file(name, array, version);
        let encoding = open_bytes(file.clone()).unwrap().describe().unwrap()[0].pages[0].encoding.clone();
        assert!(encoding.starts_with("constant"), "{name}: the writer chose {encoding}");
        let reader = open_bytes(with_row_count(&file, ROWS)).unwrap();
        assert_eq!(reader.num_rows(), ROWS);
        let start = Instant::now();
        let rows = [0, ROWS - 1, 12_345_678_901, 0];
        let taken = reader.take(&rows, &[0]).unwrap_or_else(|e| panic!("{name}: take: {e}"));
        let one = reader.take(&[ROWS / 2], &[0]).unwrap();
        let range = reader.read_range(ROWS - 5, 5, &[0]).unwrap();
        assert!(start.elapsed() < Duration::from_secs(5), "{name}: {:?} for a few rows", start.elapsed());
        for (batch, n) in [(&taken, rows.len()), (&one, 1), (&range, 5)] {
            let col = batch.column(0).as_primitive::<Int32Type>();
            assert_eq!(col.len(), n, "{name}");
            match value {
                Some(v) => assert!(col.iter().all(|x| x == Some(v)), "{name}: {col:?}"),
                None => assert_eq!(col.null_count(), n, "{name}"),
            }
        }
    }
}

/// The same for a constant string value stored out of line (a value buffer, no levels).
#[test]
fn constant_string_page_with_huge_row_count_takes_one_row() {
    let file = write_file("text", Arc::new(StringArray::from(vec!["same"; 3])), FileVersion::V2_2);
    let encoding = open_bytes(file.clone()).unwrap().describe().unwrap()[0].pages[0].encoding.clone();
    assert!(encoding.starts_with("constant"), "the writer chose {encoding}");
    let reader = open_bytes(with_row_count(&file, 1 << 40)).unwrap();
    let batch = reader.take(&[(1 << 40) - 1], &[0]).unwrap();
    assert_eq!(batch.column(0).as_string::<i32>().value(0), "same");
}

/// A constant page whose row count disagrees with the file's is still refused.
#[test]
fn constant_page_rows_must_match_the_file() {
    let file = write_file("mismatch", Arc::new(Int32Array::from(vec![None::<i32>; 3])), FileVersion::V2_1);
    let mut crafted = with_row_count(&file, 1 << 40);
    // Put the file's length back to 3 (the descriptor's varint shrinks: rewrite the tail).
    let reader = open_bytes(crafted.clone()).unwrap();
    assert_eq!(reader.num_rows(), 1 << 40);
    let footer = Footer::parse(&crafted[crafted.len() - FOOTER_LEN..], crafted.len() as u64, "x").unwrap();
    let at = footer.gbo_table_pos as usize;
    let pos = u64::from_le_bytes(crafted[at..at + 8].try_into().unwrap()) as usize;
    let len = u64::from_le_bytes(crafted[at + 8..at + 16].try_into().unwrap()) as usize;
    let mut d = filepb::FileDescriptor::decode(&crafted[pos..pos + len]).unwrap();
    d.length = 3;
    let bytes = d.encode_to_vec();
    assert!(bytes.len() <= len);
    crafted[pos..pos + bytes.len()].copy_from_slice(&bytes);
    crafted[at + 8..at + 16].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
    let reader = open_bytes(crafted).unwrap();
    let err = reader.take(&[0], &[0]).unwrap_err();
    assert!(matches!(err, Error::Corrupt(_)), "{err}");
}

/// `file_reader` / `file_ops`: corrupt list and nullable pages decoded to fewer rows than a
/// take asked for; putting the rows back in the caller's order then indexed past the end
/// (a panic in Arrow's `take`). Now a short column is `Error::Corrupt`.
#[test]
fn fuzz_take_of_a_column_decoded_short_is_corrupt() {
    for name in [
        "file_reader-short-take-1.lance",
        "file_reader-short-take-2.lance",
        "file_reader-short-take-3.lance",
        "file_reader-short-take-4.lance",
    ] {
        drive::drive_file(&finding(name));
    }
    drive::drive_file_ops(&finding("file_ops-short-take.bin"));
}

/// `file_reader` / `file_ops` replayed with errors checked (run 4): corrupt pages decoded to
/// columns that did not fit the schema, and assembling the batch failed in Arrow, which
/// surfaced as a plain `LanceError` ("arrow error: ..."), not a corrupt file:
/// * range reads of list columns in mini-block pages whose repetition levels start fewer
///   rows than the page claims returned fewer rows than asked ("all columns in a record
///   batch must have the specified row count"; takes were checked since run 1, ranges not);
/// * def levels, 2.0 validity, constant pages or dictionaries giving nulls to a field the
///   schema says is non-nullable.
/// Every batch built from decoded columns is now checked as a whole (`decoded_batch`).
#[test]
fn fuzz_decoded_columns_that_do_not_fit_the_schema_are_corrupt() {
    for name in [
        "file_reader-list-rows-short-2.2.lance",
        "file_reader-nested-list-rows-short-2.1.lance",
        "file_reader-constant-nulls-in-non-nullable.lance",
        "file_reader-miniblock-nulls-in-non-nullable.lance",
        "file_reader-v2_0-dictionary-nulls-in-non-nullable.lance",
    ] {
        let reader = open_bytes(finding(name)).unwrap();
        let n = reader.num_rows();
        let errors: Vec<Error> = (0..n).step_by(3).filter_map(|s| reader.read_range(s, (n - s).min(3), &[0]).err()).collect();
        assert!(!errors.is_empty(), "{name}: every range read succeeded");
        for e in &errors {
            assert!(matches!(e, Error::Corrupt(_)), "{name}: {e}");
        }
        drive::drive_file(&finding(name));
    }
    drive::drive_file_ops(&finding("file_ops-v2_0-nulls-in-non-nullable.bin"));
    drive::drive_file_ops(&finding("file_ops-large-list-rows-short.bin"));
}

/// `file_reader` / `file_ops` replayed with errors checked (run 4): 2.0 list offsets that go
/// backwards asked the item decoder for unsorted row ranges, refused as an *internal* error;
/// a struct whose non-nullable child decoded nulls failed Arrow's validation (a plain Arrow
/// error). Both are corrupt files now.
#[test]
fn fuzz_unsorted_item_ranges_and_invalid_struct_children_are_corrupt() {
    for name in ["file_reader-v2_0-unsorted-item-ranges-1.lance", "file_reader-v2_0-unsorted-item-ranges-2.lance"] {
        let reader = open_bytes(finding(name)).unwrap();
        let n = reader.num_rows();
        let err = (0..n).filter_map(|s| reader.read_range(s, n - s, &[0]).err()).next();
        let err = err.unwrap_or_else(|| panic!("{name}: every range read succeeded"));
        assert!(matches!(err, Error::Corrupt(_)), "{name}: {err}");
        drive::drive_file(&finding(name));
    }
    drive::drive_file_ops(&finding("file_ops-struct-child-nulls.bin"));
    drive::drive_file_ops(&finding("file_ops-v2_0-unsorted-item-ranges.bin"));
}

/// `file_ops`: a 2.0 file whose page table puts requested row ranges outside a page made
/// `page_local` subtract past zero.
#[test]
fn fuzz_v2_0_ranges_outside_a_page_do_not_underflow() {
    drive::drive_file_ops(&finding("file_ops-v2_0-page-local-underflow.bin"));
}

/// `file_ops`: LZ4 buffers whose length prefix claims 2.8 GB and 4 GiB were allocated at
/// that size before decoding (the unit test in `encodings/general.rs` checks the error).
#[test]
fn fuzz_lz4_buffers_claiming_gigabytes_are_refused() {
    drive::drive_file_ops(&finding("file_ops-lz4-claims-2.8GB.bin"));
    drive::drive_file_ops(&finding("file_ops-lz4-claims-4GB.bin"));
}

/// `manifest`: an index's fragment bitmap with an empty roaring container deserialized, then
/// could not be serialized again when pruned (the roaring crate's cardinality − 1 underflows).
#[test]
fn fuzz_manifest_index_bitmap_with_an_empty_container_is_pruned() {
    drive::drive_manifest(&finding("manifest-empty-roaring-container.manifest"));
}

/// Row-id sequences are counted before they are expanded: a 10-byte range of 2^32 ids for a
/// fragment of 3 rows is refused without allocating 32 GiB.
#[test]
fn row_id_range_larger_than_the_fragment_is_refused() {
    use _lancepy::table::rowids::{decode_row_ids, row_id_count};
    // RowIdSequence { segments: [Range { start: 0, end: 2^32 }] }
    let seq = [0x0a, 0x08, 0x0a, 0x06, 0x10, 0x80, 0x80, 0x80, 0x80, 0x10];
    assert_eq!(row_id_count(&seq).unwrap(), 1 << 32);
    assert!(matches!(decode_row_ids(&seq, 3), Err(Error::Corrupt(_))));
    // A bitmap segment shorter than its range is refused before any id is looked at.
    let short_bitmap = [0x0a, 0x0a, 0x1a, 0x08, 0x08, 0x00, 0x10, 0x80, 0x80, 0x04, 0x1a, 0x00];
    assert!(matches!(row_id_count(&short_bitmap), Err(Error::Corrupt(_))));
}

/// `deletion_arrow`: Arrow IPC deletion files whose buffers lie past their block, or whose
/// counts exceed their buffers, made arrow-ipc slice out of bounds (a panic); they are now
/// checked first.
#[test]
fn fuzz_arrow_deletion_file_with_buffers_outside_the_body_is_corrupt() {
    use _lancepy::table::deletion::decode_arrow;
    for name in [
        "deletion_arrow-buffer-past-body.arrow",
        "deletion_arrow-buffer-length-huge.arrow",
        // A zstd buffer claiming 8.6e17 uncompressed bytes (allocated by arrow-ipc up front).
        "deletion_arrow-zstd-claims-huge.arrow",
        // A record batch claiming ~3.8e17 rows over a zero-length body: arrow-ipc sliced a
        // buffer to that length (a panic in `Buffer::slice_with_length`).
        "deletion_arrow-node-length-huge.arrow",
    ] {
        let err = decode_arrow(bytes::Bytes::from(finding(name)), name).unwrap_err();
        assert!(matches!(err, Error::Corrupt(_)), "{name}: {err}");
        drive::drive_deletion_arrow(&finding(name));
    }
}

/// `deletion_bitmap`: a roaring bitmap with an empty bitmap container decoded, then could
/// not be encoded again (the same roaring bug as the manifest's index bitmaps).
#[test]
fn fuzz_bitmap_deletion_file_with_an_empty_container_round_trips() {
    drive::drive_deletion_bitmap(&finding("deletion_bitmap-empty-container.bin"));
}

/// `row_ids`: a u32 array segment of a length that is not a multiple of 4 was counted as
/// valid, then refused when expanded; both now refuse it.
#[test]
fn fuzz_row_id_array_of_partial_values_is_refused_when_counted() {
    let data = finding("row_ids-u32-array-partial.bin");
    assert!(matches!(_lancepy::table::rowids::row_id_count(&data), Err(Error::Corrupt(_))));
    drive::drive_row_ids(&data);
}

/// `file_ops` (second run): a layout naming page buffers the page does not have (an index
/// past the page's buffer list), and 2.0 list offsets asked outside the ones read.
#[test]
fn fuzz_missing_page_buffers_and_stray_list_offsets_are_corrupt() {
    drive::drive_file_ops(&finding("file_ops-missing-page-buffer.bin"));
    drive::drive_file_ops(&finding("file_ops-v2_0-list-offset-outside.bin"));
    drive::drive_file(&finding("file_reader-v2_0-list-offset-outside.lance"));
}

/// `file_reader` (run 5): the repetition / definition levels of a constant page, inline
/// bit-packed, claimed 839 million values in a few bytes and were allocated at that size
/// (1.6 GB) before the first block was read (the unit test in `encodings/bitpacking.rs`
/// checks the error).
#[test]
fn fuzz_inline_bitpacked_levels_claiming_gigabytes_are_refused() {
    drive::drive_file(&finding("file_reader-inline-bitpacked-levels-claim-1.6GB.lance"));
}

/// `file_reader` / `file_ops` (run 5): a column of another type laid out as blob pages was
/// refused as an *internal* error; it is a corrupt file.
#[test]
fn fuzz_blob_pages_of_another_type_are_corrupt() {
    drive::drive_file(&finding("file_reader-blob-pages-of-another-type.lance"));
    drive::drive_file_ops(&finding("file_ops-blob-pages-of-another-type.bin"));
}
