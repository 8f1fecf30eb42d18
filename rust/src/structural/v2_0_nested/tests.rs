//! Round trips of 2.0 nested columns through the file writer and reader, the bytes reads
//! fetch, and damaged input.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::builder::{Int32Builder, ListBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, Int32Array, Int64Array, LargeListArray, ListArray, RecordBatch,
    StructArray, UInt32Array,
};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields, Schema};
use prost::Message;

use super::read::{merge, split_offset};
use super::write::page_rows;
use super::*;
use crate::error::{Error, Result};
use crate::file::reader::FileReader;
use crate::file::writer::{FileWriter, WriterOptions};
use crate::format::enc20::array_encoding::ArrayEncoding as Pb;
use crate::format::{enc20, FileVersion, TYPE_URL_ARRAY_ENCODING};
use crate::io::{BufferReader, Reader};
use crate::schema::LanceSchema;
use crate::structural::v2_0;

/// A reader over file bytes that counts the bytes read.
#[derive(Debug)]
struct CountingReader {
    inner: BufferReader,
    bytes: AtomicU64,
}

impl Reader for CountingReader {
    fn path(&self) -> &str {
        self.inner.path()
    }
    fn size(&self) -> Result<u64> {
        self.inner.size()
    }
    fn read_range(&self, range: Range<u64>) -> Result<Buffer> {
        self.bytes.fetch_add(range.end - range.start, Ordering::Relaxed);
        self.inner.read_range(range)
    }
    fn coalesce_gap(&self) -> u64 {
        0
    }
}

/// Writes `batch` as a 2.0 file (pages of about `page_bytes`) and returns its bytes.
fn write(batch: &RecordBatch, page_bytes: u64) -> Vec<u8> {
    let uri = format!("memory://v2_0_nested-{}/f.lance", uuid::Uuid::new_v4().simple());
    let options = WriterOptions { version: FileVersion::V2_0, max_page_bytes: page_bytes, ..Default::default() };
    let mut w = FileWriter::try_new(&uri, &batch.schema(), options).unwrap();
    w.write_batch(batch).unwrap();
    w.finish().unwrap();
    let r = crate::io::open_reader(&uri).unwrap();
    r.read_range(0..r.size().unwrap()).unwrap().as_slice().to_vec()
}

fn open(bytes: &[u8]) -> (FileReader, Arc<CountingReader>) {
    let io = Arc::new(CountingReader { inner: BufferReader::new("test.lance", Buffer::from(bytes)), bytes: AtomicU64::new(0) });
    (FileReader::open_with(io.clone()).unwrap(), io)
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns.into_iter().map(|(n, a)| (n.to_string(), a))).unwrap()
}

fn list_of_ints(n: usize) -> ArrayRef {
    let mut b = ListBuilder::new(Int32Builder::new());
    for i in 0..n {
        match i % 7 {
            3 => b.append(false),
            4 => b.append(true),
            _ => {
                for j in 0..(i % 5) {
                    b.values().append_option((j != 2).then_some((i * 10 + j) as i32));
                }
                b.append(true);
            }
        }
    }
    Arc::new(b.finish())
}

fn list_of_strings(n: usize) -> ArrayRef {
    let mut b = ListBuilder::new(StringBuilder::new());
    for i in 0..n {
        if i % 9 == 4 {
            b.append(false);
            continue;
        }
        for j in 0..(i % 4) {
            b.values().append_option((j != 1).then(|| format!("s{i}-{j}")));
        }
        b.append(true);
    }
    Arc::new(b.finish())
}

fn struct_of(children: Vec<(&str, ArrayRef)>) -> ArrayRef {
    let fields: Vec<Field> = children.iter().map(|(n, a)| Field::new(*n, a.data_type().clone(), true)).collect();
    Arc::new(StructArray::new(Fields::from(fields), children.into_iter().map(|(_, a)| a).collect(), None))
}

fn sample_batch(n: usize) -> RecordBatch {
    let items: ArrayRef = Arc::new(Float32Array::from_iter((0..n * 2).map(|i| (i % 3 != 1).then_some(i as f32))));
    let fsl: ArrayRef = Arc::new(FixedSizeListArray::new(
        Arc::new(Field::new("item", DataType::Float32, true)),
        2,
        items,
        Some(NullBuffer::from((0..n).map(|i| i % 6 != 0).collect::<Vec<_>>())),
    ));
    // list<struct<a: int32, tags: list<string>>>: structs under a list, a list under those.
    let inner_n = list_of_ints(n).as_list::<i32>().values().len();
    let inner = struct_of(vec![
        ("a", Arc::new(Int32Array::from_iter_values(0..inner_n as i32)) as ArrayRef),
        ("tags", list_of_strings(inner_n)),
    ]);
    let outer = list_of_ints(n);
    let outer = outer.as_list::<i32>();
    let list_struct: ArrayRef = Arc::new(ListArray::new(
        Arc::new(Field::new("item", inner.data_type().clone(), true)),
        outer.offsets().clone(),
        inner,
        outer.nulls().cloned(),
    ));
    let large: ArrayRef = {
        let l = list_of_strings(n);
        let l = l.as_list::<i32>();
        let offsets: Vec<i64> = l.value_offsets().iter().map(|&o| o as i64).collect();
        Arc::new(LargeListArray::new(
            Arc::new(Field::new("item", DataType::Utf8, true)),
            OffsetBuffer::new(offsets.into()),
            l.values().clone(),
            l.nulls().cloned(),
        ))
    };
    batch(vec![
        ("l", list_of_ints(n)),
        ("ls", list_struct),
        (
            "s",
            struct_of(vec![
                ("x", Arc::new(Int64Array::from_iter_values(0..n as i64)) as ArrayRef),
                ("l", list_of_strings(n)),
                ("v", fsl),
            ]),
        ),
        ("large", large),
    ])
}

fn take(batch: &RecordBatch, rows: &[u64]) -> RecordBatch {
    let idx = UInt32Array::from(rows.iter().map(|&r| r as u32).collect::<Vec<_>>());
    let columns = batch.columns().iter().map(|c| arrow_select::take::take(c.as_ref(), &idx, None).unwrap()).collect();
    RecordBatch::try_new(batch.schema(), columns).unwrap()
}

#[test]
fn nested_columns_round_trip_with_ranges_and_takes() {
    for (n, page_bytes) in [(0usize, 1u64 << 20), (1, 1 << 20), (500, 1 << 20), (2000, 512)] {
        let b = sample_batch(n);
        let bytes = write(&b, page_bytes);
        let (r, _) = open(&bytes);
        let all: Vec<usize> = (0..4).collect();
        assert_eq!(r.read_range(0, n as u64, &all).unwrap(), b, "n={n}");
        if n > 2 {
            let n64 = n as u64;
            let got = r.read_range(1, n64 - 2, &all).unwrap();
            assert_eq!(got, b.slice(1, n - 2));
            let rows = [n64 - 1, 0, n64 / 2, 0, 3, 4, 5, n64 - 1];
            assert_eq!(r.take(&rows, &all).unwrap(), take(&b, &rows));
        }
        if page_bytes < 1024 {
            // Lists and their items paged independently.
            let d = r.describe().unwrap();
            assert!(d[0].pages.len() > 3 && d[1].pages.len() > 3 && d[0].pages.len() != d[1].pages.len());
        }
    }
    // A sliced input writes what the slice shows.
    let b = sample_batch(300).slice(17, 200);
    let (r, _) = open(&write(&b, 1 << 20));
    assert_eq!(r.read_range(0, 200, &[0, 1, 2, 3]).unwrap(), b);
}

#[test]
fn column_layout_is_every_field_in_pre_order() {
    let b = sample_batch(10);
    let schema = LanceSchema::from_arrow(&b.schema()).unwrap();
    let names: Vec<&str> = schema.fields.iter().flat_map(column_fields).map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["l", "item", "ls", "item", "a", "tags", "item", "s", "x", "l", "item", "v", "large", "item"]);
    let (r, _) = open(&write(&b, 1 << 20));
    assert_eq!(r.num_columns(), names.len());
    let d = r.describe().unwrap();
    let struct_pages: Vec<usize> = (0..d.len()).filter(|&c| d[c].pages.iter().any(|p| p.encoding == "v2.0 struct")).collect();
    assert_eq!(struct_pages, [3, 7]);
    assert!(d[0].pages[0].encoding.starts_with("v2.0 list(offsets=nullable(no_nulls, flat(64)))"));
}

#[test]
fn list_pages_store_relative_end_offsets() {
    // [[1, 2], null, [], [3]] sliced out of a longer array: offsets start at 0 per page.
    let full = list_of_ints(20);
    let field =
        LanceSchema::from_arrow(&Schema::new(vec![Field::new("l", full.data_type().clone(), true)])).unwrap().fields.remove(0);
    let pieces = encode_field(&full.slice(2, 4), &field, 1 << 20).unwrap();
    let ColumnPiece::Page(0, page) = &pieces[0] else { panic!("first piece is not the list page") };
    let enc = enc20::ArrayEncoding::decode(page.encoding.as_slice()).unwrap();
    let Some(Pb::List(l)) = enc.array_encoding else { panic!("not a list page") };
    // Rows 2..6 of list_of_ints: [2 items], null, [], [5 % 5 = 0 items].
    assert_eq!((l.num_items, l.null_offset_adjustment), (2, 3));
    let ends: Vec<u64> = page.buffers[0].as_slice().chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(ends, [2, 2 + 3, 2, 2]);
    let ColumnPiece::Page(1, items) = &pieces[1] else { panic!("second piece is not the items") };
    assert_eq!(items.num_rows, 2);
    // No items at all: an empty item page (as pylance writes).
    let pieces = encode_field(&full.slice(3, 2), &field, 1 << 20).unwrap();
    assert!(matches!(&pieces[1], ColumnPiece::Page(1, p) if p.num_rows == 0 && p.buffers.is_empty()));
}

#[test]
fn a_take_reads_a_few_offsets_and_item_ranges() {
    let n = 50_000;
    let b = batch(vec![("l", list_of_strings(n))]);
    let bytes = write(&b, 64 << 20);
    let (r, io) = open(&bytes);
    let d = r.describe().unwrap();
    assert_eq!((d[0].pages.len(), d[1].pages.len()), (1, 1));
    let before = io.bytes.load(Ordering::Relaxed);
    let rows = [7u64, 8, 30_000, 49_999];
    assert_eq!(r.take(&rows, &[0]).unwrap(), take(&b, &rows));
    let read = io.bytes.load(Ordering::Relaxed) - before;
    // Offsets of 4 rows and the item indices and bytes they cover: well under 1 KiB,
    // against several hundred KiB of pages.
    assert!(read < 1024, "{read} bytes read for 4 rows of a {}-byte file", bytes.len());
}

/// `bytes` with `value` written at `at`.
fn patched(bytes: &[u8], at: u64, value: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[at as usize..at as usize + value.len()].copy_from_slice(value);
    out
}

fn expect_corrupt(bytes: &[u8], rows: &[u64]) {
    let (r, _) = open(bytes);
    match r.read_range(0, r.num_rows(), &[0]) {
        Err(Error::Corrupt(_)) => {}
        other => panic!("expected a corrupt-data error from a full read, got {other:?}"),
    }
    match r.take(rows, &[0]) {
        Err(Error::Corrupt(_)) => {}
        other => panic!("expected a corrupt-data error from a take of {rows:?}, got {other:?}"),
    }
}

#[test]
fn damaged_offsets_are_corrupt_errors() {
    let b = batch(vec![("l", list_of_ints(50))]);
    let bytes = write(&b, 1 << 20);
    let (r, _) = open(&bytes);
    let (pos, size) = r.describe().unwrap()[0].pages[0].buffers[0];
    assert_eq!(size, 50 * 8);
    // An end beyond the page's items, a decreasing end, an end that wraps a null adjustment.
    for (row, value) in [(5u64, 1u64 << 40), (9, 0), (12, u64::MAX)] {
        let bad = patched(&bytes, pos + row * 8, &value.to_le_bytes());
        expect_corrupt(&bad, &[row]);
        let (r, _) = open(&bad);
        assert_eq!(r.take(&[0, 1], &[0]).unwrap(), take(&b, &[0, 1]));
    }
}

/// Rewrites the file's column metadata through `edit` (a test-only re-encoding of the tail).
fn with_metadata(bytes: &[u8], edit: impl Fn(usize, &mut crate::format::file2::ColumnMetadata)) -> Vec<u8> {
    use crate::file::container::{Footer, FOOTER_LEN};
    use crate::format::file2;
    let footer = Footer::parse(&bytes[bytes.len() - FOOTER_LEN..], bytes.len() as u64, "t").unwrap();
    let cmo = &bytes[footer.cmo_table_pos as usize..footer.cmo_table_pos as usize + footer.num_columns as usize * 16];
    let mut out = bytes[..footer.column_meta_start as usize].to_vec();
    let mut table = Vec::new();
    for (i, e) in cmo.chunks_exact(16).enumerate() {
        let pos = u64::from_le_bytes(e[..8].try_into().unwrap()) as usize;
        let len = u64::from_le_bytes(e[8..].try_into().unwrap()) as usize;
        let mut meta = file2::ColumnMetadata::decode(&bytes[pos..pos + len]).unwrap();
        edit(i, &mut meta);
        let m = meta.encode_to_vec();
        table.push((out.len() as u64, m.len() as u64));
        out.extend_from_slice(&m);
    }
    let cmo_table_pos = out.len() as u64;
    for (p, l) in table {
        out.extend_from_slice(&p.to_le_bytes());
        out.extend_from_slice(&l.to_le_bytes());
    }
    let gbo_table_pos = out.len() as u64;
    let gbo = &bytes[footer.gbo_table_pos as usize..footer.gbo_table_pos as usize + footer.num_global_buffers as usize * 16];
    out.extend_from_slice(gbo);
    let f = Footer { cmo_table_pos, gbo_table_pos, ..footer };
    out.extend_from_slice(&f.to_bytes());
    out
}

fn page_encoding(meta: &crate::format::file2::ColumnMetadata, page: usize) -> enc20::ArrayEncoding {
    use crate::format::file2::encoding::Location;
    let Some(Location::Direct(d)) = meta.pages[page].encoding.as_ref().and_then(|e| e.location.as_ref()) else {
        panic!("no direct encoding")
    };
    let any = prost_types::Any::decode(d.encoding.clone()).unwrap();
    enc20::ArrayEncoding::decode(any.value.as_slice()).unwrap()
}

fn set_page_encoding(meta: &mut crate::format::file2::ColumnMetadata, page: usize, enc: &enc20::ArrayEncoding) {
    use crate::format::file2;
    let any = prost_types::Any { type_url: TYPE_URL_ARRAY_ENCODING.to_string(), value: enc.encode_to_vec() };
    meta.pages[page].encoding = Some(file2::Encoding {
        location: Some(file2::encoding::Location::Direct(file2::DirectEncoding { encoding: any.encode_to_vec().into() })),
    });
}

fn edit_list(meta: &mut crate::format::file2::ColumnMetadata, f: impl Fn(&mut enc20::List)) {
    let mut enc = page_encoding(meta, 0);
    let Some(Pb::List(l)) = enc.array_encoding.as_mut() else { panic!("not a list page") };
    f(l);
    set_page_encoding(meta, 0, &enc);
}

/// Edits the metadata of column `.0`.
type MetadataEdit = Box<dyn Fn(usize, &mut crate::format::file2::ColumnMetadata)>;

#[test]
fn inconsistent_page_descriptions_are_corrupt_errors() {
    let b = batch(vec![("l", list_of_ints(50)), ("s", struct_of(vec![("x", list_of_ints(50))]))]);
    let bytes = write(&b, 1 << 20);
    assert_eq!(open(&bytes).0.read_range(0, 50, &[0, 1]).unwrap(), b);
    let cases: Vec<MetadataEdit> = vec![
        // More items than the item column holds; fewer (an end then exceeds them).
        Box::new(|c, m| {
            if c == 0 {
                edit_list(m, |l| l.num_items += 1000)
            }
        }),
        Box::new(|c, m| {
            if c == 0 {
                edit_list(m, |l| l.num_items = 3)
            }
        }),
        // A null adjustment of 1 makes every end look null with a wrapped value.
        Box::new(|c, m| {
            if c == 0 {
                edit_list(m, |l| l.null_offset_adjustment = 1)
            }
        }),
        // No offsets, or offsets that point at a missing buffer.
        Box::new(|c, m| {
            if c == 0 {
                edit_list(m, |l| l.offsets = None)
            }
        }),
        Box::new(|c, m| {
            if c == 0 {
                m.pages[0].buffer_offsets.clear();
                m.pages[0].buffer_sizes.clear()
            }
        }),
        // A truncated offsets buffer.
        Box::new(|c, m| {
            if c == 0 {
                m.pages[0].buffer_sizes[0] = 16
            }
        }),
        // The list page says it has more rows than the file.
        Box::new(|c, m| {
            if c == 0 {
                m.pages[0].length += 1
            }
        }),
        // A leaf page where the list page should be, and the other way round.
        Box::new(|c, m| {
            if c == 0 {
                let e = v2_0::no_nulls(enc20::ArrayEncoding::default());
                set_page_encoding(m, 0, &e)
            }
        }),
    ];
    for (i, edit) in cases.iter().enumerate() {
        let bad = with_metadata(&bytes, edit);
        let (r, _) = open(&bad);
        for result in [r.read_range(0, 50, &[0]), r.take(&[2, 40], &[0])] {
            assert!(matches!(result, Err(Error::Corrupt(_))), "case {i}: {result:?}");
        }
        // The other field is unaffected.
        assert_eq!(r.read_range(0, 50, &[1]).unwrap().column(0), b.column(1), "case {i}");
    }
    // Struct columns: a struct page with the wrong row count, or a list page instead.
    const STRUCT_COL: usize = 2; // l, l.item, s
    for edit in [
        Box::new(|c: usize, m: &mut crate::format::file2::ColumnMetadata| {
            if c == STRUCT_COL {
                m.pages[0].length = 7
            }
        }) as MetadataEdit,
        Box::new(|c, m| {
            if c == STRUCT_COL {
                let list = enc20::ArrayEncoding { array_encoding: Some(Pb::List(Box::default())) };
                set_page_encoding(m, 0, &list)
            }
        }),
    ] {
        let (r, _) = open(&with_metadata(&bytes, edit));
        assert!(matches!(r.read_range(0, 50, &[1]), Err(Error::Corrupt(_))));
        assert_eq!(r.read_range(0, 50, &[0]).unwrap().column(0), b.column(0));
    }
}

#[test]
fn refuses_what_2_0_cannot_store() {
    let null_struct: ArrayRef = Arc::new(StructArray::new(
        Fields::from(vec![Field::new("x", DataType::Int32, true)]),
        vec![Arc::new(Int32Array::from(vec![1, 2]))],
        Some(NullBuffer::from(vec![true, false])),
    ));
    let b = batch(vec![("s", null_struct.clone())]);
    let uri = format!("memory://v2_0_nested-{}/f.lance", uuid::Uuid::new_v4().simple());
    let options = WriterOptions { version: FileVersion::V2_0, max_page_bytes: 1 << 20, ..Default::default() };
    let mut w = FileWriter::try_new(&uri, &b.schema(), options.clone()).unwrap();
    let e = w.write_batch(&b).unwrap_err();
    assert!(matches!(&e, Error::InvalidInput(m) if m.contains("struct validity")), "{e}");
    // Under a list, too.
    let list: ArrayRef = Arc::new(ListArray::new(
        Arc::new(Field::new("item", null_struct.data_type().clone(), true)),
        OffsetBuffer::from_lengths([2]),
        null_struct,
        None,
    ));
    let b = batch(vec![("l", list)]);
    let mut w = FileWriter::try_new(&uri, &b.schema(), options.clone()).unwrap();
    assert!(matches!(w.write_batch(&b), Err(Error::InvalidInput(_))));
    // Fixed-size lists of structs.
    let st = DataType::Struct(Fields::from(vec![Field::new("x", DataType::Int32, true)]));
    let schema = Schema::new(vec![Field::new("f", DataType::FixedSizeList(Arc::new(Field::new("item", st, true)), 2), true)]);
    assert!(matches!(FileWriter::try_new(&uri, &schema, options), Err(Error::NotSupported(_))));
}

#[test]
fn merges_touching_ranges() {
    assert_eq!(merge([0..2, 1..3, 3..4, 6..6, 7..9]), vec![0..4, 7..9]);
    assert_eq!(page_local(&[0..2, 3..5, 6..6, 7..12, 20..30], 4, 10), vec![0..1, 3..6]);
    assert_eq!(page_local(&[0..2, 2..3], 4, 10), Vec::<Range<u64>>::new());
    assert_eq!(split_offset(10, 7), (false, 3));
    assert_eq!(split_offset(6, 7), (true, 6));
    assert_eq!(split_offset(5, 0), (true, 5));
    assert_eq!(page_rows(0, 0, 10), vec![0..0]);
    assert_eq!(page_rows(10, 25, 10), vec![0..4, 4..8, 8..10]);
}
