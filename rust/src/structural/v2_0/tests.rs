//! Round trips and damaged input for 2.0 pages.

#![allow(unused_imports)]

use std::ops::Range;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, ArrayRef};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, Buffer, MutableBuffer, NullBuffer};
use arrow_schema::DataType;
use prost::Message;

use super::encode::*;
use super::parse::*;
use super::ranged::*;
use crate::encodings::bitpacking::{with_word_type, Word};
use crate::encodings::block::read_uint;
use crate::encodings::{fsst, DataBlock, FixedSizeListBlock, FixedWidthBlock, GeneralScheme, VariableWidthBlock};
use crate::error::{Error, Result};
use crate::format::enc20;
use crate::format::enc20::array_encoding::ArrayEncoding as Pb;
use crate::format::enc20::nullable::Nullability;
use crate::format::TYPE_URL_ARRAY_ENCODING;
use crate::kernels::bitpack::{self, BLOCK_LEN};
use crate::kernels::fsst::SymbolTable;
use crate::schema::FieldHints;
use crate::schema::LanceField;
use crate::schema::LeafKind;
use crate::structural::miniblock::DecodedChunk;
use crate::structural::page::EncodedPage;

use arrow_array::builder::{FixedSizeListBuilder, Float32Builder};
use arrow_array::types::{Int16Type, Int32Type, Int8Type, UInt8Type};
use arrow_array::{
    make_array, BinaryArray, BooleanArray, DictionaryArray, Int32Array, Int64Array, LargeBinaryArray, LargeStringArray,
    NullArray, StringArray, UInt32Array,
};
use arrow_data::ArrayDataBuilder;
use arrow_schema::{Field, Schema, TimeUnit};

use super::*;
use crate::schema::LanceSchema;
use crate::structural::assemble::assemble;
use crate::structural::builder::{LeafBuilder, Selection};

/// Runs of consecutive values in sorted, distinct `rows`.
fn row_runs(rows: &[u64]) -> Vec<Range<u64>> {
    let mut runs: Vec<Range<u64>> = Vec::new();
    for &r in rows {
        match runs.last_mut() {
            Some(run) if run.end == r => run.end += 1,
            _ => runs.push(r..r + 1),
        }
    }
    runs
}

/// A deterministic pseudo-random byte stream.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 11
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn field_of(dt: &DataType, metadata: &[(&str, &str)]) -> LanceField {
    let md: std::collections::HashMap<String, String> = metadata.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let schema = Schema::new(vec![Field::new("c", dt.clone(), true).with_metadata(md)]);
    LanceSchema::from_arrow(&schema).unwrap().fields.remove(0)
}

/// Nulls at every `every`-th position (none when 0, all when 1).
fn nulls(n: usize, every: usize) -> Option<NullBuffer> {
    (every > 0).then(|| NullBuffer::from((0..n).map(|i| i % every != 0).collect::<Vec<bool>>()))
}

/// A fixed-width array of pseudo-random bytes.
fn fixed_array(dt: DataType, n: usize, null_every: usize, seed: u64) -> ArrayRef {
    let width = match &dt {
        DataType::FixedSizeBinary(w) => *w as usize,
        dt => dt.primitive_width().unwrap(),
    };
    let data = Lcg(seed).bytes(n * width);
    let d =
        ArrayDataBuilder::new(dt).len(n).add_buffer(Buffer::from(data.as_slice())).nulls(nulls(n, null_every)).build().unwrap();
    make_array(d)
}

fn encoded(array: &ArrayRef, metadata: &[(&str, &str)]) -> (enc20::ArrayEncoding, Vec<Buffer>) {
    let page = encode_page(array, &field_of(array.data_type(), metadata)).unwrap();
    assert_eq!(page.type_url, TYPE_URL_ARRAY_ENCODING);
    assert_eq!(page.num_rows, array.len() as u64);
    (enc20::ArrayEncoding::decode(page.encoding.as_slice()).unwrap(), page.buffers)
}

fn build(chunk: &DecodedChunk, dt: &DataType) -> ArrayRef {
    let kind = LeafKind::of(dt).unwrap();
    let mut b = LeafBuilder::new(kind, 0);
    b.append(&chunk.values, chunk.def.as_deref(), Selection::All).unwrap();
    assemble(&field_of(dt, &[]), vec![b.finish(dt).unwrap()]).unwrap()
}

/// A file image holding the page buffers (64-byte aligned) and a fetch function over it.
fn file_image(buffers: &[Buffer]) -> (Vec<u8>, Vec<(u64, u64)>) {
    let mut file = vec![0x48u8; 64]; // buffers never start at 0 here
    let mut locations = Vec::new();
    for b in buffers {
        locations.push((file.len() as u64, b.len() as u64));
        file.extend_from_slice(b.as_slice());
        file.resize(file.len().next_multiple_of(64), 0x48);
    }
    (file, locations)
}

fn read_via_ranges(enc: &enc20::ArrayEncoding, buffers: &[Buffer], n: u64, dt: &DataType, rows: &[Range<u64>]) -> ArrayRef {
    let (file, locations) = file_image(buffers);
    let calls = std::cell::Cell::new(0usize);
    let fetch = |ranges: &[Range<u64>]| -> Result<Vec<Buffer>> {
        calls.set(calls.get() + 1);
        Ok(ranges.iter().map(|r| Buffer::from(&file[r.start as usize..r.end as usize])).collect())
    };
    let src = PageSource { locations: &locations, loaded: &[], fetch: &fetch };
    let chunk = read_rows(enc, &src, n, &LeafKind::of(dt).unwrap(), dt, rows).unwrap();
    build(&chunk, dt)
}

fn expected_rows(array: &ArrayRef, rows: &[Range<u64>]) -> ArrayRef {
    let idx: Vec<u32> = rows.iter().flat_map(|r| r.start as u32..r.end as u32).collect();
    arrow_select::take::take(array.as_ref(), &UInt32Array::from(idx), None).unwrap()
}

/// Dictionary arrays compare by value: the reader re-encodes them.
fn plain(a: &ArrayRef) -> ArrayRef {
    match a.data_type() {
        DataType::Dictionary(_, _) => {
            let d = a.as_any_dictionary();
            let keys: Vec<Option<u32>> =
                (0..a.len()).map(|i| d.keys().is_valid(i).then(|| d.normalized_keys()[i] as u32)).collect();
            arrow_select::take::take(d.values().as_ref(), &UInt32Array::from(keys), None).unwrap()
        }
        _ => a.clone(),
    }
}

/// Encodes, decodes whole, reads ranges and takes by byte ranges and from memory, and
/// checks every result against the input. Returns the encoding's description.
fn round_trip_with(array: ArrayRef, metadata: &[(&str, &str)]) -> String {
    let dt = array.data_type().clone();
    let n = array.len() as u64;
    let (enc, buffers) = encoded(&array, metadata);
    let indexing = DictionaryIndices::for_type(&dt);
    let kind = LeafKind::of(&dt).unwrap();
    let whole = decode_page_with(&enc, &buffers, n, &kind, indexing).unwrap();
    let out = build(&whole, &dt);
    assert_eq!(out.data_type(), &dt);
    assert_eq!(&plain(&out), &plain(&array), "whole page of {dt} ({})", describe(&enc));
    let mut selections: Vec<Vec<Range<u64>>> = vec![vec![0..n]];
    if n > 0 {
        selections.push(vec![0..1]);
        selections.push(vec![n - 1..n]);
        selections.push(vec![n / 3..n / 2 + 1]);
        let picks: Vec<u64> = [0, 1, 2, n / 2, n / 2 + 1, n.saturating_sub(2), n - 1].into_iter().filter(|&r| r < n).collect();
        let mut picks = picks;
        picks.sort();
        picks.dedup();
        selections.push(row_runs(&picks));
    }
    for rows in &selections {
        let want = plain(&expected_rows(&array, rows));
        let got = read_via_ranges(&enc, &buffers, n, &dt, rows);
        assert_eq!(&plain(&got), &want, "ranged read {rows:?} of {dt} ({})", describe(&enc));
        let chunk = decode_page_rows(&enc, &buffers, n, &kind, indexing, rows).unwrap();
        assert_eq!(&plain(&build(&chunk, &dt)), &want, "in-memory read {rows:?} of {dt}");
    }
    describe(&enc)
}

fn round_trip(array: ArrayRef) -> String {
    round_trip_with(array, &[])
}

fn fixed_types() -> Vec<DataType> {
    use DataType::*;
    vec![
        Int8,
        Int16,
        Int32,
        Int64,
        UInt8,
        UInt16,
        UInt32,
        UInt64,
        Float16,
        Float32,
        Float64,
        Decimal128(38, 4),
        Decimal256(60, 3),
        Date32,
        Date64,
        Time32(TimeUnit::Second),
        Time32(TimeUnit::Millisecond),
        Time64(TimeUnit::Microsecond),
        Time64(TimeUnit::Nanosecond),
        Timestamp(TimeUnit::Second, None),
        Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
        Timestamp(TimeUnit::Microsecond, Some("+05:30".into())),
        Timestamp(TimeUnit::Nanosecond, None),
        Duration(TimeUnit::Second),
        Duration(TimeUnit::Millisecond),
        Duration(TimeUnit::Microsecond),
        Duration(TimeUnit::Nanosecond),
        FixedSizeBinary(1),
        FixedSizeBinary(16),
        FixedSizeBinary(300),
    ]
}

#[test]
fn fixed_width_types_round_trip() {
    for (i, dt) in fixed_types().into_iter().enumerate() {
        for (n, every) in [(0usize, 0usize), (1, 0), (1, 1), (1000, 0), (1000, 7), (1000, 1), (3000, 2)] {
            let a = fixed_array(dt.clone(), n, every, i as u64 * 31 + n as u64);
            let d = round_trip(a.clone());
            let bits = a.data_type().primitive_width().map(|w| w * 8).unwrap_or_else(|| match &dt {
                DataType::FixedSizeBinary(w) => *w as usize * 8,
                _ => unreachable!(),
            });
            let want = match (n, every) {
                (0, _) | (_, 1) => "nullable(all_nulls)".to_string(),
                (n, e) if n > 0 && e > 0 => format!("nullable(some_nulls, flat({bits}))"),
                _ => format!("nullable(no_nulls, flat({bits}))"),
            };
            assert_eq!(d, want, "{dt} n={n} every={every}");
        }
    }
}

#[test]
fn sliced_and_negative_values_round_trip() {
    let a: ArrayRef = Arc::new(Int32Array::from_iter((0..2000).map(|i| if i % 5 == 0 { None } else { Some(-i * 7919) })));
    round_trip(a.slice(13, 1500));
    let b: ArrayRef = Arc::new(Int64Array::from(vec![i64::MIN, -1, 0, 1, i64::MAX]));
    assert_eq!(round_trip(b.slice(1, 3)), "nullable(no_nulls, flat(64))");
}

#[test]
fn booleans_and_nulls_round_trip() {
    let bools: ArrayRef = Arc::new(BooleanArray::from_iter((0..1031).map(|i| (i % 3 != 0).then_some(i % 7 < 3))));
    assert_eq!(round_trip(bools.clone()), "nullable(some_nulls, flat(1))");
    round_trip(bools.slice(5, 1000));
    let dense: ArrayRef = Arc::new(BooleanArray::from((0..77).map(|i| i % 2 == 0).collect::<Vec<_>>()));
    assert_eq!(round_trip(dense.slice(3, 70)), "nullable(no_nulls, flat(1))");
    let all_null: ArrayRef = Arc::new(BooleanArray::from(vec![None, None, None]));
    assert_eq!(round_trip(all_null), "nullable(all_nulls)");
    for n in [0, 1, 5000] {
        assert_eq!(round_trip(Arc::new(NullArray::new(n))), "nullable(all_nulls)");
    }
}

fn strings(n: usize, null_every: usize) -> Vec<Option<String>> {
    let mut r = Lcg(n as u64);
    (0..n)
        .map(|i| {
            if null_every > 0 && i % null_every == 0 {
                return None;
            }
            Some(match i % 6 {
                0 => String::new(),
                1 => "ünïcødé ✓ 日本語".to_string(),
                2 => "x".repeat(256 + i % 10),
                3 => format!("{}", r.next()),
                4 => "y".repeat(33 * 1024),
                _ => "-".repeat(i % 17),
            })
        })
        .collect()
}

#[test]
fn strings_and_binary_round_trip() {
    for (n, every) in [(0usize, 0usize), (1, 0), (1, 1), (40, 0), (40, 3), (40, 1), (7, 2)] {
        let v = strings(n, every);
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(v.clone())),
            Arc::new(LargeStringArray::from(v.clone())),
            Arc::new(BinaryArray::from_iter(v.iter().map(|s| s.as_ref().map(|s| s.as_bytes())))),
            Arc::new(LargeBinaryArray::from_iter(v.iter().map(|s| s.as_ref().map(|s| s.as_bytes())))),
        ];
        for a in arrays {
            let d = round_trip(a.clone());
            assert_eq!(d, "binary(indices=nullable(no_nulls, flat(64)), bytes=flat(8))");
            if n > 4 {
                round_trip(a.slice(2, n - 3));
            }
        }
    }
}

#[test]
fn null_slots_with_bytes_are_dropped() {
    // An Arrow array whose null slot still spans bytes.
    let offsets = Buffer::from_vec(vec![0i32, 3, 6, 9]);
    let data = Buffer::from(b"abcdefghi".as_slice());
    let d = ArrayDataBuilder::new(DataType::Utf8)
        .len(3)
        .add_buffer(offsets)
        .add_buffer(data)
        .nulls(Some(NullBuffer::from(vec![true, false, true])))
        .build()
        .unwrap();
    let a = make_array(d);
    let (_, buffers) = encoded(&a, &[]);
    assert_eq!(buffers[1].as_slice(), b"abcghi");
    round_trip(a);
}

#[test]
fn compressed_string_bytes_round_trip() {
    let v: Vec<String> = (0..5000).map(|i| format!("value number {}", i % 300)).collect();
    let a: ArrayRef = Arc::new(LargeStringArray::from(v));
    for scheme in ["zstd", "lz4"] {
        let d = round_trip_with(a.clone(), &[("lance-encoding:compression", scheme)]);
        assert_eq!(d, format!("binary(indices=nullable(no_nulls, flat(64)), bytes=flat(8, {scheme}))"));
    }
}

#[test]
fn low_cardinality_utf8_gets_a_dictionary() {
    let v: Vec<Option<&str>> = (0..500).map(|i| (i % 11 != 0).then(|| ["a", "", "ß", "long value"][i % 4])).collect();
    let a: ArrayRef = Arc::new(StringArray::from(v));
    let d = round_trip(a.clone());
    assert!(d.starts_with("dictionary(4 items=binary("), "{d}");
    let (_, buffers) = encoded(&a, &[]);
    assert_eq!(buffers[0].as_slice()[..4], [0, 1, 2, 3]); // 1-based, 0 = null
    round_trip(a.slice(1, 300));
    let all_null: ArrayRef = Arc::new(StringArray::from(vec![None::<&str>; 200]));
    assert!(round_trip(all_null).starts_with("dictionary(1 items="));
    // Large strings and binary never get the writer's own dictionary.
    let large: ArrayRef = Arc::new(LargeStringArray::from(vec!["a"; 500]));
    assert!(round_trip(large).starts_with("binary("));
    // 100 distinct values are too many.
    let many: ArrayRef = Arc::new(StringArray::from_iter_values((0..1000).map(|i| format!("{}", i % 100))));
    assert!(round_trip(many).starts_with("binary("));
}

#[test]
fn arrow_dictionaries_round_trip() {
    let keys = arrow_array::PrimitiveArray::<Int8Type>::from(vec![Some(0), Some(1), None, Some(0), Some(2)]);
    let values: ArrayRef = Arc::new(StringArray::from(vec!["x", "yy", "ü"]));
    let a: ArrayRef = Arc::new(DictionaryArray::new(keys, values.clone()));
    let d = round_trip(a.clone());
    assert_eq!(
        d,
        "dictionary(4 items=binary(indices=nullable(no_nulls, flat(64)), bytes=flat(8)), indices=nullable(no_nulls, flat(8)))"
    );
    let (_, buffers) = encoded(&a, &[]);
    assert_eq!(buffers[0].as_slice(), &[0, 1, 3, 0, 2]); // the null row points at the extra null item
    round_trip(a.slice(1, 3));
    let no_nulls = arrow_array::PrimitiveArray::<Int32Type>::from(vec![2, 2, 0]);
    round_trip(Arc::new(DictionaryArray::new(no_nulls, values.clone())));
    let all_null = arrow_array::PrimitiveArray::<Int16Type>::from(vec![None, None]);
    round_trip(Arc::new(DictionaryArray::new(all_null, values.clone())));
    let u8_keys = arrow_array::PrimitiveArray::<UInt8Type>::from(vec![Some(1), None]);
    let large_values: ArrayRef = Arc::new(LargeStringArray::from(vec!["p", "q"]));
    round_trip(Arc::new(DictionaryArray::new(u8_keys, large_values)));
    let int_values: ArrayRef = Arc::new(Int64Array::from(vec![Some(-5), None, Some(7)]));
    let keys = arrow_array::PrimitiveArray::<Int32Type>::from(vec![Some(0), Some(1), None, Some(2)]);
    round_trip(Arc::new(DictionaryArray::new(keys, int_values)));
}

#[test]
fn dictionary_key_overflow_is_an_error() {
    let keys = arrow_array::PrimitiveArray::<Int8Type>::from(vec![Some(0), None]);
    let values: ArrayRef = Arc::new(StringArray::from_iter_values((0..128).map(|i| i.to_string())));
    let a: ArrayRef = Arc::new(DictionaryArray::new(keys, values));
    let e = encode_page(&a, &field_of(a.data_type(), &[])).err().unwrap();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
}

fn fsl(item: DataType, dim: i32, n: usize, item_null_every: usize, list_null_every: usize) -> ArrayRef {
    let items = fixed_array(item.clone(), n * dim as usize, item_null_every, 7 + n as u64);
    let f = Arc::new(Field::new("item", item, true));
    Arc::new(arrow_array::FixedSizeListArray::new(f, dim, items, nulls(n, list_null_every)))
}

#[test]
fn fixed_size_lists_round_trip() {
    use DataType::*;
    for item in [Float16, Float32, Float64, Int8, UInt8] {
        let bits = item.primitive_width().unwrap() * 8;
        for (n, item_every, list_every) in
            [(0, 0, 0), (1, 0, 0), (100, 0, 0), (100, 3, 0), (100, 0, 4), (100, 5, 3), (50, 1, 0), (50, 0, 1)]
        {
            let a = fsl(item.clone(), 3, n, item_every, list_every);
            let d = round_trip(a.clone());
            let items = match (n, item_every) {
                (n, 1) if n > 0 => "nullable(all_nulls)".to_string(),
                (n, e) if n > 0 && e > 0 => format!("nullable(some_nulls, flat({bits}))"),
                _ => format!("nullable(no_nulls, flat({bits}))"),
            };
            let want = match (n, list_every) {
                (0, _) | (_, 1) => "nullable(all_nulls)".to_string(),
                (n, e) if n > 0 && e > 0 => format!("nullable(some_nulls, fixed_size_list(3, {items}))"),
                _ => format!("nullable(no_nulls, fixed_size_list(3, {items}))"),
            };
            assert_eq!(d, want, "{item} n={n} {item_every} {list_every}");
            if n > 10 {
                round_trip(a.slice(3, n - 5));
            }
        }
    }
    // A vector column built the usual way.
    let mut b = FixedSizeListBuilder::new(Float32Builder::new(), 128);
    for i in 0..300 {
        for j in 0..128 {
            b.values().append_value((i * j) as f32 * 0.5);
        }
        b.append(i % 17 != 0);
    }
    round_trip(Arc::new(b.finish()));
}

// --- Decoding shapes older writers produced -------------------------------------------

fn page_buffer_ref(i: u32) -> Option<enc20::Buffer> {
    Some(enc20::Buffer { buffer_index: i, buffer_type: 0 })
}

fn decode_as(enc: enc20::ArrayEncoding, buffers: Vec<Buffer>, n: u64, dt: &DataType) -> Result<ArrayRef> {
    let chunk = decode_page_with(&enc, &buffers, n, &LeafKind::of(dt)?, DictionaryIndices::for_type(dt))?;
    let kind = LeafKind::of(dt)?;
    let mut b = LeafBuilder::new(kind, 0);
    b.append(&chunk.values, chunk.def.as_deref(), Selection::All)?;
    assemble(&field_of(dt, &[]), vec![b.finish(dt)?])
}

/// Packs values as a plain LSB-first bit stream of `bits` bits each.
fn pack_stream(values: &[u64], bits: u64) -> Vec<u8> {
    let mut out = vec![0u8; (values.len() as u64 * bits).div_ceil(8) as usize];
    for (i, v) in values.iter().enumerate() {
        for b in 0..bits {
            if (v >> b) & 1 == 1 {
                let bit = i as u64 * bits + b;
                out[(bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
    }
    out
}

#[test]
fn decodes_legacy_bitpacked() {
    let values: Vec<i32> = (0..1000).map(|i| (i % 37) - 18).collect();
    let raw: Vec<u64> = values.iter().map(|&v| v as i64 as u64).collect();
    for bits in [6u64, 7, 13] {
        let enc = no_nulls(wrap(Pb::Bitpacked(enc20::Bitpacked {
            compressed_bits_per_value: bits,
            uncompressed_bits_per_value: 32,
            buffer: page_buffer_ref(0),
            signed: true,
        })));
        let out = decode_as(enc, vec![Buffer::from_vec(pack_stream(&raw, bits))], 1000, &DataType::Int32).unwrap();
        assert_eq!(out.as_primitive::<Int32Type>().values().to_vec(), values, "{bits} bits");
    }
    let unsigned: Vec<u64> = (0..100).map(|i| i * 3).collect();
    let enc = wrap(Pb::Bitpacked(enc20::Bitpacked {
        compressed_bits_per_value: 9,
        uncompressed_bits_per_value: 64,
        buffer: page_buffer_ref(0),
        signed: false,
    }));
    let out = decode_as(enc.clone(), vec![Buffer::from_vec(pack_stream(&unsigned, 9))], 100, &DataType::UInt64).unwrap();
    assert_eq!(out.as_primitive::<arrow_array::types::UInt64Type>().values().to_vec(), unsigned);
    // Truncated.
    let e = decode_as(enc, vec![Buffer::from_vec(vec![0u8; 10])], 100, &DataType::UInt64).unwrap_err();
    assert!(matches!(e, Error::Corrupt(_)), "{e}");
}

#[test]
fn decodes_legacy_bitpacked_for_non_neg() {
    let values: Vec<u16> = (0..2500).map(|i| (i * 13 % 500) as u16).collect();
    let width = 9usize;
    let mut packed = Vec::new();
    for chunk in values.chunks(1024) {
        let mut block = [0u16; 1024];
        block[..chunk.len()].copy_from_slice(chunk);
        bitpack::pack_to_le_bytes(width, &block, &mut packed);
    }
    let enc = no_nulls(wrap(Pb::BitpackedForNonNeg(enc20::BitpackedForNonNeg {
        compressed_bits_per_value: width as u64,
        uncompressed_bits_per_value: 16,
        buffer: page_buffer_ref(0),
    })));
    let out = decode_as(enc.clone(), vec![Buffer::from_vec(packed.clone())], 2500, &DataType::UInt16).unwrap();
    assert_eq!(out.as_primitive::<arrow_array::types::UInt16Type>().values().to_vec(), values);
    let e = decode_as(enc, vec![Buffer::from_vec(packed[..packed.len() - 1].to_vec())], 2500, &DataType::UInt16);
    assert!(matches!(e, Err(Error::Corrupt(_))));
}

#[test]
fn decodes_legacy_fixed_size_binary_constant_and_fsst() {
    // Equal-length strings without offsets, values as one flat of the width.
    for (bits, n_values) in [(24u64, 3u64), (8, 9)] {
        let enc = wrap(Pb::FixedSizeBinary(Box::new(enc20::FixedSizeBinary {
            bytes: Some(Box::new(no_nulls(wrap(Pb::Flat(enc20::Flat {
                bits_per_value: bits,
                buffer: page_buffer_ref(0),
                compression: None,
            }))))),
            byte_width: 3,
        })));
        let _ = n_values;
        let out = decode_as(enc, vec![Buffer::from(b"abcdefghi".as_slice())], 3, &DataType::Utf8).unwrap();
        assert_eq!(out.as_string::<i32>().iter().collect::<Vec<_>>(), vec![Some("abc"), Some("def"), Some("ghi")]);
    }
    let enc = no_nulls(wrap(Pb::Constant(enc20::Constant { value: bytes::Bytes::from_static(&[7, 0, 0, 0]) })));
    let out = decode_as(enc, vec![], 4, &DataType::Int32).unwrap();
    assert_eq!(out.as_primitive::<Int32Type>().values().to_vec(), vec![7; 4]);
    // FSST: a binary of compressed strings plus the symbol table.
    let v: Vec<&[u8]> = vec![b"hello world", b"hello there", b"", b"world hello"];
    let table = SymbolTable::train(&v);
    let strings: ArrayRef = Arc::new(BinaryArray::from_iter(
        v.iter().map(|s| Some(table.compress(s))).collect::<Vec<_>>().iter().map(|c| c.as_deref()),
    ));
    let mut w = PageWriter::default();
    let inner = w.binary(&strings, None).unwrap();
    let enc = wrap(Pb::Fsst(Box::new(enc20::Fsst { binary: Some(Box::new(inner)), symbol_table: table.to_bytes().into() })));
    let out = decode_as(enc.clone(), w.buffers.clone(), 4, &DataType::Binary).unwrap();
    assert_eq!(out.as_binary::<i32>().iter().map(|b| b.unwrap()).collect::<Vec<_>>(), v);
    assert!(describe(&enc).starts_with("fsst(binary("));
}

// --- Hostile input ----------------------------------------------------------------------

fn expect_corrupt(r: Result<ArrayRef>) {
    match r {
        Err(Error::Corrupt(_)) | Err(Error::NotSupported(_)) => {}
        other => panic!("expected a corrupt-data error, got {other:?}"),
    }
}

#[test]
fn hostile_inputs_are_errors() {
    let flat = |bits, i| wrap(Pb::Flat(enc20::Flat { bits_per_value: bits, buffer: page_buffer_ref(i), compression: None }));
    // Buffer index out of range, buffer too short, missing children, odd widths.
    expect_corrupt(decode_as(no_nulls(flat(32, 3)), vec![Buffer::from_vec(vec![0u8; 8])], 2, &DataType::Int32));
    expect_corrupt(decode_as(no_nulls(flat(32, 0)), vec![Buffer::from_vec(vec![0u8; 7])], 2, &DataType::Int32));
    expect_corrupt(decode_as(no_nulls(flat(0, 0)), vec![Buffer::from_vec(vec![0u8; 8])], 2, &DataType::Int32));
    expect_corrupt(decode_as(no_nulls(flat(12, 0)), vec![Buffer::from_vec(vec![0u8; 8])], 2, &DataType::Int32));
    expect_corrupt(decode_as(no_nulls(flat(64, 0)), vec![Buffer::from_vec(vec![0u8; 16])], 2, &DataType::Int32));
    expect_corrupt(decode_as(enc20::ArrayEncoding::default(), vec![], 2, &DataType::Int32));
    expect_corrupt(decode_as(wrap(Pb::Nullable(Box::default())), vec![], 2, &DataType::Int32));
    let column_buffer = wrap(Pb::Flat(enc20::Flat {
        bits_per_value: 32,
        buffer: Some(enc20::Buffer { buffer_index: 0, buffer_type: 1 }),
        compression: None,
    }));
    expect_corrupt(decode_as(column_buffer, vec![Buffer::from_vec(vec![0u8; 8])], 2, &DataType::Int32));
    // Unknown compression, bad compressed bytes.
    let zstd = wrap(Pb::Flat(enc20::Flat {
        bits_per_value: 32,
        buffer: page_buffer_ref(0),
        compression: Some(enc20::Compression { scheme: "zstd".into(), level: None }),
    }));
    expect_corrupt(decode_as(zstd.clone(), vec![Buffer::from_vec(vec![9u8; 20])], 2, &DataType::Int32));
    let brotli = wrap(Pb::Flat(enc20::Flat {
        bits_per_value: 32,
        buffer: page_buffer_ref(0),
        compression: Some(enc20::Compression { scheme: "brotli".into(), level: None }),
    }));
    expect_corrupt(decode_as(brotli, vec![Buffer::from_vec(vec![9u8; 20])], 2, &DataType::Int32));
    // Binary: decreasing offsets, offsets past the bytes, indices too short.
    let binary = |adj| {
        wrap(Pb::Binary(Box::new(enc20::Binary {
            indices: Some(Box::new(no_nulls(flat(64, 0)))),
            bytes: Some(Box::new(flat(8, 1))),
            null_adjustment: adj,
        })))
    };
    let idx = |v: &[u64]| Buffer::from_vec(v.to_vec());
    let bytes = Buffer::from(b"abcdef".as_slice());
    expect_corrupt(decode_as(binary(7), vec![idx(&[4, 2]), bytes.clone()], 2, &DataType::Utf8));
    expect_corrupt(decode_as(binary(100), vec![idx(&[4, 9]), bytes.clone()], 2, &DataType::Utf8));
    expect_corrupt(decode_as(binary(7), vec![idx(&[4]), bytes.clone()], 2, &DataType::Utf8));
    // Invalid UTF-8 is caught when building the Arrow array.
    let bad_utf8 = decode_as(binary(3), vec![idx(&[2]), Buffer::from(vec![0xff, 0xfe])], 1, &DataType::Utf8);
    expect_corrupt(bad_utf8);
    // Dictionary: index out of range for either indexing.
    let dict = |n_items| {
        wrap(Pb::Dictionary(Box::new(enc20::Dictionary {
            indices: Some(Box::new(no_nulls(flat(8, 2)))),
            items: Some(Box::new(binary(7))),
            num_dictionary_items: n_items,
        })))
    };
    let bufs = vec![idx(&[3, 6]), bytes.clone(), Buffer::from(vec![0u8, 2, 1])];
    assert!(decode_as(dict(2), bufs.clone(), 3, &DataType::Utf8).is_ok());
    expect_corrupt(decode_as(dict(2), vec![bufs[0].clone(), bytes.clone(), Buffer::from(vec![3u8])], 1, &DataType::Utf8));
    let dict_type = DataType::Dictionary(Box::new(DataType::UInt8), Box::new(DataType::Utf8));
    expect_corrupt(decode_as(dict(2), bufs.clone(), 3, &dict_type));
    expect_corrupt(decode_as(dict(5), bufs.clone(), 3, &DataType::Utf8));
    // Shapes that do not fit the column.
    expect_corrupt(decode_as(binary(7), vec![idx(&[3, 6]), bytes.clone()], 2, &DataType::Int64));
    expect_corrupt(decode_as(no_nulls(flat(32, 0)), vec![Buffer::from_vec(vec![0u8; 8])], 2, &DataType::Utf8));
    // Nested 2.0 pages are not supported (yet), and never panic.
    let list = wrap(Pb::List(Box::new(enc20::List { offsets: None, null_offset_adjustment: 0, num_items: 0 })));
    expect_corrupt(decode_as(list, vec![], 2, &DataType::Int32));
    // Bit-packing to zero bits would leave the row count unbounded.
    let zero_width = wrap(Pb::BitpackedForNonNeg(enc20::BitpackedForNonNeg {
        compressed_bits_per_value: 0,
        uncompressed_bits_per_value: 32,
        buffer: page_buffer_ref(0),
    }));
    expect_corrupt(decode_as(zero_width, vec![Buffer::from_vec(vec![0u8; 8])], u64::MAX, &DataType::Int32));
    // Huge row counts with nothing backing them.
    expect_corrupt(decode_as(all_nulls(), vec![], u64::MAX, &DataType::Int32));
    let big = wrap(Pb::Constant(enc20::Constant { value: bytes::Bytes::from_static(&[1; 16]) }));
    expect_corrupt(decode_as(big, vec![], 1 << 31, &DataType::Decimal128(10, 2)));
    // Fixed-size list whose item count overflows.
    let fsl = no_nulls(wrap(Pb::FixedSizeList(Box::new(enc20::FixedSizeList {
        dimension: u32::MAX,
        items: Some(Box::new(no_nulls(flat(32, 0)))),
        has_validity: false,
    }))));
    let dt = DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), u32::MAX as i32);
    let _ = decode_as(fsl, vec![Buffer::from_vec(vec![0u8; 8])], u64::MAX / 2, &dt);
}

#[test]
fn hostile_ranged_reads_are_errors() {
    let a: ArrayRef = Arc::new(StringArray::from(vec!["ab", "cde", "f"]));
    let (enc, buffers) = encoded(&a, &[]);
    let (file, mut locations) = file_image(&buffers);
    let fetch = |ranges: &[Range<u64>]| -> Result<Vec<Buffer>> {
        Ok(ranges.iter().map(|r| Buffer::from(&file[r.start as usize..(r.end as usize).min(file.len())])).collect())
    };
    let dt = DataType::Utf8;
    let kind = LeafKind::of(&dt).unwrap();
    // Bytes buffer declared shorter than the offsets reach.
    locations[1].1 = 2;
    let src = PageSource { locations: &locations, loaded: &[], fetch: &fetch };
    assert!(matches!(read_rows(&enc, &src, 3, &kind, &dt, &[1..3]), Err(Error::Corrupt(_))));
    // Indices buffer shorter than the rows.
    let (_, mut locations) = file_image(&buffers);
    locations[0].1 = 8;
    let src = PageSource { locations: &locations, loaded: &[], fetch: &fetch };
    assert!(matches!(read_rows(&enc, &src, 3, &kind, &dt, &[0..2]), Err(Error::Corrupt(_))));
    // Rows outside the page are refused.
    let (_, locations) = file_image(&buffers);
    let src = PageSource { locations: &locations, loaded: &[], fetch: &fetch };
    assert!(read_rows(&enc, &src, 3, &kind, &dt, &[2..4]).is_err());
    // A short read is an error, not a panic.
    let short = |ranges: &[Range<u64>]| -> Result<Vec<Buffer>> { Ok(ranges.iter().map(|_| Buffer::from(vec![1u8])).collect()) };
    let src = PageSource { locations: &locations, loaded: &[], fetch: &short };
    assert!(matches!(read_rows(&enc, &src, 3, &kind, &dt, &[0..3]), Err(Error::Corrupt(_))));
    // Fixed-width pages: values buffer too short.
    let b: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3]));
    let (enc, buffers) = encoded(&b, &[]);
    let (_, mut locations) = file_image(&buffers);
    locations[0].1 = 16;
    let src = PageSource { locations: &locations, loaded: &[], fetch: &fetch };
    let dt = DataType::Int64;
    assert!(matches!(read_rows(&enc, &src, 3, &LeafKind::of(&dt).unwrap(), &dt, &[2..3]), Err(Error::Corrupt(_))));
}

/// Random damage to the buffers of valid pages never panics.
#[test]
fn damaged_buffers_never_panic() {
    let v: Vec<Option<String>> = strings(60, 4);
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(v.clone())),
        Arc::new(StringArray::from_iter((0..300).map(|i| (i % 9 != 0).then(|| ["p", "q", "r"][i % 3])))),
        fixed_array(DataType::Int32, 100, 3, 1),
        fsl(DataType::Float32, 4, 30, 3, 5),
        Arc::new(DictionaryArray::new(
            arrow_array::PrimitiveArray::<Int8Type>::from(vec![Some(0), None, Some(1)]),
            Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef,
        )),
    ];
    let mut rng = Lcg(99);
    for a in arrays {
        let dt = a.data_type().clone();
        let (enc, buffers) = encoded(&a, &[]);
        for _ in 0..300 {
            let mut bufs: Vec<Buffer> = buffers.clone();
            let bi = (rng.next() as usize) % bufs.len();
            let mut raw = bufs[bi].as_slice().to_vec();
            if rng.next() % 4 == 0 {
                raw.truncate((rng.next() as usize) % (raw.len() + 1));
            } else if !raw.is_empty() {
                for _ in 0..3 {
                    let p = (rng.next() as usize) % raw.len();
                    raw[p] = rng.next() as u8;
                }
            }
            bufs[bi] = Buffer::from_vec(raw);
            let _ = decode_as(enc.clone(), bufs.clone(), a.len() as u64, &dt);
            let (file, locations) = file_image(&bufs);
            let fetch = |ranges: &[Range<u64>]| -> Result<Vec<Buffer>> {
                Ok(ranges.iter().map(|r| Buffer::from(&file[r.start as usize..r.end as usize])).collect())
            };
            let src = PageSource { locations: &locations, loaded: &[], fetch: &fetch };
            let n = a.len() as u64;
            if let Ok(chunk) = read_rows(&enc, &src, n, &LeafKind::of(&dt).unwrap(), &dt, &[1..n / 2, n - 1..n]) {
                let mut b = LeafBuilder::new(LeafKind::of(&dt).unwrap(), 0);
                if b.append(&chunk.values, chunk.def.as_deref(), Selection::All).is_ok() {
                    let _ = b.finish(&dt);
                }
            }
        }
    }
}

#[test]
fn packed_structs_round_trip_row_major() {
    let fields = arrow_schema::Fields::from(vec![
        Field::new("x", DataType::Int32, true),
        Field::new("y", DataType::Float64, true),
        Field::new("z", DataType::UInt8, true),
    ]);
    let n = 1000usize;
    let a: ArrayRef = Arc::new(arrow_array::StructArray::new(
        fields.clone(),
        vec![
            Arc::new(Int32Array::from_iter_values((0..n as i32).map(|i| i * -3))),
            Arc::new(arrow_array::Float64Array::from_iter_values((0..n).map(|i| i as f64 / 4.0))),
            Arc::new(arrow_array::UInt8Array::from_iter_values((0..n).map(|i| i as u8))),
        ],
        None,
    ));
    let field = field_of(a.data_type(), &[("lance-encoding:packed", "true")]);
    let page = encode_page(&a.slice(7, 900), &field).unwrap();
    let enc = enc20::ArrayEncoding::decode(page.encoding.as_slice()).unwrap();
    assert_eq!(
        describe(&enc),
        "packed_struct(nullable(no_nulls, flat(32)), nullable(no_nulls, flat(64)), nullable(no_nulls, flat(8)))"
    );
    assert_eq!(page.buffers.len(), 1);
    assert_eq!(page.buffers[0].len(), 900 * 13);
    let row = |i: usize| -> Vec<u8> {
        let i = i + 7;
        [&(i as i32 * -3).to_le_bytes()[..], &(i as f64 / 4.0).to_le_bytes(), &[i as u8]].concat()
    };
    assert_eq!(&page.buffers[0].as_slice()[13 * 5..13 * 6], &row(5)[..]);
    let kind = LeafKind::of_field(&field).unwrap();
    let dt = a.data_type().clone();
    let whole = decode_page(&enc, &page.buffers, 900, &kind).unwrap();
    let DataBlock::Fixed(f) = &whole.values else { panic!("not fixed-width rows") };
    assert_eq!((f.bits_per_value, f.data.len()), (104, 900 * 13));
    // By byte ranges.
    assert!(supports_ranged_reads(&enc, 1));
    let (file, locations) = file_image(&page.buffers);
    let fetch = |ranges: &[Range<u64>]| -> Result<Vec<Buffer>> {
        Ok(ranges.iter().map(|r| Buffer::from(&file[r.start as usize..r.end as usize])).collect())
    };
    let src = PageSource { locations: &locations, loaded: &[], fetch: &fetch };
    let chunk = read_rows(&enc, &src, 900, &kind, &dt, &[3..5, 899..900]).unwrap();
    let DataBlock::Fixed(f) = &chunk.values else { panic!("not fixed-width rows") };
    assert_eq!(f.data.as_slice(), &[row(3), row(4), row(899)].concat()[..]);
    // Null rows or null children cannot be packed in 2.0.
    let with_nulls: ArrayRef = Arc::new(arrow_array::StructArray::new(
        fields,
        a.as_struct().columns().to_vec(),
        Some(NullBuffer::from((0..n).map(|i| i != 3).collect::<Vec<_>>())),
    ));
    assert!(matches!(encode_page(&with_nulls, &field), Err(Error::InvalidInput(_))));
    // Hostile: rows shorter than the page says, children of partial bytes.
    let short = vec![page.buffers[0].slice_with_length(0, 13 * 10)];
    assert!(matches!(decode_page(&enc, &short, 900, &kind), Err(Error::Corrupt(_))));
    let mut odd = enc.clone();
    if let Some(Pb::PackedStruct(p)) = odd.array_encoding.as_mut() {
        p.inner[0] = no_nulls(wrap(Pb::Flat(enc20::Flat { bits_per_value: 12, buffer: page_buffer_ref(0), compression: None })));
    }
    assert!(decode_page(&odd, &page.buffers, 900, &kind).is_err());
}

#[test]
fn ranged_reads_cover_the_common_shapes() {
    let cases: Vec<ArrayRef> = vec![
        fixed_array(DataType::Int32, 10, 0, 1),
        fixed_array(DataType::Float64, 10, 3, 1),
        Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
        Arc::new(StringArray::from(vec!["a", "b"])),
        Arc::new(NullArray::new(4)),
        fsl(DataType::Float32, 2, 5, 2, 3),
    ];
    for a in cases {
        let (enc, buffers) = encoded(&a, &[]);
        assert!(supports_ranged_reads(&enc, buffers.len()), "{}", describe(&enc));
    }
    let compressed: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
    let (enc, buffers) = encoded(&compressed, &[("lance-encoding:compression", "zstd")]);
    assert!(!supports_ranged_reads(&enc, buffers.len()));
    let dict: ArrayRef = Arc::new(StringArray::from(vec!["a"; 200]));
    let (enc, buffers) = encoded(&dict, &[]);
    assert!(!supports_ranged_reads(&enc, buffers.len()));
}
