//! The round-trip harness shared by every encoding the writer can choose.
//!
//! Each case is an Arrow array plus optional field metadata, shaped so that the writer picks
//! one particular encoding (asserted from the file's page descriptions). The harness writes it
//! in several batches, with the default page size and with small pages, for 2.1 and 2.2, and
//! then checks:
//!
//! * a full decode;
//! * ranges that start, end or straddle the mini-block chunk and page edges;
//! * takes at rows 0, 1023, 1024, 1025, 4095, 4096 and the last row, at every page edge,
//!   in sorted, unsorted and repeated order;
//! * the same for a copy of the data with nulls and for a slice with a non-zero offset.
//!
//! Proptest round-trips random data of several types through random page sizes.
//!
//! Only the crate's public API is used (`FileWriter`, `FileReader`, `memory://` paths).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use _lancepy::file::reader::Gathered;
use _lancepy::file::{FileReader, FileVersion, FileWriter, WriterOptions};
use arrow_array::builder::{FixedSizeBinaryBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int32Type, Int64Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Decimal128Array, FixedSizeBinaryArray, FixedSizeListArray, Float16Array,
    Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, LargeBinaryArray, LargeStringArray, NullArray,
    PrimitiveArray, RecordBatch, StringArray, TimestampNanosecondArray, UInt32Array, UInt64Array, UInt8Array,
};
use arrow_buffer::{Buffer, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema};
use proptest::prelude::*;

const VERSIONS: [FileVersion; 2] = [FileVersion::V2_1, FileVersion::V2_2];
/// Rows every take checks (when they exist).
const EDGE_ROWS: [u64; 8] = [0, 1, 1023, 1024, 1025, 4095, 4096, 4097];
/// A page size that cuts the test arrays into several pages.
const SMALL_PAGES: u64 = 16 * 1024;

static COUNTER: AtomicUsize = AtomicUsize::new(0);

fn uri(name: &str) -> String {
    format!("memory://roundtrip/{name}-{}.lance", COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Small deterministic generator (no extra dependency).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let x = self.0;
        (x ^ (x >> 33)).wrapping_mul(0xff51afd7ed558ccd) ^ (x >> 29)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One encoding to exercise.
struct Case {
    name: &'static str,
    array: ArrayRef,
    metadata: HashMap<String, String>,
    /// A substring every page's description must contain (per version; `None` = no check).
    expect: fn(FileVersion) -> Option<&'static str>,
    versions: &'static [FileVersion],
}

impl Case {
    fn new(name: &'static str, array: ArrayRef, expect: fn(FileVersion) -> Option<&'static str>) -> Self {
        Self { name, array, metadata: HashMap::new(), expect, versions: &VERSIONS }
    }
    fn meta(mut self, k: &str, v: &str) -> Self {
        self.metadata.insert(k.to_string(), v.to_string());
        self
    }
}

fn write(
    name: &str,
    array: &ArrayRef,
    metadata: &HashMap<String, String>,
    version: FileVersion,
    page_bytes: Option<u64>,
) -> String {
    write_at(uri(name), name, array, metadata, version, page_bytes)
}

/// A path for a file on local disk (removed when the test process ends, at the latest).
fn local_uri(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("lancepy-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{name}-{}.lance", COUNTER.fetch_add(1, Ordering::Relaxed))).to_string_lossy().into_owned()
}

fn write_at(
    uri: String,
    name: &str,
    array: &ArrayRef,
    metadata: &HashMap<String, String>,
    version: FileVersion,
    page_bytes: Option<u64>,
) -> String {
    let field = Field::new("v", array.data_type().clone(), true).with_metadata(metadata.clone());
    let schema = Arc::new(Schema::new(vec![field]));
    let mut options = WriterOptions { version, ..Default::default() };
    if let Some(p) = page_bytes {
        options.max_page_bytes = p;
    }
    let mut w = FileWriter::try_new(&uri, &schema, options).unwrap_or_else(|e| panic!("{name}: create writer: {e}"));
    // Several batches of uneven sizes, including an empty one.
    let n = array.len();
    let cuts = [0, n.min(1000), n.min(1001), n.min(1001), n.min(3000), n];
    for win in cuts.windows(2) {
        let part = array.slice(win[0], win[1] - win[0]);
        let batch = RecordBatch::try_new(schema.clone(), vec![part]).unwrap();
        w.write_batch(&batch).unwrap_or_else(|e| panic!("{name}: write_batch: {e}"));
    }
    let written = w.finish().unwrap_or_else(|e| panic!("{name}: finish: {e}"));
    assert_eq!(written.num_rows, n as u64, "{name}: rows written");
    uri
}

fn take_expected(array: &ArrayRef, rows: &[u64]) -> ArrayRef {
    let idx = UInt64Array::from(rows.to_vec());
    arrow_select::take::take(array.as_ref(), &idx, None).unwrap()
}

/// A dictionary array as its plain values (the writer may pick a different dictionary).
fn decode_dictionary(a: &ArrayRef) -> ArrayRef {
    match a.data_type() {
        DataType::Dictionary(_, _) => {
            let d = a.as_any_dictionary();
            if d.values().is_empty() {
                // Only possible when every key is null (or there are no rows).
                return arrow_array::new_null_array(d.values().data_type(), d.len());
            }
            let normalized = d.normalized_keys();
            let keys = arrow_array::UInt64Array::from(
                (0..d.len()).map(|i| d.keys().is_valid(i).then(|| normalized[i] as u64)).collect::<Vec<_>>(),
            );
            arrow_select::take::take(d.values().as_ref(), &keys, None).unwrap()
        }
        _ => a.clone(),
    }
}

fn assert_same(what: &str, expected: &ArrayRef, got: &ArrayRef) {
    assert_eq!(got.data_type(), expected.data_type(), "{what}: data type");
    let (expected, got) = (&decode_dictionary(expected), &decode_dictionary(got));
    assert_eq!(got.len(), expected.len(), "{what}: length");
    assert_eq!(got.null_count(), expected.null_count(), "{what}: null count");
    if got.as_ref() != expected.as_ref() {
        for i in 0..expected.len() {
            let (e, g) = (expected.slice(i, 1), got.slice(i, 1));
            if e.as_ref() != g.as_ref() {
                panic!("{what}: first difference at row {i}: expected {e:?}, got {g:?}");
            }
        }
        panic!("{what}: arrays differ");
    }
}

/// Rows at and around every page boundary.
fn page_edges(reader: &FileReader) -> Vec<u64> {
    let cols = reader.describe().unwrap();
    let mut edges = Vec::new();
    let mut row = 0u64;
    for p in &cols[0].pages {
        edges.extend([row.saturating_sub(1), row, row + 1]);
        row += p.num_rows;
    }
    edges.extend([row.saturating_sub(2), row.saturating_sub(1)]);
    edges.retain(|&e| e < row);
    edges.sort_unstable();
    edges.dedup();
    edges
}

/// Writes `array` and checks every read path against it.
fn check_roundtrip(
    name: &str,
    array: &ArrayRef,
    metadata: &HashMap<String, String>,
    version: FileVersion,
    page_bytes: Option<u64>,
) -> FileReader {
    let what = format!("{name} v{version} pages={page_bytes:?}");
    let uri = write(name, array, metadata, version, page_bytes);
    check_file(&what, &uri, array, version)
}

/// Checks every read path of the file at `uri` against `array`.
fn check_file(what: &str, uri: &str, array: &ArrayRef, version: FileVersion) -> FileReader {
    let reader = FileReader::open(uri).unwrap_or_else(|e| panic!("{what}: open: {e}"));
    let n = array.len() as u64;
    assert_eq!(reader.num_rows(), n, "{what}: num_rows");
    assert_eq!(reader.version(), version, "{what}: version");
    let fields = reader.projection(None).unwrap();

    let all = reader.read_range(0, n, &fields).unwrap_or_else(|e| panic!("{what}: full read: {e}"));
    assert_same(&format!("{what}: full read"), array, all.column(0));

    // Ranges around chunk and page edges.
    let mut ranges: Vec<(u64, u64)> = vec![(0, 0), (n, 0), (0, 1.min(n)), (n.saturating_sub(1), 1.min(n))];
    let edges = page_edges(&reader);
    for &e in EDGE_ROWS.iter().chain(&edges) {
        if e < n {
            let s = e.saturating_sub(2);
            ranges.push((s, 5.min(n - s)));
            ranges.push((e, 1));
            ranges.push((e, n - e));
        }
    }
    for &(s, len) in &ranges {
        let got = reader.read_range(s, len, &fields).unwrap_or_else(|e| panic!("{what}: read_range({s}, {len}): {e}"));
        assert_same(&format!("{what}: read_range({s}, {len})"), &array.slice(s as usize, len as usize), got.column(0));
    }

    // Takes: sorted edges, then unsorted with repeats.
    let mut rows: Vec<u64> = EDGE_ROWS.iter().copied().chain(edges.iter().copied()).filter(|&r| r < n).collect();
    if n > 0 {
        rows.push(n - 1);
    }
    rows.sort_unstable();
    rows.dedup();
    let got = reader.take(&rows, &fields).unwrap_or_else(|e| panic!("{what}: take({rows:?}): {e}"));
    assert_same(&format!("{what}: take({rows:?})"), &take_expected(array, &rows), got.column(0));
    let mut shuffled: Vec<u64> = rows.iter().rev().copied().collect();
    shuffled.extend(rows.iter().step_by(2).copied());
    let got = reader.take(&shuffled, &fields).unwrap_or_else(|e| panic!("{what}: take(unsorted): {e}"));
    assert_same(&format!("{what}: take({shuffled:?})"), &take_expected(array, &shuffled), got.column(0));
    let got = reader.take(&[], &fields).unwrap();
    assert_eq!(got.num_rows(), 0);
    reader
}

fn with_nulls(array: &ArrayRef, every: usize) -> ArrayRef {
    let n = array.len();
    let valid: Vec<bool> = (0..n).map(|i| i % every != 0 && i != n - 1).collect();
    let nulls = NullBuffer::from(valid);
    let data = array.to_data().into_builder().nulls(Some(nulls)).build().unwrap();
    arrow_array::make_array(data)
}

fn run(case: Case) {
    for &version in case.versions {
        for pages in [None, Some(SMALL_PAGES)] {
            let reader = check_roundtrip(case.name, &case.array, &case.metadata, version, pages);
            if let (Some(expect), None) = ((case.expect)(version), pages) {
                let cols = reader.describe().unwrap();
                for (i, p) in cols[0].pages.iter().enumerate() {
                    assert!(
                        p.encoding.contains(expect),
                        "{} v{version}: page {i} is encoded as {:?}, expected it to contain {expect:?}",
                        case.name,
                        p.encoding
                    );
                }
            }
        }
        if case.array.len() > 10 && !matches!(case.array.data_type(), DataType::Null) {
            let nulls = with_nulls(&case.array, 7);
            check_roundtrip(&format!("{}+nulls", case.name), &nulls, &case.metadata, version, None);
            check_roundtrip(&format!("{}+nulls", case.name), &nulls, &case.metadata, version, Some(SMALL_PAGES));
            let sliced = nulls.slice(3, case.array.len() - 5);
            check_roundtrip(&format!("{}+sliced", case.name), &sliced, &case.metadata, version, Some(SMALL_PAGES));
        }
    }
}

const N: usize = 10_000;

fn ints_full_range(n: usize, seed: u64) -> Vec<i64> {
    let mut g = Lcg(seed);
    (0..n).map(|_| g.next() as i64).collect()
}

fn strings(n: usize, seed: u64, min: usize, max: usize, alphabet: &[&str]) -> StringArray {
    let mut g = Lcg(seed);
    let mut b = StringBuilder::new();
    for _ in 0..n {
        let len = min + g.below((max - min + 1) as u64) as usize;
        let mut s = String::new();
        while s.len() < len {
            s.push_str(alphabet[g.below(alphabet.len() as u64) as usize]);
        }
        b.append_value(s);
    }
    b.finish()
}

const WORDS: &[&str] = &["lance ", "columnar ", "format ", "vector ", "page ", "chunk ", "arrow ", "zstd ", "fsst ", "rust "];
const LETTERS: &[&str] = &["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "é", "漢", "🙂", "0", "9"];

fn f32_vectors(n: usize, dim: i32, seed: u64) -> FixedSizeListArray {
    let mut g = Lcg(seed);
    let values = Float32Array::from((0..n * dim as usize).map(|_| (g.next() % 10_000) as f32 / 7.0 - 500.0).collect::<Vec<_>>());
    FixedSizeListArray::new(Arc::new(Field::new("item", DataType::Float32, true)), dim, Arc::new(values), None)
}

// ---------------------------------------------------------------------------------------------
// One test per encoding
// ---------------------------------------------------------------------------------------------

#[test]
fn flat_full_range_int64() {
    run(Case::new("flat_i64", Arc::new(Int64Array::from(ints_full_range(N, 1))), |_| Some("flat(64)")));
}

#[test]
fn flat_bool() {
    let mut g = Lcg(2);
    let a = BooleanArray::from((0..N).map(|_| g.next() & 1 == 1).collect::<Vec<_>>());
    run(Case::new("flat_bool", Arc::new(a), |_| Some("flat(1)")));
}

#[test]
fn flat_decimal128_and_float16() {
    let mut g = Lcg(3);
    let d = Decimal128Array::from((0..N).map(|_| (g.next() as i128) << 40 | g.next() as i128).collect::<Vec<_>>())
        .with_precision_and_scale(38, 4)
        .unwrap();
    run(Case::new("flat_decimal128", Arc::new(d), |_| Some("flat(128)")));
    // Half floats from raw bits (any pattern, NaN payloads included).
    let bits: Vec<u16> = (0..N).map(|_| g.next() as u16).collect();
    let h = Float16Array::new(ScalarBuffer::new(Buffer::from_vec(bits), 0, N), None);
    run(Case::new("float16", Arc::new(h), |_| None));
}

#[test]
fn bitpacking_small_ints_every_width() {
    let mut g = Lcg(4);
    run(Case::new("bitpack_i8", Arc::new(Int8Array::from((0..N).map(|_| g.below(10) as i8).collect::<Vec<_>>())), |_| {
        Some("inline_bitpacking(8)")
    }));
    run(Case::new("bitpack_i16", Arc::new(Int16Array::from((0..N).map(|_| g.below(300) as i16).collect::<Vec<_>>())), |_| {
        Some("inline_bitpacking(16)")
    }));
    run(Case::new(
        "bitpack_i32",
        Arc::new(Int32Array::from((0..N).map(|_| g.below(100_000) as i32).collect::<Vec<_>>())),
        |_| Some("inline_bitpacking(32)"),
    ));
    run(Case::new("bitpack_u64", Arc::new(UInt64Array::from((0..N).map(|_| g.below(1 << 40)).collect::<Vec<_>>())), |_| {
        Some("inline_bitpacking(64)")
    }));
    // Unsigned with the top bit set in a few values: must not be truncated.
    let mut v: Vec<u32> = (0..N).map(|_| g.below(16) as u32).collect();
    v[1024] = u32::MAX;
    run(Case::new("bitpack_u32_outlier", Arc::new(UInt32Array::from(v)), |_| None));
}

#[test]
fn bitpacking_negative_ints() {
    let mut g = Lcg(5);
    run(Case::new(
        "small_negative_i32",
        Arc::new(Int32Array::from((0..N).map(|_| g.below(100) as i32 - 50).collect::<Vec<_>>())),
        |_| None,
    ));
    run(Case::new(
        "small_negative_i64",
        Arc::new(Int64Array::from((0..N).map(|_| g.below(7) as i64 - 3).collect::<Vec<_>>())),
        |_| None,
    ));
}

#[test]
fn rle_runs() {
    let mut g = Lcg(6);
    let v: Vec<i32> = (0..N / 100).flat_map(|_| std::iter::repeat_n(g.next() as i32, 100)).collect();
    run(Case::new("rle_i32", Arc::new(Int32Array::from(v)), |_| Some("rle(32)")));
    let v: Vec<u8> = (0..N / 50).flat_map(|_| std::iter::repeat_n(g.next() as u8, 50)).collect();
    run(Case::new("rle_u8", Arc::new(UInt8Array::from(v)), |_| None));
}

#[test]
fn constant_pages() {
    // 2.2 writes constant pages; 2.1 has no constant layout for non-null values.
    run(Case::new("constant_i64", Arc::new(Int64Array::from(vec![-7i64; N])), |v| {
        (v == FileVersion::V2_2).then_some("constant(inline 8 bytes)")
    }));
    run(Case::new("constant_string", Arc::new(StringArray::from(vec!["ünïcödé"; N])), |v| {
        (v == FileVersion::V2_2).then_some("constant")
    }));
    run(Case::new("constant_empty_string", Arc::new(StringArray::from(vec![""; N])), |_| None));
    let wide = Decimal128Array::from(vec![i128::MIN + 1; N]).with_precision_and_scale(38, 0).unwrap();
    run(Case::new("constant_decimal", Arc::new(wide), |_| None));
    run(Case::new("constant_bool", Arc::new(BooleanArray::from(vec![true; N])), |v| {
        (v == FileVersion::V2_2).then_some("constant")
    }));
}

#[test]
fn all_null_pages() {
    run(Case::new("all_null_i32", Arc::new(Int32Array::from(vec![None::<i32>; N])), |_| Some("constant")));
    run(Case::new("all_null_string", Arc::new(StringArray::from(vec![None::<&str>; N])), |_| Some("constant")));
    run(Case::new("null_type", Arc::new(NullArray::new(N)), |_| Some("constant")));
}

#[test]
fn dictionary_strings() {
    let pool = ["red", "green", "blue", "", "ünïcödé", "a much longer category name"];
    let mut g = Lcg(7);
    let a = StringArray::from((0..N).map(|_| pool[g.below(pool.len() as u64) as usize]).collect::<Vec<_>>());
    run(Case::new("dictionary_string", Arc::new(a), |_| Some("dictionary=")));
}

#[test]
fn dictionary_fixed_width() {
    let mut g = Lcg(8);
    let pool: Vec<[u8; 16]> = (0..7).map(|i| [i as u8 * 37; 16]).collect();
    let mut b = FixedSizeBinaryBuilder::new(16);
    for _ in 0..N {
        b.append_value(pool[g.below(7) as usize]).unwrap();
    }
    run(Case::new("dictionary_fsb16", Arc::new(b.finish()), |_| Some("dictionary=")));
    let v: Vec<u64> = (0..N).map(|_| [1u64 << 60, 3 << 61, 12345678901234, 99][g.below(4) as usize]).collect();
    run(Case::new("dictionary_u64", Arc::new(UInt64Array::from(v)), |v| (v == FileVersion::V2_2).then_some("dictionary=")));
}

#[test]
fn variable_plain_strings_and_binary() {
    run(Case::new("variable_string", Arc::new(strings(2000, 9, 0, 12, LETTERS)), |_| Some("variable(32)")));
    let s = strings(2000, 10, 0, 12, LETTERS);
    let large = LargeStringArray::from(s.iter().collect::<Vec<_>>());
    run(Case::new("variable_large_string", Arc::new(large), |_| Some("variable(64)")));
    let mut g = Lcg(11);
    let bins: Vec<Vec<u8>> = (0..N).map(|_| (0..g.below(20)).map(|_| g.next() as u8).collect()).collect();
    let b = BinaryArray::from(bins.iter().map(|v| v.as_slice()).collect::<Vec<_>>());
    run(Case::new("variable_binary", Arc::new(b), |_| None));
    let lb = LargeBinaryArray::from(bins.iter().map(|v| v.as_slice()).collect::<Vec<_>>());
    run(Case::new("variable_large_binary", Arc::new(lb), |_| None));
}

#[test]
fn fsst_text() {
    run(Case::new("fsst_text", Arc::new(strings(N, 12, 5, 120, WORDS)), |_| Some("fsst(")));
}

#[test]
fn fullzip_wide_strings() {
    let mut g = Lcg(13);
    let random = StringArray::from(
        (0..600)
            .map(|_| (0..300 + g.below(200)).map(|_| (b'!' + g.below(90) as u8) as char).collect::<String>())
            .collect::<Vec<_>>(),
    );
    run(Case::new("fullzip_variable", Arc::new(random), |_| Some("fullzip(variable)")));
    run(Case::new("fullzip_fsst", Arc::new(strings(600, 14, 300, 900, WORDS)), |_| Some("fullzip(fsst)")));
}

#[test]
fn fullzip_zstd_huge_values() {
    let vals: Vec<String> = (0..40).map(|i| format!("{i} ").repeat(12_000 + i * 100)).collect();
    run(Case::new("fullzip_zstd", Arc::new(LargeStringArray::from(vals)), |_| Some("fullzip(general(Zstd")));
}

#[test]
fn fullzip_vectors() {
    run(Case::new("fullzip_fsl_f32_128", Arc::new(f32_vectors(2000, 128, 15)), |_| Some("fullzip(fixed_size_list(128")));
    run(Case::new("fullzip_fsl_f32_4096", Arc::new(f32_vectors(64, 4096, 16)), |_| Some("fullzip(fixed_size_list(4096")));
}

/// Vectors without nulls in local files are taken by copying each row's bytes into place
/// (`FileReader::fixed_rows`); with nulls (control words), or in object stores, they are
/// decoded. Every read path is checked on local files too.
#[test]
fn fullzip_vectors_are_gathered_by_copying() {
    let none = HashMap::new();
    let plain: ArrayRef = Arc::new(f32_vectors(3000, 128, 21));
    let binary: ArrayRef = Arc::new(FixedSizeBinaryArray::try_from_iter((0..500u32).map(|i| [i as u8; 300])).unwrap());
    // Incompressible values of 1-6 KB (like small images): full-zip, variable width.
    let mut g = Lcg(22);
    let blobs: Vec<Vec<u8>> = (0..600).map(|_| (0..1000 + g.below(5000)).map(|_| g.next() as u8).collect()).collect();
    let images: ArrayRef = Arc::new(BinaryArray::from_iter_values(blobs.iter()));
    let large: ArrayRef = Arc::new(LargeBinaryArray::from_iter_values(blobs.iter()));
    // (name, values, how rows are copied: Some(width) fixed, Some(None) variable, None decoded)
    let cases = [
        ("gather_plain", plain.clone(), Some(Some(512))),
        ("gather_nulls", with_nulls(&plain, 5), None),
        ("gather_sliced", plain.slice(7, 2500), Some(Some(512))),
        ("gather_fsb", binary, Some(Some(300))),
        ("gather_images", images.clone(), Some(None)),
        ("gather_large_images", large, Some(None)),
        ("gather_image_nulls", with_nulls(&images, 4), None),
    ];
    for (name, array, expect) in cases {
        for version in [FileVersion::V2_1, FileVersion::V2_2] {
            for pages in [None, Some(SMALL_PAGES)] {
                let what = format!("{name} v{version} pages={pages:?} (local)");
                let uri = write_at(local_uri(name), name, &array, &none, version, pages);
                let reader = check_file(&what, &uri, &array, version);
                let direct = reader.direct_rows(0).unwrap();
                if version == FileVersion::V2_1 || expect != Some(None) {
                    // (2.2 may compress large values one by one: those are decoded)
                    assert_eq!(direct.as_ref().map(|f| f.width), expect, "{what}: rows copied");
                }
                let in_memory = FileReader::open(&write(name, &array, &none, version, pages)).unwrap();
                assert!(in_memory.direct_rows(0).unwrap().is_none(), "{what}: object stores decode");
                let _ = std::fs::remove_file(&uri);
            }
        }
    }
    // A row past the end is an error, not a read past the data.
    let uri = write_at(local_uri("gather_errors"), "gather_errors", &plain, &none, FileVersion::V2_1, Some(SMALL_PAGES));
    let reader = FileReader::open(&uri).unwrap();
    let direct = reader.direct_rows(0).unwrap().expect("vectors are gathered");
    let mut out = Gathered::new(&direct, 2);
    let err = reader.gather_rows(&direct, &[3000], &mut out).unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
    reader.gather_rows(&direct, &[2, 0], &mut out).unwrap();
    let got = out.into_array(plain.data_type()).unwrap();
    assert_same("gathered", &take_expected(&plain, &[2, 0]), &got);
    let _ = std::fs::remove_file(&uri);
}

#[test]
fn miniblock_small_vectors() {
    run(Case::new("miniblock_fsl_f32_2", Arc::new(f32_vectors(N, 2, 17)), |_| Some("miniblock(values=fixed_size_list(2")));
    run(Case::new("miniblock_fsl_f32_1", Arc::new(f32_vectors(N, 1, 18)), |_| Some("fixed_size_list(1")));
    let mut g = Lcg(19);
    let items = Int8Array::from((0..N * 8).map(|_| g.next() as i8).collect::<Vec<_>>());
    let fsl = FixedSizeListArray::new(Arc::new(Field::new("item", DataType::Int8, true)), 8, Arc::new(items), None);
    run(Case::new("miniblock_fsl_i8_8", Arc::new(fsl), |_| Some("fixed_size_list(8")));
}

#[test]
fn vectors_with_null_items() {
    let mut g = Lcg(20);
    let items = Float32Array::from((0..N * 4).map(|_| (g.below(5) != 0).then(|| g.next() as f32)).collect::<Vec<_>>());
    let fsl = FixedSizeListArray::new(Arc::new(Field::new("item", DataType::Float32, true)), 4, Arc::new(items), None);
    run(Case::new("fsl_nullable_items", Arc::new(fsl), |_| Some("nullable items")));
}

#[test]
fn wide_vectors_with_null_items() {
    // Full-zip is not used for vectors with null items, so these go to mini-block even
    // though one row is 32 KiB (2.1 limits a chunk to 32 KiB).
    let mut g = Lcg(28);
    let dim = 4096;
    let items = Float64Array::from((0..20 * dim).map(|_| (g.below(5) != 0).then(|| g.next() as f64)).collect::<Vec<_>>());
    let fsl = FixedSizeListArray::new(Arc::new(Field::new("item", DataType::Float64, true)), dim as i32, Arc::new(items), None);
    run(Case::new("fsl_f64_4096_nullable_items", Arc::new(fsl), |_| None));
    let items = Float32Array::from((0..3000 * 128).map(|_| (g.below(5) != 0).then(|| g.next() as f32)).collect::<Vec<_>>());
    let fsl = FixedSizeListArray::new(Arc::new(Field::new("item", DataType::Float32, true)), 128, Arc::new(items), None);
    run(Case::new("fsl_f32_128_nullable_items", Arc::new(fsl), |_| None));
}

#[test]
fn dictionary_typed_input() {
    // dictionary<int, string> columns keep their type; values must match (the dictionary
    // itself may be rebuilt).
    let mut g = Lcg(29);
    let pool = ["a", "bb", "", "ünï", "long value long value long value "];
    for key in [DataType::Int8, DataType::Int16, DataType::Int32, DataType::Int64, DataType::UInt16] {
        let values: Vec<&str> = (0..N).map(|_| pool[g.below(pool.len() as u64) as usize]).collect();
        let plain: ArrayRef = Arc::new(StringArray::from(values));
        let dict =
            arrow_array::DictionaryArray::<Int32Type>::from_iter(plain.as_any().downcast_ref::<StringArray>().unwrap().iter());
        let dict: ArrayRef = Arc::new(dict);
        let keyed = match key {
            DataType::Int32 => dict,
            _ => {
                let d = dict.as_any_dictionary();
                let keys: ArrayRef = match key {
                    DataType::Int8 => Arc::new(Int8Array::from_iter(d.normalized_keys().iter().map(|&k| k as i8))),
                    DataType::Int16 => Arc::new(Int16Array::from_iter(d.normalized_keys().iter().map(|&k| k as i16))),
                    DataType::Int64 => Arc::new(Int64Array::from_iter(d.normalized_keys().iter().map(|&k| k as i64))),
                    _ => Arc::new(arrow_array::UInt16Array::from_iter(d.normalized_keys().iter().map(|&k| k as u16))),
                };
                let data = arrow_data::ArrayData::builder(DataType::Dictionary(Box::new(key.clone()), Box::new(DataType::Utf8)))
                    .len(N)
                    .add_buffer(keys.to_data().buffers()[0].clone())
                    .add_child_data(d.values().to_data())
                    .build()
                    .unwrap();
                arrow_array::make_array(data)
            }
        };
        run(Case::new("dictionary_typed", keyed, |_| Some("dictionary=")));
    }
}

#[test]
fn hint_compression_zstd_lz4_none() {
    let mut g = Lcg(21);
    let small: Vec<i32> = (0..N).map(|_| g.below(1000) as i32).collect();
    run(Case::new("hint_zstd_i32", Arc::new(Int32Array::from(small.clone())), |_| Some("general(zstd"))
        .meta("lance-encoding:compression", "zstd"));
    run(Case::new("hint_zstd_level", Arc::new(Int32Array::from(small.clone())), |_| Some("zstd(7)"))
        .meta("lance-encoding:compression", "zstd")
        .meta("lance-encoding:compression-level", "7"));
    run(Case::new("hint_lz4_string", Arc::new(strings(N, 22, 0, 30, WORDS)), |_| Some("general(lz4"))
        .meta("lance-encoding:compression", "lz4"));
    run(Case::new("hint_none_i32", Arc::new(Int32Array::from(small)), |_| Some("values=flat(32)"))
        .meta("lance-encoding:compression", "none"));
    let f: Vec<f64> = (0..N).map(|i| (i as f64).sin()).collect();
    run(Case::new("hint_zstd_f64_bss", Arc::new(Float64Array::from(f)), |_| Some("byte_stream_split(64)"))
        .meta("lance-encoding:compression", "zstd"));
}

#[test]
fn hint_structural_fullzip_ints() {
    let mut g = Lcg(23);
    let small: Vec<i32> = (0..N).map(|_| g.below(1000) as i32).collect();
    run(Case::new("hint_fullzip_i32", Arc::new(Int32Array::from(small)), |_| Some("fullzip(fixed(32 bits))"))
        .meta("lance-encoding:structural-encoding", "fullzip"));
}

#[test]
fn hint_structural_fullzip_strings() {
    // compression=none: FSST training on 10 000 strings is very slow in debug builds; full-zip
    // with FSST has its own case (fullzip_wide_strings).
    run(Case::new("hint_fullzip_strings", Arc::new(strings(N, 24, 0, 20, LETTERS)), |_| Some("fullzip(variable)"))
        .meta("lance-encoding:structural-encoding", "fullzip")
        .meta("lance-encoding:compression", "none"));
}

#[test]
fn hint_structural_miniblock_wide_strings() {
    let wide = strings(300, 25, 300, 400, LETTERS);
    // 2.1 mini-block chunks are limited to 32 KiB; a few 400-byte values fit.
    run(Case::new("hint_miniblock_wide", Arc::new(wide), |_| Some("miniblock("))
        .meta("lance-encoding:structural-encoding", "miniblock"));
}

#[test]
fn hint_structural_miniblock_vectors() {
    run(Case::new("hint_miniblock_vectors", Arc::new(f32_vectors(500, 128, 26)), |_| Some("miniblock("))
        .meta("lance-encoding:structural-encoding", "miniblock"));
}

#[test]
fn temporal_types() {
    let v = ints_full_range(N, 27);
    let ts = TimestampNanosecondArray::from(v.clone()).with_timezone("Europe/Paris");
    run(Case::new("timestamp_ns_tz", Arc::new(ts), |_| None));
    let d = arrow_array::Date32Array::from(v.iter().map(|&x| (x % 1_000_000) as i32).collect::<Vec<_>>());
    run(Case::new("date32", Arc::new(d), |_| None));
}

// ---------------------------------------------------------------------------------------------
// Property tests
// ---------------------------------------------------------------------------------------------

fn version_strategy() -> impl Strategy<Value = FileVersion> {
    prop_oneof![Just(FileVersion::V2_1), Just(FileVersion::V2_2)]
}

fn page_strategy() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![Just(None), (64u64..32_768).prop_map(Some)]
}

/// Writes, then checks full read, one random range and one random take.
fn prop_check(
    array: ArrayRef,
    version: FileVersion,
    pages: Option<u64>,
    range: (usize, usize),
    take: Vec<usize>,
) -> Result<(), TestCaseError> {
    let n = array.len();
    let uri = write("prop", &array, &HashMap::new(), version, pages);
    let reader = FileReader::open(&uri).map_err(|e| TestCaseError::fail(format!("open: {e}")))?;
    let fields = reader.projection(None).unwrap();
    let all = reader.read_range(0, n as u64, &fields).map_err(|e| TestCaseError::fail(format!("read: {e}")))?;
    prop_assert_eq!(all.column(0).as_ref(), array.as_ref());
    let start = range.0.min(n);
    let len = range.1.min(n - start);
    let got = reader.read_range(start as u64, len as u64, &fields).map_err(|e| TestCaseError::fail(format!("range: {e}")))?;
    let expected = array.slice(start, len);
    prop_assert_eq!(got.column(0).as_ref(), expected.as_ref());
    if n > 0 {
        let rows: Vec<u64> = take.iter().map(|&t| (t % n) as u64).collect();
        let got = reader.take(&rows, &fields).map_err(|e| TestCaseError::fail(format!("take: {e}")))?;
        let expected = take_expected(&array, &rows);
        prop_assert_eq!(got.column(0).as_ref(), expected.as_ref());
    }
    Ok(())
}

fn take_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(any::<usize>(), 0..40)
}

proptest! {
    // Fewer cases in unoptimised builds (plain `cargo test`), more with --release / --profile quick.
    #![proptest_config(ProptestConfig { cases: if cfg!(debug_assertions) { 16 } else { 64 }, ..ProptestConfig::default() })]

    #[test]
    fn prop_int64(v in prop::collection::vec(prop::option::weighted(0.8, any::<i64>()), 0..6000),
                  small in any::<bool>(), version in version_strategy(), pages in page_strategy(),
                  range in (0usize..6000, 0usize..6000), take in take_strategy()) {
        let v: Vec<Option<i64>> = if small { v.iter().map(|x| x.map(|y| y % 100)).collect() } else { v };
        prop_check(Arc::new(PrimitiveArray::<Int64Type>::from(v)), version, pages, range, take)?;
    }

    #[test]
    fn prop_int32_runs(runs in prop::collection::vec((prop::option::weighted(0.9, any::<i32>()), 1usize..300), 0..60),
                       version in version_strategy(), pages in page_strategy(),
                       range in (0usize..6000, 0usize..6000), take in take_strategy()) {
        let v: Vec<Option<i32>> = runs.iter().flat_map(|&(x, k)| std::iter::repeat_n(x, k)).collect();
        prop_check(Arc::new(PrimitiveArray::<Int32Type>::from(v)), version, pages, range, take)?;
    }

    #[test]
    fn prop_u64(v in prop::collection::vec(prop::option::weighted(0.95, any::<u64>()), 0..5000),
                shift in 0u32..64, version in version_strategy(), pages in page_strategy(),
                range in (0usize..5000, 0usize..5000), take in take_strategy()) {
        let v: Vec<Option<u64>> = v.iter().map(|x| x.map(|y| y >> shift)).collect();
        prop_check(Arc::new(PrimitiveArray::<UInt64Type>::from(v)), version, pages, range, take)?;
    }

    #[test]
    fn prop_f32_bits(v in prop::collection::vec(prop::option::weighted(0.9, any::<u32>()), 0..5000),
                     version in version_strategy(), pages in page_strategy(),
                     range in (0usize..5000, 0usize..5000), take in take_strategy()) {
        // Arbitrary bit patterns: NaN payloads, -0.0, subnormals must survive.
        let v: Vec<Option<f32>> = v.iter().map(|x| x.map(f32::from_bits)).collect();
        prop_check(Arc::new(PrimitiveArray::<Float32Type>::from(v)), version, pages, range, take)?;
    }

    #[test]
    fn prop_strings(v in prop::collection::vec(prop::option::weighted(0.85, ".{0,40}"), 0..3000),
                    version in version_strategy(), pages in page_strategy(),
                    range in (0usize..3000, 0usize..3000), take in take_strategy()) {
        prop_check(Arc::new(StringArray::from(v)), version, pages, range, take)?;
    }

    #[test]
    fn prop_low_cardinality_strings(idx in prop::collection::vec(prop::option::weighted(0.9, 0usize..5), 0..5000),
                                    pool in prop::collection::vec(".{0,12}", 5),
                                    version in version_strategy(), pages in page_strategy(),
                                    range in (0usize..5000, 0usize..5000), take in take_strategy()) {
        let v: Vec<Option<&str>> = idx.iter().map(|i| i.map(|i| pool[i].as_str())).collect();
        prop_check(Arc::new(StringArray::from(v)), version, pages, range, take)?;
    }

    #[test]
    fn prop_wide_binary(v in prop::collection::vec(prop::option::weighted(0.9, prop::collection::vec(any::<u8>(), 0..700)), 0..200),
                        version in version_strategy(), pages in page_strategy(),
                        range in (0usize..200, 0usize..200), take in take_strategy()) {
        let a = LargeBinaryArray::from(v.iter().map(|x| x.as_deref()).collect::<Vec<_>>());
        prop_check(Arc::new(a), version, pages, range, take)?;
    }

    #[test]
    fn prop_bool(v in prop::collection::vec(prop::option::weighted(0.9, any::<bool>()), 0..9000),
                 version in version_strategy(), pages in page_strategy(),
                 range in (0usize..9000, 0usize..9000), take in take_strategy()) {
        prop_check(Arc::new(BooleanArray::from(v)), version, pages, range, take)?;
    }

    #[test]
    fn prop_vectors(dim in 1i32..40, rows in 0usize..800, nulls in any::<bool>(), seed in any::<u64>(),
                    version in version_strategy(), pages in page_strategy(),
                    range in (0usize..800, 0usize..800), take in take_strategy()) {
        let mut g = Lcg(seed);
        let items = Float32Array::from((0..rows * dim as usize).map(|_| g.next() as u32 as f32).collect::<Vec<_>>());
        let validity = nulls.then(|| NullBuffer::from((0..rows).map(|_| g.below(4) != 0).collect::<Vec<_>>()));
        let fsl = FixedSizeListArray::new(Arc::new(Field::new("item", DataType::Float32, true)), dim, Arc::new(items), validity);
        prop_check(Arc::new(fsl), version, pages, range, take)?;
    }
}
