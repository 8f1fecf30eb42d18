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
    ];
    for p in &protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let descriptors = protox::compile(protos, ["protos"])?;
    prost_build::Config::new()
        .bytes(["."])
        .compile_fds(descriptors)?;
    Ok(())
}
