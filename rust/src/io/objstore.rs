//! `object_store`-backed reads and writes (`memory://` now; cloud stores plug in here).

use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_buffer::Buffer;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, PutPayload};

use super::{check_range, Reader, Writer};
use crate::error::{Error, Result};

/// The process-wide tokio runtime used to drive `object_store` futures.
///
/// Rebuilt after `fork()`: a child process inherits the parent's runtime handle but none of
/// its worker threads, so using it would hang (PyTorch DataLoader workers fork).
pub fn runtime() -> Arc<tokio::runtime::Runtime> {
    static RT: Mutex<Option<(u32, Arc<tokio::runtime::Runtime>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut guard = RT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((owner, rt)) = guard.as_ref() {
        if *owner == pid {
            return rt.clone();
        }
    }
    if let Some((_, stale)) = guard.take() {
        // The stale runtime's threads do not exist in this process; dropping it would wait
        // for them forever, so it is deliberately leaked.
        std::mem::forget(stale);
    }
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("lancepy-io")
            .enable_all()
            .build()
            .expect("building the tokio runtime"),
    );
    *guard = Some((pid, rt.clone()));
    rt
}

/// Reads one object of an object store.
#[derive(Debug)]
pub struct ObjectStoreReader {
    store: Arc<dyn ObjectStore>,
    location: ObjectPath,
    display: String,
    size: OnceLock<u64>,
}

impl ObjectStoreReader {
    /// A reader of `location` in `store`; `display` is used in messages.
    pub fn new(store: Arc<dyn ObjectStore>, location: ObjectPath, display: String) -> Self {
        Self { store, location, display, size: OnceLock::new() }
    }
}

impl Reader for ObjectStoreReader {
    fn path(&self) -> &str {
        &self.display
    }

    fn size(&self) -> Result<u64> {
        if let Some(s) = self.size.get() {
            return Ok(*s);
        }
        let meta = runtime().block_on(self.store.head(&self.location)).map_err(|e| match e {
            object_store::Error::NotFound { .. } => Error::NotFound(self.display.clone()),
            other => Error::ObjectStore(other),
        })?;
        let _ = self.size.set(meta.size);
        Ok(meta.size)
    }

    fn read_range(&self, range: Range<u64>) -> Result<Buffer> {
        check_range(&range, self.size()?, &self.display)?;
        if range.start == range.end {
            return Ok(Buffer::from_vec(Vec::<u8>::new()));
        }
        let bytes = runtime().block_on(self.store.get_range(&self.location, range))?;
        Ok(Buffer::from(bytes))
    }

    fn coalesce_gap(&self) -> u64 {
        1 << 20
    }
}

/// Buffers a whole object in memory and puts it on `finish`.
pub struct ObjectStoreWriter {
    store: Arc<dyn ObjectStore>,
    location: ObjectPath,
    data: Vec<u8>,
}

impl ObjectStoreWriter {
    /// A writer that will create `location` in `store`.
    pub fn new(store: Arc<dyn ObjectStore>, location: ObjectPath) -> Self {
        Self { store, location, data: Vec::new() }
    }
}

impl Writer for ObjectStoreWriter {
    fn write_all(&mut self, data: &[u8]) -> Result<()> {
        self.data.extend_from_slice(data);
        Ok(())
    }

    fn position(&self) -> u64 {
        self.data.len() as u64
    }

    fn finish(self: Box<Self>) -> Result<u64> {
        let len = self.data.len() as u64;
        let payload = PutPayload::from(self.data);
        runtime().block_on(self.store.put(&self.location, payload))?;
        Ok(len)
    }
}
