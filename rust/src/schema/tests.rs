//! Tests of `schema`.

use super::*;

/// pylance 14's data-file schema of a blob-v2 column: the descriptor fields carry id −1
/// and parent −1 right after the blob struct.
#[test]
fn blob_v2_descriptor_fields_are_adopted() {
    let pb = |name: &str, id: i32, lt: &str, meta: &[(&str, &str)]| filepb::Field {
        name: name.into(),
        id,
        parent_id: -1,
        logical_type: lt.into(),
        metadata: meta.iter().map(|(k, v)| (k.to_string(), bytes::Bytes::from(v.to_string()))).collect(),
        ..Default::default()
    };
    let blob = [("lance-encoding:blob", "true"), ("lance-encoding:packed", "true")];
    let fields = vec![
        pb("id", 0, "int64", &[]),
        pb("b", 1, "struct", &blob),
        pb("kind", -1, "uint8", &[]),
        pb("position", -1, "uint64", &[]),
        pb("size", -1, "uint64", &[]),
        pb("blob_id", -1, "uint32", &[]),
        pb("blob_uri", -1, "string", &[]),
    ];
    let schema = LanceSchema::from_pb(&fields, &Default::default()).unwrap();
    assert_eq!(schema.fields.len(), 2);
    let b = &schema.fields[1];
    assert_eq!(
        b.children.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["kind", "position", "size", "blob_id", "blob_uri"]
    );
    assert!(b.is_packed_struct() && b.is_leaf());
    // Without the blob marker, two fields with id −1 stay an error.
    let mut plain = fields.clone();
    plain[1].metadata.clear();
    assert!(LanceSchema::from_pb(&plain, &Default::default()).is_err());
    // A blob struct that also has real children is corrupt.
    let mut both = fields.clone();
    both.push(filepb::Field { parent_id: 1, ..pb("data", 2, "large_binary", &[]) });
    assert!(LanceSchema::from_pb(&both, &Default::default()).is_err());
}

fn all_types() -> Schema {
    use DataType::*;
    let fields = vec![
        Field::new("n", Null, true),
        Field::new("b", Boolean, true),
        Field::new("i8", Int8, false),
        Field::new("u64", UInt64, true),
        Field::new("h", Float16, true),
        Field::new("d128", Decimal128(38, 10), true),
        Field::new("d256", Decimal256(76, -3), true),
        Field::new("t32", Time32(TimeUnit::Millisecond), true),
        Field::new("t64", Time64(TimeUnit::Nanosecond), true),
        Field::new("ts", Timestamp(TimeUnit::Microsecond, Some("+08:00".into())), true),
        Field::new("ts2", Timestamp(TimeUnit::Second, None), true),
        Field::new("dur", Duration(TimeUnit::Millisecond), true),
        Field::new("s", LargeUtf8, true),
        Field::new("fsb", FixedSizeBinary(16), true),
        Field::new("vec", FixedSizeList(Arc::new(Field::new("item", Float32, true)), 768), true),
        Field::new("dict", Dictionary(Box::new(Int16), Box::new(Utf8)), true),
        Field::new("st", Struct(Fields::from(vec![Field::new("x", Int32, true), Field::new("y", Utf8, false)])), false),
        Field::new("l", List(Arc::new(Field::new("item", Int64, true))), true),
    ];
    Schema::new(fields).with_metadata(std::collections::HashMap::from([("k".to_string(), "v".to_string())]))
}

#[test]
fn arrow_round_trip_through_pb() {
    let schema = all_types();
    let lance = LanceSchema::from_arrow(&schema).unwrap();
    let pb = lance.to_pb_fields().unwrap();
    assert_eq!(pb.len(), 21);
    assert_eq!(pb[16].logical_type, "struct");
    assert_eq!(pb[17].parent_id, pb[16].id);
    let back = LanceSchema::from_pb(&pb, &lance.pb_metadata()).unwrap();
    assert_eq!(back.to_arrow().as_ref(), &schema);
}

#[test]
fn logical_type_spellings() {
    assert_eq!(logical_type_of(&DataType::Timestamp(TimeUnit::Microsecond, None)).unwrap(), "timestamp:us:-");
    assert_eq!(
        logical_type_of(&DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))).unwrap(),
        "dict:string:int32:false"
    );
    assert_eq!(
        logical_type_of(&DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), 4)).unwrap(),
        "fixed_size_list:float:4"
    );
}

#[test]
fn garbage_logical_type_is_an_error() {
    let f = filepb::Field { name: "x".into(), id: 0, parent_id: -1, logical_type: "decimal:12".into(), ..Default::default() };
    assert!(LanceSchema::from_pb(&[f], &Default::default()).is_err());
}
