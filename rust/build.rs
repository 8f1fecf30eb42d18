//! Compiles `protos/*.proto` into Rust with prost, using protox (a pure-Rust protobuf
//! compiler) so that no system `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "protos/file.proto",
        "protos/file2.proto",
        "protos/encodings_v2_0.proto",
        "protos/encodings_v2_1.proto",
        "protos/table.proto",
        "protos/rowids.proto",
        "protos/transaction.proto",
        "protos/index.proto",
        "protos/index_details.proto",
    ];
    for p in &protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let descriptors = protox::compile(protos, ["protos"])?;
    // Table-format messages (and the schema fields they embed) also derive serde, so that
    // manifests and transactions can cross to Python as JSON (`table::json`).
    let serde = "#[derive(serde::Serialize, serde::Deserialize)]";
    let mut config = prost_build::Config::new();
    config.bytes(["."]);
    // (maps as BTreeMap: their entries are written in key order, so a file or manifest written
    // twice from the same data is the same bytes)
    config.btree_map(["."]);
    for path in [".lance.table", ".lance.file.Field", ".lance.file.Dictionary", ".lance.file.Encoding"] {
        config.type_attribute(path, serde);
    }
    config.message_attribute(".lance.table", "#[serde(default)]");
    config.message_attribute(".lance.file.Field", "#[serde(default)]");
    config.message_attribute(".lance.file.Dictionary", "#[serde(default)]");
    for (field, with) in [
        (".lance.table.Manifest.timestamp", "timestamp"),
        (".lance.table.IndexMetadata.index_details", "any"),
        (".lance.table.Transaction.Rewrite.RewrittenIndex.new_index_details", "any"),
        (".lance.table.DataFragment.row_id_sequence.inline_row_ids", "hex_bytes"),
        (".lance.table.DataFragment.last_updated_at_version_sequence.inline_last_updated_at_versions", "hex_bytes"),
        (".lance.table.DataFragment.created_at_version_sequence.inline_created_at_versions", "hex_bytes"),
    ] {
        config.field_attribute(field, format!("#[serde(with = \"crate::table::json::{with}\")]"));
    }
    config.compile_fds(descriptors)?;
    Ok(())
}
