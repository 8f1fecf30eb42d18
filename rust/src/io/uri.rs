//! Turning a user's path or URI into a reader, a writer or a store.
//!
//! * plain paths and `file://` URIs → the local file system (positional reads);
//! * `memory://name/...` → one in-process memory store shared by the whole process;
//! * anything else → [`Error::NotSupported`].

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::ObjectStore;

use super::{LocalReader, LocalWriter, ObjectStoreReader, ObjectStoreWriter, ReaderRef, Writer};
use crate::error::{Error, Result};

/// Where a URI points.
#[derive(Debug, Clone)]
pub enum ResolvedUri {
    /// A local file-system path.
    Local(PathBuf),
    /// An object in an `object_store`.
    Object {
        /// The store.
        store: Arc<dyn ObjectStore>,
        /// The object's path inside the store.
        location: ObjectPath,
    },
}

/// The process-wide store behind `memory://`.
pub fn memory_store() -> Arc<dyn ObjectStore> {
    static MEM: OnceLock<Arc<InMemory>> = OnceLock::new();
    MEM.get_or_init(|| Arc::new(InMemory::new())).clone()
}

/// Resolves `uri` (a path or a URI).
pub fn resolve(uri: &str) -> Result<ResolvedUri> {
    if let Some(rest) = uri.strip_prefix("memory://") {
        let location =
            ObjectPath::parse(rest).map_err(|e| Error::invalid_input(format!("invalid memory:// path {uri:?}: {e}")))?;
        return Ok(ResolvedUri::Object { store: memory_store(), location });
    }
    if let Some(rest) = uri.strip_prefix("file://") {
        return Ok(ResolvedUri::Local(PathBuf::from(rest)));
    }
    if let Some((scheme, _)) = uri.split_once("://") {
        return Err(Error::not_supported(format!(
            "storage scheme {scheme:?} in {uri:?}; supported: local paths, file://, memory://"
        )));
    }
    if uri.is_empty() {
        return Err(Error::invalid_input("empty path"));
    }
    Ok(ResolvedUri::Local(PathBuf::from(uri)))
}

/// Opens `uri` for random-access reads.
pub fn open_reader(uri: &str) -> Result<ReaderRef> {
    Ok(match resolve(uri)? {
        ResolvedUri::Local(p) => Arc::new(LocalReader::open(p)?),
        ResolvedUri::Object { store, location } => Arc::new(ObjectStoreReader::new(store, location, uri.to_string())),
    })
}

/// Creates a writer for a new object at `uri`.
pub fn open_writer(uri: &str) -> Result<Box<dyn Writer>> {
    Ok(match resolve(uri)? {
        ResolvedUri::Local(p) => Box::new(LocalWriter::create(p)?),
        ResolvedUri::Object { store, location } => Box::new(ObjectStoreWriter::new(store, location)),
    })
}
