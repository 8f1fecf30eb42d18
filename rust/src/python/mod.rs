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

/// `mi_option_purge_delay` in mimalloc's `mi_option_t` (the same in its v2 and v3 headers).
const MI_OPTION_PURGE_DELAY: std::os::raw::c_int = 15;

/// Sets how long (milliseconds) the allocator keeps freed memory before handing it back to
/// the OS, for the whole process; returns the previous value. mimalloc's default (1 s) makes
/// repeated reads fast (no page faults for buffers reused within the second), but a long
/// build whose buffers are freed on other threads than allocated them holds a second's worth
/// of them: builds set 0 while they run (`lancepy._core.allocator.lean`).
#[pyfunction]
fn allocator_purge_delay(ms: i64) -> i64 {
    // SAFETY: mimalloc's options are process-wide integers it reads on use; getting and
    // setting one are plain loads and stores, valid at any time from any thread.
    unsafe {
        let old = libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) as i64;
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ms as std::os::raw::c_long);
        old
    }
}

/// The native module.
#[pymodule]
fn _lancepy(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::note_main_thread();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(allocator_purge_delay, m)?)?;
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
    m.add_function(wrap_pyfunction!(dataset::latest_version, m)?)?;
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
    m.add_function(wrap_pyfunction!(fragment::decode_row_versions, m)?)?;
    m.add_function(wrap_pyfunction!(fragment::decode_row_ids_le, m)?)?;
    m.add_function(wrap_pyfunction!(fragment::encode_row_versions, m)?)?;
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
