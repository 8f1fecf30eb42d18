//! The `lancepy._lancepy` extension module. All PyO3 code lives under this directory.

mod cache;
mod errors;
mod ffi;
mod file;
mod index_proto;
mod manifest;
mod table;

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
    m.add_class::<ffi::ArrowBatches>()?;
    m.add_class::<ffi::BatchStream>()?;
    m.add_class::<ffi::FixedValues>()?;
    table::register(m)?;
    manifest::register(m)?;
    index_proto::register(m)?;
    cache::register(m)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    Ok(())
}

/// Panics inside the core, as a bug would: lets the tests check that a panic reaches Python
/// as `lancepy.exceptions.InternalError` and leaves the interpreter usable.
#[pyfunction]
fn _panic_for_tests(py: Python<'_>) -> PyResult<()> {
    errors::run(py, || -> crate::error::Result<()> { panic!("deliberate panic for the tests") })
}
