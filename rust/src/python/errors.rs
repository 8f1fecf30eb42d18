//! The one place where Rust errors become Python exceptions.
//!
//! Each [`Error`] variant maps to a class of `lancepy.exceptions` (imported from Python, so
//! the classes are the ones users catch). The Rust source chain is kept in the message.

use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyType;

use std::sync::{Arc, Mutex, OnceLock};
use std::thread::ThreadId;

use crate::error::Error;
use crate::interrupt::{Interrupt, PollFn};

fn exception_class(err: &Error) -> &'static str {
    match err {
        Error::Corrupt(_) => "CorruptFileError",
        Error::NotSupported(_) => "UnsupportedError",
        Error::InvalidInput(_) => "InvalidArgumentError",
        Error::SchemaMismatch(_) => "SchemaMismatchError",
        Error::ColumnNotFound(_) => "ColumnNotFoundError",
        Error::IndexOutOfRange(_) => "IndexOutOfRangeError",
        Error::NotFound(_) => "NotFoundError",
        Error::BasePathNotFound(_) => "BasePathNotFoundError",
        Error::VersionNotFound(_) => "VersionNotFoundError",
        Error::CommitConflict(_) => "CommitConflictError",
        Error::Io { .. } | Error::ObjectStore(_) | Error::Storage(_) => "LanceIOError",
        Error::Arrow(_) => "LanceError",
        Error::Interrupted => "",
        Error::Internal(_) => "InternalError",
    }
}

/// Converts an error into the matching `lancepy.exceptions` exception.
pub fn to_pyerr(err: Error) -> PyErr {
    if let Error::Interrupted = err {
        return PyKeyboardInterrupt::new_err("interrupted");
    }
    let name = exception_class(&err);
    let message = err.to_string();
    Python::with_gil(|py| {
        let class = py
            .import("lancepy.exceptions")
            .and_then(|m| m.getattr(name))
            .and_then(|c| c.downcast_into::<PyType>().map_err(PyErr::from));
        match class {
            Ok(cls) => PyErr::from_type(cls, message),
            Err(_) => PyRuntimeError::new_err(message),
        }
    })
}

pub use crate::error::catch;

/// The interpreter's main thread (the one that imported the module), the only thread on
/// which Python runs signal handlers.
static MAIN_THREAD: OnceLock<ThreadId> = OnceLock::new();

/// Records the calling thread as the main thread (called when the module is imported).
pub fn note_main_thread() {
    let _ = MAIN_THREAD.set(std::thread::current().id());
}

/// Runs `f` with the GIL released as an interruptible operation ([`crate::interrupt`]).
///
/// On the main thread, the core's checks between pages and batches re-acquire the GIL every
/// 50 ms or so and run Python's signal handlers; an exception they raise (`KeyboardInterrupt`
/// from Ctrl-C) cancels the operation, which then stops at its next check and unwinds through
/// its error path, and the exception is raised here. It is raised even if the operation got to
/// finish first, as Python itself would after a call returns.
pub fn interruptible<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    let pending: Arc<Mutex<Option<PyErr>>> = Arc::new(Mutex::new(None));
    let poll: Option<Box<PollFn>> = (MAIN_THREAD.get() == Some(&std::thread::current().id())).then(|| {
        let pending = pending.clone();
        Box::new(move || {
            Python::with_gil(|py| match py.check_signals() {
                Ok(()) => false,
                Err(e) => {
                    *pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    true
                }
            })
        }) as Box<PollFn>
    });
    let token = Interrupt::new(poll);
    let out = py.allow_threads(|| token.run(f));
    if let Some(e) = pending.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    Ok(out)
}

/// Runs `f` with the GIL released, interruptibly (see [`interruptible`]). A panic (a bug:
/// decoders return errors for bad input) becomes an `InternalError` instead of crashing the
/// interpreter with a `PanicException`.
pub fn run<T: Send>(py: Python<'_>, f: impl FnOnce() -> crate::error::Result<T> + Send) -> PyResult<T> {
    interruptible(py, || catch(f))?.map_err(to_pyerr)
}

/// `?`-friendly conversion for binding code.
pub trait IntoPyResult<T> {
    /// Maps the error to a Python exception.
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for crate::error::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_pyerr)
    }
}

/// A bytes-like argument as `Bytes`: a `bytes` object copied once, anything else pyo3 turns
/// into bytes (a `bytearray`, a list of ints) taken as extracted. (pyo3 extracts a `Vec<u8>`
/// item by item, even from `bytes`: a megabyte costs tens of milliseconds.)
pub fn bytes_arg(obj: &Bound<'_, PyAny>) -> PyResult<bytes::Bytes> {
    if let Ok(b) = obj.downcast::<pyo3::types::PyBytes>() {
        return Ok(bytes::Bytes::copy_from_slice(b.as_bytes()));
    }
    Ok(bytes::Bytes::from(obj.extract::<Vec<u8>>()?))
}
