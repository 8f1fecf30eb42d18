//! Open data files, shared by every snapshot of every dataset in the process.
//!
//! Opening a data file costs a read of its tail (a round trip on object storage) and the
//! parsing of its metadata; page metadata (chunk tables, dictionaries) is loaded on first use
//! and kept on the reader. Data files are immutable and uniquely named, so a reader can be
//! reused by any later read of the same file *from the same place*.
//!
//! "The same place" is the file's URI **and** its [`Origin`]: the object store and
//! everything that configures its client (storage options: endpoint, region, credentials;
//! the cloud environment variables). A read under other options never gets a reader opened
//! under these: a mirrored dataset at the same `s3://` URI on another endpoint is read from
//! that endpoint, and credentials that may not read a file get the store's refusal, not bytes
//! fetched earlier with other credentials.
//!
//! Readers are evicted least recently used first when the bytes they hold
//! ([`FileReader::held_bytes`]) pass a budget, or their number passes a limit (each local one
//! holds a file descriptor), and as soon as the file is deleted through a [`Store`]
//! (cleanup, dropping a dataset, a failed write's rollback). Limits default to
//! [`DEFAULT_MAX_BYTES`] / [`DEFAULT_MAX_FILES`], overridable with the environment variables
//! `LANCEPY_READER_CACHE_BYTES` / `LANCEPY_READER_CACHE_FILES` or [`set_limits`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::error::{Error, Result};
use crate::file::FileReader;
use crate::io::{Origin, Store};

/// Default budget of the bytes held by cached readers.
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;
/// Default most readers kept open.
pub const DEFAULT_MAX_FILES: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    uri: String,
    origin: Origin,
}

struct Entry {
    reader: Arc<FileReader>,
    last_use: u64,
}

/// What the cache holds now, and its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheInfo {
    /// Readers kept.
    pub files: usize,
    /// Bytes they hold.
    pub bytes: u64,
    /// Budget of bytes.
    pub max_bytes: u64,
    /// Most readers kept.
    pub max_files: usize,
}

struct Cache {
    entries: HashMap<Key, Entry>,
    clock: u64,
    max_bytes: u64,
    max_files: usize,
}

fn env_limit(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse::<u64>().ok())
}

fn cache() -> MutexGuard<'static, Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE
        .get_or_init(|| {
            Mutex::new(Cache {
                entries: HashMap::new(),
                clock: 0,
                max_bytes: env_limit("LANCEPY_READER_CACHE_BYTES").unwrap_or(DEFAULT_MAX_BYTES),
                max_files: env_limit("LANCEPY_READER_CACHE_FILES").map_or(DEFAULT_MAX_FILES, |n| n as usize),
            })
        })
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

impl Cache {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn bytes(&self) -> u64 {
        self.entries.values().map(|e| e.reader.held_bytes()).sum()
    }

    /// Evicts least recently used readers until both limits hold. Readers grow after they
    /// are cached (page metadata loads on first use), so the total is measured anew.
    fn shrink(&mut self) {
        let mut bytes = self.bytes();
        if bytes <= self.max_bytes && self.entries.len() <= self.max_files {
            return;
        }
        let mut by_age: Vec<(u64, Key, u64)> =
            self.entries.iter().map(|(k, e)| (e.last_use, k.clone(), e.reader.held_bytes())).collect();
        by_age.sort_unstable_by_key(|(t, _, _)| *t);
        for (_, key, held) in by_age {
            if bytes <= self.max_bytes && self.entries.len() <= self.max_files {
                break;
            }
            self.entries.remove(&key);
            bytes = bytes.saturating_sub(held);
        }
    }
}

/// The reader of the data file at `uri`, read through `store` (whose options for that URI
/// decide where the bytes come from): cached, or opened and cached.
pub fn open_data_file(store: &Store, uri: &str) -> Result<Arc<FileReader>> {
    let resolved = store.resolve_uri(uri)?;
    let key = Key { uri: uri.to_string(), origin: resolved.origin() };
    {
        let mut c = cache();
        let now = c.tick();
        if let Some(e) = c.entries.get_mut(&key) {
            e.last_use = now;
            return Ok(e.reader.clone());
        }
    }
    // Opened without the lock: other files are opened (and found) meanwhile. Two threads
    // opening the same file both read its metadata; the second insert wins, both are valid.
    let reader = Arc::new(resolved.open_reader(uri).and_then(FileReader::open_with).map_err(|e| match e {
        Error::NotFound(m) => Error::NotFound(format!("data file {uri} is missing ({m})")),
        other => other,
    })?);
    let mut c = cache();
    let now = c.tick();
    c.entries.insert(key, Entry { reader: reader.clone(), last_use: now });
    c.shrink();
    Ok(reader)
}

/// Forgets every cached reader of the file at `uri` (whatever its origin): it was deleted.
pub fn evict(uri: &str) {
    cache().entries.retain(|k, _| k.uri != uri);
}

/// Forgets every cached reader of a file under `root` (a dataset directory that was dropped).
pub fn evict_under(root: &str) {
    let root = root.trim_end_matches('/');
    cache().entries.retain(|k, _| !k.uri.strip_prefix(root).is_some_and(|rest| rest.starts_with('/')));
}

/// Sets the limits (`None` keeps a limit as it is) and evicts down to them.
pub fn set_limits(max_bytes: Option<u64>, max_files: Option<usize>) {
    let mut c = cache();
    if let Some(b) = max_bytes {
        c.max_bytes = b;
    }
    if let Some(n) = max_files {
        c.max_files = n;
    }
    c.shrink();
}

/// What the cache holds now.
pub fn info() -> CacheInfo {
    let c = cache();
    CacheInfo { files: c.entries.len(), bytes: c.bytes(), max_bytes: c.max_bytes, max_files: c.max_files }
}

/// Empties the cache.
pub fn clear() {
    cache().entries.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::StorageOptions;

    fn write_file(root: &str, name: &str, rows: i64) -> String {
        use crate::file::{FileWriter, WriterOptions};
        use arrow_array::{ArrayRef, Int64Array, RecordBatch};
        let uri = format!("{root}/{name}");
        let batch = RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from_iter_values(0..rows)) as ArrayRef)]).unwrap();
        let mut w = FileWriter::try_new(&uri, &batch.schema(), WriterOptions::default()).unwrap();
        w.write_batch(&batch).unwrap();
        w.finish().unwrap();
        uri
    }

    // One test: the cache and its limits are process-wide.
    #[test]
    fn keys_limits_and_eviction() {
        let root = format!("memory://file-cache-{}", uuid::Uuid::new_v4().simple());
        let store = Store::open(&root).unwrap();
        let uris: Vec<String> = (0..6).map(|i| write_file(&root, &format!("f{i}.lance"), 1000)).collect();
        clear();
        set_limits(Some(u64::MAX), Some(4));
        let first = open_data_file(&store, &uris[0]).unwrap();
        assert!(Arc::ptr_eq(&first, &open_data_file(&store, &uris[0]).unwrap()), "a second open is served from the cache");
        for u in &uris[1..] {
            open_data_file(&store, u).unwrap();
        }
        assert_eq!(info().files, 4, "the file limit holds");
        assert!(!Arc::ptr_eq(&first, &open_data_file(&store, &uris[0]).unwrap()), "the least recently used went first");
        // A byte budget smaller than two readers keeps one.
        let one = open_data_file(&store, &uris[1]).unwrap().held_bytes();
        set_limits(Some(one + one / 2), None);
        assert_eq!(info().files, 1);
        assert!(info().bytes <= one + one / 2);
        set_limits(Some(u64::MAX), None);
        open_data_file(&store, &uris[2]).unwrap();
        open_data_file(&store, &uris[3]).unwrap();
        evict(&uris[2]);
        assert_eq!(info().files, 2);
        evict_under(&root);
        assert_eq!(info().files, 0, "evicted by file and by directory");
        // Another origin is another entry: local files, memory:// and each set of options.
        let local = Store::open("/tmp").unwrap().resolve_uri("/tmp/x.lance").unwrap().origin();
        assert_ne!(local, store.resolve_uri(&uris[0]).unwrap().origin());
        let s3 = |key: &str| {
            let o: StorageOptions = [
                ("aws_access_key_id", key),
                ("aws_secret_access_key", "s"),
                ("aws_endpoint", "http://127.0.0.1:1"),
                ("allow_http", "true"),
                ("aws_region", "us-east-1"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
            Store::open_with("s3://b/d", &o).unwrap().resolve_uri("s3://b/d/data/x.lance").unwrap().origin()
        };
        assert_eq!(s3("a"), s3("a"));
        assert_ne!(s3("a"), s3("b"), "other credentials, another origin");
        set_limits(Some(DEFAULT_MAX_BYTES), Some(DEFAULT_MAX_FILES));
    }
}
