//! The one error type of the crate.
//!
//! Every fallible function returns [`Result`]. The Python bindings map each variant to one
//! class of `lancepy.exceptions` in a single place (`python/errors.rs`).

use std::fmt::Display;

/// Errors raised by lancepy's core.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes do not form a valid Lance file, manifest or encoded buffer: truncated,
    /// damaged, or not Lance at all.
    #[error("corrupt data: {0}")]
    Corrupt(String),

    /// The data uses a format version, encoding, type or feature that is not implemented.
    #[error("not supported: {0}")]
    NotSupported(String),

    /// An argument from the caller is not valid.
    #[error("invalid argument: {0}")]
    InvalidInput(String),

    /// Data does not match the schema it is written against.
    #[error("schema mismatch: {0}")]
    SchemaMismatch(String),

    /// A requested column does not exist.
    #[error("column not found: {0}")]
    ColumnNotFound(String),

    /// A row index lies outside the file or dataset.
    #[error("index out of range: {0}")]
    IndexOutOfRange(String),

    /// A file or object does not exist.
    #[error("not found: {0}")]
    NotFound(String),

    /// A file lives under one of the manifest's base paths (another dataset's root, e.g. the
    /// source of a shallow clone) and that base path no longer exists.
    #[error("base path not found: {0}")]
    BasePathNotFound(String),

    /// A requested dataset version or tag does not exist.
    #[error("version not found: {0}")]
    VersionNotFound(String),

    /// Another writer committed a conflicting change first.
    #[error("commit conflict: {0}")]
    CommitConflict(String),

    /// Storage I/O failed.
    #[error("I/O error: {context}: {source}")]
    Io {
        /// What was being done (usually includes the path).
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// An object store operation failed.
    #[error("object store error: {0}")]
    ObjectStore(#[from] object_store::Error),

    /// Object storage refused a request (e.g. bad credentials); the message says what to check.
    #[error("storage error: {0}")]
    Storage(String),

    /// An Arrow operation failed.
    #[error("arrow error: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),

    /// The operation was interrupted (Ctrl-C).
    #[error("interrupted")]
    Interrupted,

    /// A bug in lancepy (an internal invariant failed). Please report it.
    #[error("internal error (a bug in lancepy, please report it): {0}")]
    Internal(String),
}

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A corrupt-data error with a formatted message.
    pub fn corrupt(msg: impl Display) -> Self {
        Error::Corrupt(msg.to_string())
    }
    /// A not-supported error with a formatted message.
    pub fn not_supported(msg: impl Display) -> Self {
        Error::NotSupported(msg.to_string())
    }
    /// An invalid-argument error with a formatted message.
    pub fn invalid_input(msg: impl Display) -> Self {
        Error::InvalidInput(msg.to_string())
    }
    /// A bug: an internal invariant failed (never caused by bad input).
    pub fn internal(msg: impl Display) -> Self {
        Error::Internal(msg.to_string())
    }
    /// An I/O error with context.
    pub fn io(context: impl Display, source: std::io::Error) -> Self {
        if source.kind() == std::io::ErrorKind::NotFound {
            return Error::NotFound(format!("{context}: {source}"));
        }
        Error::Io { context: context.to_string(), source }
    }
}

impl From<prost::DecodeError> for Error {
    fn from(e: prost::DecodeError) -> Self {
        Error::Corrupt(format!("invalid protobuf message: {e}"))
    }
}

/// Returns `Err(Error::Corrupt)` with a formatted message unless the condition holds.
#[macro_export]
macro_rules! ensure_corrupt {
    ($cond:expr, $($arg:tt)+) => {
        if !($cond) {
            return Err($crate::error::Error::Corrupt(format!($($arg)+)));
        }
    };
}

/// Runs `f`, turning a panic into [`Error::Internal`]: for code that must not unwind, such as
/// an exported Arrow stream (unwinding across the C boundary aborts) or a job on a pool thread
/// (a panic there aborts the process).
pub fn catch<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        Err(Error::Internal(msg))
    })
}
