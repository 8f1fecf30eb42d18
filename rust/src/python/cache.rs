//! The process-wide cache of open data files (`crate::table::file_cache`) and the I/O
//! counters (`crate::io::io_counts`), for Python.

use pyo3::prelude::*;

use super::errors::to_pyerr;
use crate::error::Error;

fn invalid(msg: String) -> PyErr {
    to_pyerr(Error::invalid_input(msg))
}

/// `{"files", "open_files", "bytes", "max_bytes", "max_files"}`: what the cache of open data
/// files holds now and its limits.
#[pyfunction]
fn reader_cache_info(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let i = crate::table::file_cache::info();
    dict_of(
        py,
        &[
            ("files", i.files as u64),
            ("open_files", i.open_files as u64),
            ("bytes", i.bytes),
            ("max_bytes", i.max_bytes),
            ("max_files", i.max_files as u64),
        ],
    )
}

/// Sets the limits of the cache of open data files (`None` keeps one as it is) and evicts
/// the least recently used readers down to them.
#[pyfunction]
#[pyo3(signature = (max_bytes=None, max_files=None))]
fn set_reader_cache_limits(max_bytes: Option<i128>, max_files: Option<i128>) -> PyResult<()> {
    let bytes =
        max_bytes.map(|b| u64::try_from(b).map_err(|_| invalid(format!("max_bytes must be >= 0, got {b}")))).transpose()?;
    let files =
        max_files.map(|n| usize::try_from(n).map_err(|_| invalid(format!("max_files must be >= 0, got {n}")))).transpose()?;
    crate::table::file_cache::set_limits(bytes, files);
    Ok(())
}

/// `{"requests", "bytes", "mapped_bytes", "prefetch_requests", "prefetch_bytes",
/// "write_requests", "write_bytes"}`: what this process has read and written since it
/// started (see `crate::io::IoCounts`).
#[pyfunction]
fn io_counts(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    counts_dict(py, crate::io::io_counts())
}

fn counts_dict(py: Python<'_>, c: crate::io::IoCounts) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    dict_of(
        py,
        &[
            ("requests", c.requests),
            ("bytes", c.bytes),
            ("mapped_bytes", c.mapped_bytes),
            ("prefetch_requests", c.prefetch_requests),
            ("prefetch_bytes", c.prefetch_bytes),
            ("write_requests", c.write_requests),
            ("write_bytes", c.write_bytes),
        ],
    )
}

/// Counters that the I/O done inside `with tracker:` (on this thread, and on the threads
/// working for it) is added to, besides the process's: one dataset object's statistics.
#[pyclass(name = "IoTracker", module = "lancepy._lancepy", frozen)]
pub struct PyIoTracker {
    inner: std::sync::Arc<crate::io::IoTracker>,
}

#[pymethods]
impl PyIoTracker {
    #[new]
    fn new() -> Self {
        Self { inner: crate::io::IoTracker::new() }
    }

    /// The counts so far (the keys of `io_counts`).
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        counts_dict(py, self.inner.counts())
    }

    /// The counts so far, resetting them to zero.
    fn take<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        counts_dict(py, self.inner.take())
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf.get().inner.enter();
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.inner.exit();
        false
    }
}

/// Forgets the cached readers of every file under `root` (a dataset directory deleted
/// outside a `Store`).
#[pyfunction]
fn evict_cached_files(root: &str) {
    crate::table::file_cache::evict_under(root);
}

fn dict_of<'py>(py: Python<'py>, items: &[(&str, u64)]) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let d = pyo3::types::PyDict::new(py);
    for (k, v) in items {
        d.set_item(*k, *v)?;
    }
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(reader_cache_info, m)?)?;
    m.add_function(wrap_pyfunction!(set_reader_cache_limits, m)?)?;
    m.add_function(wrap_pyfunction!(evict_cached_files, m)?)?;
    m.add_function(wrap_pyfunction!(io_counts, m)?)?;
    m.add_class::<PyIoTracker>()?;
    Ok(())
}
