//! The `lancepy._lancepy` extension module. All PyO3 code lives under this directory.

mod cache;
mod dataset;
mod errors;
mod ffi;
mod file;
mod fragment;
mod fts;
mod index_proto;
mod indices;
mod manifest;
mod outputs;
mod pipeline;
mod ring;
mod scan;
mod transaction;

use pyo3::prelude::*;

/// mimalloc keeps freed memory for reuse instead of handing it back to the OS, so the many
/// short-lived buffers of random-access reads do not page-fault on every call.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The native module.
#[pymodule]
fn _lancepy(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::note_main_thread();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<file::PyFileReader>()?;
    m.add_class::<file::PyFileWriter>()?;
    m.add_class::<file::PyLegacyFileWriter>()?;
    m.add_class::<ffi::ArrowBatches>()?;
    m.add_class::<ffi::BatchStream>()?;
    m.add_class::<ffi::FixedValues>()?;
    // The table format (`lancepy.dataset`, `lancepy.commit`, `lancepy.fragment` use these).
    m.add_class::<dataset::PyStore>()?;
    m.add_class::<dataset::PyRangeReader>()?;
    m.add_class::<scan::PySnapshot>()?;
    m.add_class::<pipeline::TakePipeline>()?;
    m.add_class::<ring::TakeRing>()?;
    m.add_function(wrap_pyfunction!(dataset::list_versions, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::copy_object, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::manifest_path, m)?)?;
    m.add_function(wrap_pyfunction!(transaction::read_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(transaction::write_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(transaction::decode_transaction, m)?)?;
    m.add_function(wrap_pyfunction!(transaction::encode_transaction, m)?)?;
    m.add_function(wrap_pyfunction!(transaction::prune_index_section, m)?)?;
    m.add_function(wrap_pyfunction!(transaction::filter_index_section, m)?)?;
    m.add_function(wrap_pyfunction!(transaction::describe_index_section, m)?)?;
    m.add_function(wrap_pyfunction!(transaction::index_section_entries, m)?)?;
    m.add_function(wrap_pyfunction!(transaction::index_section_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(indices::span_distances, m)?)?;
    m.add_function(wrap_pyfunction!(indices::pq_span_distances, m)?)?;
    m.add_function(wrap_pyfunction!(indices::pq_l2_span_distances, m)?)?;
    m.add_function(wrap_pyfunction!(indices::kmeans_train, m)?)?;
    m.add_function(wrap_pyfunction!(indices::fragment_bitmap, m)?)?;
    m.add_function(wrap_pyfunction!(indices::row_addr_maps_serialize, m)?)?;
    m.add_function(wrap_pyfunction!(indices::row_addr_maps_deserialize, m)?)?;
    m.add_function(wrap_pyfunction!(indices::row_addr_maps_union, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::primary_key, m)?)?;
    m.add_function(wrap_pyfunction!(indices::ivf_assign, m)?)?;
    m.add_function(wrap_pyfunction!(indices::pq_train, m)?)?;
    m.add_function(wrap_pyfunction!(indices::pq_encode, m)?)?;
    m.add_function(wrap_pyfunction!(transaction::index_section_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(transaction::rebase_index_section, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::schema_to_lance, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::lance_to_schema, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::jsonb_encode, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::jsonb_to_text, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::json_function, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::json_index_type, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::json_index_values, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::json_columns_as_text, m)?)?;
    m.add_function(wrap_pyfunction!(fragment::write_fragments, m)?)?;
    m.add_function(wrap_pyfunction!(fragment::decode_row_ids, m)?)?;
    m.add_function(wrap_pyfunction!(fragment::encode_row_ids, m)?)?;
    manifest::register(m)?;
    index_proto::register(m)?;
    cache::register(m)?;
    fts::register(m)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    Ok(())
}

/// Panics inside the core, as a bug would: lets the tests check that a panic reaches Python
/// as `lancepy.exceptions.InternalError` and leaves the interpreter usable.
#[pyfunction]
fn _panic_for_tests(py: Python<'_>) -> PyResult<()> {
    errors::run(py, || -> crate::error::Result<()> { panic!("deliberate panic for the tests") })
}
