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
//! A local file of at most [`RESIDENT_MAX_BYTES`] is read whole when it is opened (one read,
//! the one its footer needs anyway) and closed: its reader serves every later read from
//! memory and holds no file descriptor. Other readers keep their file open.
//!
//! Readers are evicted least recently used first when the bytes they hold
//! ([`FileReader::held_bytes`], and a resident file's contents) pass a budget, or the number
//! of readers holding an open file passes a limit (each holds a file descriptor), and as soon
//! as the file is deleted through a [`Store`] (cleanup, dropping a dataset, a failed write's
//! rollback). Limits default to [`DEFAULT_MAX_BYTES`] / [`DEFAULT_MAX_FILES`], overridable
//! with the environment variables `LANCEPY_READER_CACHE_BYTES` / `LANCEPY_READER_CACHE_FILES`
//! or [`set_limits`]; a file limit of 0 turns the cache off.
//!
//! A scan over more files than the cache holds passes once over each ([`Admission::IfRoom`]):
//! the readers it opens are kept only while there is room, instead of evicting readers that
//! are used again for readers that are not.
//!
//! A snapshot that found a reader here keeps a [`Weak`] reference to its entry
//! ([`open_data_file_kept`]) and finds it again through that ([`reuse`]), without building
//! the file's URI or taking the cache's lock. Such a use still counts as a use: it stamps the
//! entry's last use (an atomic), and eviction, which goes by the stamps in its order, takes
//! an entry used since it was placed there for the newer stamp instead of evicting it. An
//! evicted entry is dropped, so the snapshot's reference to it no longer finds anything.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use crate::error::{Error, Result};
use crate::file::FileReader;
use crate::io::{BufferReader, Origin, ReaderRef, ResolvedUri, Store};

/// Default budget of the bytes held by cached readers.
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;
/// Default most readers kept with an open file.
pub const DEFAULT_MAX_FILES: usize = 1024;
/// Local files up to this size are read whole on opening and held in memory (the open's
/// read of a local file's tail, 16 KiB, covers such a file anyway).
pub const RESIDENT_MAX_BYTES: u64 = 16 * 1024;

/// Openings after which the bytes of every cached reader are measured anew (readers grow
/// after they are cached, as page metadata loads on first use; in between, a reader's bytes
/// are those measured when it was last found or opened through the cache).
const REMEASURE_EVERY: u32 = 256;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    uri: String,
    origin: Origin,
}

/// A cached reader and its last use: the cache holds the only strong reference, snapshots
/// that found it a [`Weak`] one.
pub struct Kept {
    reader: Arc<FileReader>,
    last_use: AtomicU64,
}

/// Uses of cached readers, in order: a stamp is never issued twice.
static CLOCK: AtomicU64 = AtomicU64::new(1);

fn tick() -> u64 {
    CLOCK.fetch_add(1, Ordering::Relaxed)
}

struct Entry {
    kept: Arc<Kept>,
    /// The entry's key in [`Cache::order`]: its last use when it was placed there (the
    /// entry may have been used since, through a [`Weak`] reference: `kept.last_use`).
    pos: u64,
    /// The file's bytes held in memory (a resident file), else 0.
    resident: u64,
    /// The reader's bytes as last measured, with `resident` (counted in [`Cache::bytes`]).
    counted: u64,
}

impl Entry {
    fn weight(&self) -> u64 {
        self.kept.reader.held_bytes() + self.resident
    }
}

/// Whether a file opened on a cache miss is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Admission {
    /// Kept, evicting the least recently used readers past the limits.
    #[default]
    Always,
    /// Kept only while the cache has room for it: a read that passes once over more files
    /// than the cache holds (a scan of many small fragments) would otherwise evict every
    /// reader it finds, its own included, before they are used again.
    IfRoom,
}

/// What the cache holds now, and its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheInfo {
    /// Readers kept.
    pub files: usize,
    /// Of those, readers holding an open file (the others hold their file in memory).
    pub open_files: usize,
    /// Bytes they hold.
    pub bytes: u64,
    /// Budget of bytes.
    pub max_bytes: u64,
    /// Most readers kept with an open file.
    pub max_files: usize,
}

struct Cache {
    entries: HashMap<Key, Entry>,
    /// The keys by last use, oldest first (`Entry::pos` is the position; a use through a
    /// [`Weak`] reference is seen when the entry comes up for eviction): readers holding an
    /// open file (`[0]`) and resident ones (`[1]`).
    order: [BTreeMap<u64, Key>; 2],
    /// Sum of `Entry::counted`.
    bytes: u64,
    /// Openings since the bytes were last measured in full.
    since_measure: u32,
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
                order: [BTreeMap::new(), BTreeMap::new()],
                bytes: 0,
                since_measure: 0,
                max_bytes: env_limit("LANCEPY_READER_CACHE_BYTES").unwrap_or(DEFAULT_MAX_BYTES),
                max_files: env_limit("LANCEPY_READER_CACHE_FILES").map_or(DEFAULT_MAX_FILES, |n| n as usize),
            })
        })
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

fn kind(resident: u64) -> usize {
    usize::from(resident > 0)
}

impl Cache {
    fn open_files(&self) -> usize {
        self.order[0].len()
    }

    fn within_limits(&self) -> bool {
        if self.max_files == 0 {
            return self.entries.is_empty();
        }
        self.bytes <= self.max_bytes && self.open_files() <= self.max_files
    }

    /// Measures every reader's bytes anew.
    fn measure(&mut self) {
        let mut total = 0;
        for e in self.entries.values_mut() {
            e.counted = e.weight();
            total += e.counted;
        }
        self.bytes = total;
        self.since_measure = 0;
    }

    /// The cached reader of `key`, now the most recently used one.
    fn hit(&mut self, key: &Key) -> Option<Arc<Kept>> {
        let now = tick();
        let e = self.entries.get_mut(key)?;
        let order = &mut self.order[kind(e.resident)];
        let k = order.remove(&e.pos).unwrap_or_else(|| key.clone());
        order.insert(now, k);
        e.pos = now;
        e.kept.last_use.store(now, Ordering::Relaxed);
        let weight = e.weight();
        self.bytes = self.bytes - e.counted + weight;
        e.counted = weight;
        Some(e.kept.clone())
    }

    fn remove(&mut self, key: &Key) {
        if let Some(e) = self.entries.remove(key) {
            self.order[kind(e.resident)].remove(&e.pos);
            self.bytes -= e.counted;
        }
    }

    fn insert(&mut self, key: Key, reader: Arc<FileReader>, resident: u64) -> Arc<Kept> {
        self.remove(&key);
        let now = tick();
        let kept = Arc::new(Kept { reader, last_use: AtomicU64::new(now) });
        let entry = Entry { kept: kept.clone(), pos: now, resident, counted: 0 };
        let counted = entry.weight();
        self.bytes += counted;
        self.order[kind(resident)].insert(now, key.clone());
        self.entries.insert(key, Entry { counted, ..entry });
        self.since_measure += 1;
        self.shrink();
        kept
    }

    /// Whether a reader weighing `weight` bytes (`resident`: holding no open file) fits
    /// without evicting another.
    fn has_room(&self, weight: u64, resident: bool) -> bool {
        self.max_files > 0
            && (resident || self.open_files() < self.max_files)
            && self.bytes.saturating_add(weight) <= self.max_bytes
    }

    /// Evicts least recently used readers until both limits hold: readers holding an open
    /// file while there are too many of those, the least recently used of all while there
    /// are too many bytes.
    fn shrink(&mut self) {
        if self.since_measure >= REMEASURE_EVERY {
            self.measure();
        }
        while !self.within_limits() {
            let too_many_files = self.open_files() > self.max_files;
            let from = match (self.order[0].first_key_value(), self.order[1].first_key_value()) {
                (Some(_), _) if too_many_files => 0,
                (Some((a, _)), Some((b, _))) => usize::from(b < a),
                (Some(_), None) => 0,
                (None, Some(_)) => 1,
                (None, None) => break,
            };
            let Some((pos, key)) = self.order[from].pop_first() else { break };
            // Used through a snapshot's reference since it was placed: placed anew.
            if let Some(e) = self.entries.get_mut(&key) {
                let used = e.kept.last_use.load(Ordering::Relaxed);
                if used > pos {
                    e.pos = used;
                    self.order[from].insert(used, key);
                    continue;
                }
            }
            if let Some(e) = self.entries.remove(&key) {
                self.bytes -= e.counted;
            }
        }
    }

    fn retain(&mut self, keep: impl Fn(&Key) -> bool) {
        let gone: Vec<Key> = self.entries.keys().filter(|k| !keep(k)).cloned().collect();
        for k in &gone {
            self.remove(k);
        }
    }
}

/// Opens the file `resolved` names (`uri` in messages): a local file of at most
/// [`RESIDENT_MAX_BYTES`] is read whole and closed. Returns the reader and the bytes of the
/// file it holds in memory (0 if it reads the file as needed).
fn open(resolved: ResolvedUri, uri: &str) -> Result<(Arc<FileReader>, u64)> {
    let local = matches!(resolved, ResolvedUri::Local(_));
    let io = resolved.open_reader(uri)?;
    if local {
        let size = io.size()?;
        if size > 0 && size <= RESIDENT_MAX_BYTES {
            let data = io.read_range(0..size)?;
            let whole: ReaderRef = Arc::new(BufferReader::new(io.path(), data));
            drop(io); // closes the file
            return Ok((Arc::new(FileReader::open_with(whole)?), size));
        }
    }
    Ok((Arc::new(FileReader::open_with(io)?), 0))
}

/// The reader of the data file at `uri`, read through `store` (whose options for that URI
/// decide where the bytes come from): cached, or opened and cached.
pub fn open_data_file(store: &Store, uri: &str) -> Result<Arc<FileReader>> {
    open_data_file_as(store, uri, Admission::Always)
}

/// [`open_data_file`], keeping a reader opened on a miss as `admission` says.
pub fn open_data_file_as(store: &Store, uri: &str, admission: Admission) -> Result<Arc<FileReader>> {
    open_data_file_kept(store, uri, admission).map(|(reader, _)| reader)
}

/// [`open_data_file_as`], with a reference to the cache's entry for [`reuse`] (dangling if the
/// reader was not kept).
pub fn open_data_file_kept(store: &Store, uri: &str, admission: Admission) -> Result<(Arc<FileReader>, Weak<Kept>)> {
    let resolved = store.resolve_uri(uri)?;
    let key = Key { uri: uri.to_string(), origin: resolved.origin() };
    if let Some(k) = cache().hit(&key) {
        return Ok((k.reader.clone(), Arc::downgrade(&k)));
    }
    // Opened without the lock: other files are opened (and found) meanwhile. Two threads
    // opening the same file both read its metadata; the second insert wins, both are valid.
    let (reader, resident) = open(resolved, uri).map_err(|e| match e {
        Error::NotFound(m) => Error::NotFound(format!("data file {uri} is missing ({m})")),
        other => other,
    })?;
    let mut c = cache();
    if admission == Admission::Always || c.has_room(reader.held_bytes() + resident, resident > 0) {
        let kept = c.insert(key, reader.clone(), resident);
        return Ok((reader, Arc::downgrade(&kept)));
    }
    Ok((reader, Weak::new()))
}

/// The reader `kept` refers to, if the cache still holds it (it is then the most recently
/// used one): no URI is built and no lock taken.
pub fn reuse(kept: &Weak<Kept>) -> Option<Arc<FileReader>> {
    let k = kept.upgrade()?;
    k.last_use.store(tick(), Ordering::Relaxed);
    Some(k.reader.clone())
}

/// The most readers the cache keeps with an open file.
pub fn max_files() -> usize {
    cache().max_files
}

/// Forgets every cached reader of the file at `uri` (whatever its origin): it was deleted.
pub fn evict(uri: &str) {
    cache().retain(|k| k.uri != uri);
}

/// Forgets every cached reader of a file under `root` (a dataset directory that was dropped).
pub fn evict_under(root: &str) {
    let root = root.trim_end_matches('/');
    cache().retain(|k| !k.uri.strip_prefix(root).is_some_and(|rest| rest.starts_with('/')));
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
    c.measure();
    c.shrink();
}

/// What the cache holds now.
pub fn info() -> CacheInfo {
    let mut c = cache();
    c.measure();
    CacheInfo {
        files: c.entries.len(),
        open_files: c.open_files(),
        bytes: c.bytes,
        max_bytes: c.max_bytes,
        max_files: c.max_files,
    }
}

/// Empties the cache.
pub fn clear() {
    let mut c = cache();
    c.entries.clear();
    c.order = [BTreeMap::new(), BTreeMap::new()];
    c.bytes = 0;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::StorageOptions;

    fn write_file(root: &str, name: &str, rows: i64) -> String {
        use crate::file::{FileWriter, WriterOptions};
        use arrow_array::{ArrayRef, Int64Array, RecordBatch};
        let uri = format!("{root}/{name}");
        // Values that do not compress: the size follows the rows.
        let values = (0..rows).map(|i| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as i64);
        let batch = RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from_iter_values(values)) as ArrayRef)]).unwrap();
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

        // A read passing once over more files than the cache holds keeps the readers found.
        clear();
        set_limits(Some(u64::MAX), Some(2));
        let hot: Vec<_> = uris[..2].iter().map(|u| open_data_file(&store, u).unwrap()).collect();
        let once = open_data_file_as(&store, &uris[2], Admission::IfRoom).unwrap();
        assert_eq!(once.num_rows(), 1000);
        assert_eq!((info().files, info().open_files), (2, 2), "no room: not kept, nothing evicted");
        for (u, h) in uris[..2].iter().zip(&hot) {
            assert!(Arc::ptr_eq(h, &open_data_file_as(&store, u, Admission::IfRoom).unwrap()));
        }
        evict(&uris[0]);
        open_data_file_as(&store, &uris[2], Admission::IfRoom).unwrap();
        assert_eq!(info().files, 2, "room: kept");

        // A reader found again through a kept reference counts as used: the least recently
        // used one goes first, whichever way it was found; an evicted one is not found.
        clear();
        set_limits(Some(u64::MAX), Some(2));
        let (r0, k0) = open_data_file_kept(&store, &uris[0], Admission::Always).unwrap();
        let (_, k1) = open_data_file_kept(&store, &uris[1], Admission::Always).unwrap();
        assert!(Arc::ptr_eq(&r0, &reuse(&k0).unwrap()), "found again through the reference");
        open_data_file(&store, &uris[2]).unwrap();
        assert!(reuse(&k1).is_none(), "the least recently used went first");
        assert!(reuse(&k0).is_some(), "used through its reference after the other: kept");
        evict(&uris[0]);
        assert!(reuse(&k0).is_none(), "evicted: the reference finds nothing");
        open_data_file(&store, &uris[1]).unwrap();
        let (r3, not_kept) = open_data_file_kept(&store, &uris[3], Admission::IfRoom).unwrap();
        assert_eq!((r3.num_rows(), info().files), (1000, 2));
        assert!(reuse(&not_kept).is_none(), "no room, not kept: nothing to find again");

        // Small local files are read whole and closed: their readers hold no open file, so
        // the file limit leaves them be, and the byte budget counts their contents.
        clear();
        let dir = std::env::temp_dir().join(format!("file-cache-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let local_root = dir.to_str().unwrap().to_string();
        let local = Store::open(&local_root).unwrap();
        let small: Vec<String> = (0..3).map(|i| write_file(&local_root, &format!("s{i}.lance"), 100)).collect();
        let big = write_file(&local_root, "big.lance", 20_000);
        assert!(std::fs::metadata(&big).unwrap().len() > RESIDENT_MAX_BYTES);
        set_limits(Some(u64::MAX), Some(1));
        for u in &small {
            open_data_file(&local, u).unwrap();
        }
        open_data_file(&local, &big).unwrap();
        assert_eq!((info().files, info().open_files), (4, 1));
        assert!(info().bytes >= small.iter().map(|u| std::fs::metadata(u).unwrap().len()).sum::<u64>());
        let r = open_data_file(&local, &small[0]).unwrap();
        std::fs::remove_file(&small[0]).unwrap();
        let got = r.read_range(0, 100, &[0]).unwrap();
        assert_eq!(got.num_rows(), 100, "served from memory once the file is gone");
        set_limits(None, Some(0));
        assert_eq!(info().files, 0, "a file limit of 0 turns the cache off");
        open_data_file(&local, &small[1]).unwrap();
        assert_eq!(info().files, 0);
        std::fs::remove_dir_all(&dir).unwrap();
        set_limits(Some(DEFAULT_MAX_BYTES), Some(DEFAULT_MAX_FILES));
    }
}
