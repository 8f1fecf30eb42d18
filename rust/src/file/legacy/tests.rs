use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::types::Int8Type;
use arrow_array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, FixedSizeListArray, Float32Array, Int64Array, LargeBinaryArray, RecordBatch,
    StringArray, StructArray,
};
use arrow_schema::{DataType, Field, Schema};

use super::*;
use crate::error::Error;
use crate::file::FileReader;
use crate::io::{BufferReader, StorageOptions};
use crate::schema::LanceSchema;

fn sample() -> RecordBatch {
    let n = 2500;
    let ints: ArrayRef = Arc::new(Int64Array::from_iter_values((0..n).map(|i| i * 7 - 3)));
    let strs: ArrayRef = Arc::new(StringArray::from_iter((0..n).map(|i| (i % 5 != 0).then(|| format!("s{i}")))));
    let bools: ArrayRef = Arc::new(BooleanArray::from_iter((0..n).map(|i| Some(i % 3 == 0))));
    let mut lb = ListBuilder::new(StringBuilder::new());
    for i in 0..n {
        for j in 0..(i % 4) {
            lb.values().append_value(format!("{i}.{j}"));
        }
        lb.append(true);
    }
    let lists: ArrayRef = Arc::new(lb.finish());
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let fsl: ArrayRef = Arc::new(FixedSizeListArray::new(
        item,
        3,
        Arc::new(Float32Array::from_iter_values((0..n * 3).map(|i| i as f32 / 2.0))),
        None,
    ));
    let bins: ArrayRef = Arc::new(LargeBinaryArray::from_iter_values((0..n).map(|i| vec![i as u8; (i % 7) as usize + 1])));
    let st: ArrayRef = Arc::new(StructArray::from(vec![
        (Arc::new(Field::new("x", DataType::Int64, true)), ints.clone()),
        (Arc::new(Field::new("y", DataType::Utf8, true)), strs.clone()),
    ]));
    let keys = arrow_array::Int8Array::from_iter_values((0..n).map(|i| (i % 3) as i8));
    let dict: ArrayRef =
        Arc::new(DictionaryArray::<Int8Type>::try_new(keys, Arc::new(StringArray::from(vec!["a", "bb", "ccc"]))).unwrap());
    let schema = Schema::new(vec![
        Field::new("i", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("b", DataType::Boolean, true),
        Field::new("l", lists.data_type().clone(), true),
        Field::new("v", fsl.data_type().clone(), true),
        Field::new("bin", DataType::LargeBinary, true),
        Field::new("st", st.data_type().clone(), true),
        Field::new("d", dict.data_type().clone(), true),
    ]);
    RecordBatch::try_new(Arc::new(schema), vec![ints, strs, bools, lists, fsl, bins, st, dict]).unwrap()
}

fn write(batch: &RecordBatch, rows_per_batch: usize) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("lancepy-legacy-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("f.lance");
    let schema = LanceSchema::from_arrow(&batch.schema()).unwrap();
    let mut w = LegacyWriter::try_new(path.to_str().unwrap(), schema, rows_per_batch, &StorageOptions::new()).unwrap();
    // in pieces that do not line up with the batches
    w.write_batch(&batch.slice(0, 1000)).unwrap();
    w.write_batch(&batch.slice(1000, batch.num_rows() - 1000)).unwrap();
    let written = w.finish().unwrap();
    assert_eq!(written.num_rows, batch.num_rows() as u64);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    bytes
}

fn open(bytes: Vec<u8>) -> Result<FileReader, Error> {
    FileReader::open_with(Arc::new(BufferReader::new("mem.lance", arrow_buffer::Buffer::from(bytes))))
}

#[test]
fn round_trip_ranges_and_takes() {
    let batch = sample();
    let r = open(write(&batch, 1024)).unwrap();
    assert_eq!(r.num_rows(), 2500);
    let all: Vec<usize> = (0..batch.num_columns()).collect();
    let got = r.read_range(0, 2500, &all).unwrap();
    // nulls of strings come back (empty values of nullable fields read as null)
    assert_eq!(got.columns(), batch.columns());
    let part = r.read_range(1000, 100, &all).unwrap();
    assert_eq!(part.columns(), batch.slice(1000, 100).columns());
    let idx = [2499u64, 0, 1023, 1024, 7, 7, 2048];
    let took = r.take(&idx, &all).unwrap();
    for (c, col) in took.columns().iter().enumerate() {
        let want =
            arrow_select::take::take(batch.column(c).as_ref(), &arrow_array::UInt64Array::from(idx.to_vec()), None).unwrap();
        assert_eq!(col.as_ref(), want.as_ref(), "column {c}");
    }
}

#[test]
fn truncated_and_damaged_files_are_corrupt() {
    let bytes = write(&sample(), 1000);
    for cut in [1usize, 17, 100, bytes.len() / 2] {
        let mut b = bytes[cut..].to_vec();
        // keep a legacy footer, pointing into the shortened file
        let n = b.len();
        b[n - 16..].copy_from_slice(&bytes[bytes.len() - 16..]);
        let err = open(b).and_then(|r| r.read_range(0, r.num_rows(), &[0, 1, 3]).map(|_| ()));
        assert!(matches!(err, Err(Error::Corrupt(_))), "cut {cut}: {err:?}");
    }
    let mut bad = bytes.clone();
    let n = bad.len();
    bad[n - 16..n - 8].copy_from_slice(&(n as u64 * 2).to_le_bytes());
    assert!(matches!(open(bad), Err(Error::Corrupt(_))));
}
