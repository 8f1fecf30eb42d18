//! Storage access behind one small trait.
//!
//! Decoders never open files: the file reader plans byte ranges, asks a [`Reader`] for them
//! (which coalesces nearby ranges), and hands the bytes to pure decode functions. Local paths
//! use positional reads (`pread`), so any number of threads can read one file without a
//! shared cursor; `memory://` and the cloud stores (`s3://`, `gs://`, `az://`) go through
//! `object_store`, with reads coalesced and issued concurrently for object storage.
//!
//! Bytes come back as [`arrow_buffer::Buffer`]: reference counted, cheaply sliceable and
//! 64-byte aligned when we allocate them, so decoded values can become Arrow arrays without a
//! copy.

mod local;
mod objstore;
pub mod store;
pub mod uri;

use std::fmt::Debug;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_buffer::Buffer;

pub use local::{LocalReader, LocalWriter};
pub use objstore::{runtime, ObjectStoreReader, ObjectStoreWriter};
pub use store::{ObjectInfo, Store};
pub use uri::{open_reader, open_reader_with, open_writer, open_writer_with, Origin, ResolvedUri, StorageOptions, StoreHandle};

use crate::error::{Error, Result};

/// What was read and written: by the whole process since it started ([`io_counts`]), or
/// under one [`IoTracker`]. Requests are what reached the storage (a `pread`, a ranged GET);
/// mapped bytes were copied out of a mapped file (the kernel fetches what is not cached);
/// prefetched bytes were asked of the kernel ahead of such copies ([`Reader::prefetch`]);
/// writes count one request per object put or file finished, with its bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct IoCounts {
    /// Read requests made to storage.
    pub requests: u64,
    /// Bytes those requests returned.
    pub bytes: u64,
    /// Bytes copied out of mapped files.
    pub mapped_bytes: u64,
    /// Ranges the kernel was asked to fetch ahead of copies out of a mapping.
    pub prefetch_requests: u64,
    /// Their bytes.
    pub prefetch_bytes: u64,
    /// Objects put or files finished.
    pub write_requests: u64,
    /// Their bytes.
    pub write_bytes: u64,
}

const NUM_COUNTS: usize = 7;

/// A set of counters that I/O is attributed to while it is current: a dataset object's own
/// statistics (pylance's `io_stats_*`). [`IoTracker::run`] makes it current on the calling
/// thread; the pool threads that work for that thread ([`crate::parallel`], scan read-ahead,
/// take pipelines) inherit what was current where their work was handed out ([`scopes`],
/// [`with_scopes`]). Trackers nest: I/O counts once for every distinct tracker current at
/// the time.
#[derive(Debug, Default)]
pub struct IoTracker {
    counts: [AtomicU64; NUM_COUNTS],
}

impl IoTracker {
    /// A tracker with every count at zero.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The counts so far.
    pub fn counts(&self) -> IoCounts {
        snapshot(&self.counts)
    }

    /// The counts so far, resetting them to zero (each count is taken and reset at once, so
    /// I/O running meanwhile is counted in this answer or the next, never lost).
    pub fn take(&self) -> IoCounts {
        IoCounts::from_fn(|i| self.counts[i].swap(0, Ordering::Relaxed))
    }

    /// Runs `f` with `self` current on this thread (inside whatever trackers already are).
    pub fn run<R>(self: &Arc<Self>, f: impl FnOnce() -> R) -> R {
        with_scopes(std::slice::from_ref(self), f)
    }

    /// Makes `self` current on this thread until [`IoTracker::exit`]: for callers that cannot
    /// pass a closure (a Python `with` block). Calls must pair up on one thread.
    pub fn enter(self: &Arc<Self>) {
        SCOPES.with(|s| s.borrow_mut().push(self.clone()));
    }

    /// Ends what [`IoTracker::enter`] began: removes the innermost entry of `self`.
    pub fn exit(self: &Arc<Self>) {
        SCOPES.with(|s| {
            let mut s = s.borrow_mut();
            if let Some(i) = s.iter().rposition(|t| Arc::ptr_eq(t, self)) {
                s.remove(i);
            }
        });
    }
}

thread_local! {
    static SCOPES: std::cell::RefCell<Vec<Arc<IoTracker>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The trackers current on this thread (to hand to work done elsewhere on its behalf).
pub fn scopes() -> Vec<Arc<IoTracker>> {
    SCOPES.with(|s| s.borrow().clone())
}

/// Runs `f` with `trackers` current on this thread, in addition to those already current
/// (a pool thread's own list is empty); they are removed afterwards, also on unwinding.
pub fn with_scopes<R>(trackers: &[Arc<IoTracker>], f: impl FnOnce() -> R) -> R {
    if trackers.is_empty() {
        return f();
    }
    struct Pop(usize);
    impl Drop for Pop {
        fn drop(&mut self) {
            SCOPES.with(|s| {
                let mut s = s.borrow_mut();
                let keep = s.len().saturating_sub(self.0);
                s.truncate(keep);
            });
        }
    }
    SCOPES.with(|s| s.borrow_mut().extend(trackers.iter().cloned()));
    let _pop = Pop(trackers.len());
    f()
}

static COUNTS: [AtomicU64; NUM_COUNTS] = [const { AtomicU64::new(0) }; NUM_COUNTS];

fn snapshot(c: &[AtomicU64; NUM_COUNTS]) -> IoCounts {
    IoCounts::from_fn(|i| c[i].load(Ordering::Relaxed))
}

impl IoCounts {
    /// The counts from `get(i)`, `i` the index of each count in declaration order.
    fn from_fn(get: impl Fn(usize) -> u64) -> Self {
        IoCounts {
            requests: get(0),
            bytes: get(1),
            mapped_bytes: get(2),
            prefetch_requests: get(3),
            prefetch_bytes: get(4),
            write_requests: get(5),
            write_bytes: get(6),
        }
    }
}

/// The process's counts so far (see [`IoCounts`]).
pub fn io_counts() -> IoCounts {
    snapshot(&COUNTS)
}

/// Adds `(count i, value)` pairs to the process's counts and to every current tracker.
fn add(pairs: &[(usize, u64)]) {
    for &(i, v) in pairs {
        COUNTS[i].fetch_add(v, Ordering::Relaxed);
    }
    SCOPES.with(|s| {
        let s = s.borrow();
        for (k, t) in s.iter().enumerate() {
            // A tracker current twice (nested calls, a pool job run by the thread that handed
            // it out) counts once.
            if s[..k].iter().any(|u| Arc::ptr_eq(u, t)) {
                continue;
            }
            for &(i, v) in pairs {
                t.counts[i].fetch_add(v, Ordering::Relaxed);
            }
        }
    });
}

/// Counts `requests` reads of `bytes` in all.
pub(crate) fn count_reads(requests: u64, bytes: u64) {
    add(&[(0, requests), (1, bytes)]);
}

/// Counts bytes copied out of a mapped file (once per gather, not per row).
pub(crate) fn count_mapped(bytes: u64) {
    add(&[(2, bytes)]);
}

/// Counts ranges handed to the kernel to fetch ahead.
pub(crate) fn count_prefetch(requests: u64, bytes: u64) {
    add(&[(3, requests), (4, bytes)]);
}

/// Counts `requests` objects or files written, of `bytes` in all.
pub(crate) fn count_writes(requests: u64, bytes: u64) {
    add(&[(5, requests), (6, bytes)]);
}

/// Ranges closer than this are read with one request.
pub const DEFAULT_COALESCE_GAP: u64 = 16 * 1024;

/// Random-access, thread-safe reads of one immutable object.
pub trait Reader: Send + Sync + Debug {
    /// Where the object lives (for error messages).
    fn path(&self) -> &str;

    /// Size of the object in bytes.
    fn size(&self) -> Result<u64>;

    /// Reads exactly `range`; an error if the object is shorter.
    fn read_range(&self, range: Range<u64>) -> Result<Buffer>;

    /// The object's size and its last `len` bytes (all of it if shorter), for footers and
    /// metadata. Stores that can answer with one request (a suffix range) override this.
    fn read_tail(&self, len: u64) -> Result<(u64, Buffer)> {
        let size = self.size()?;
        Ok((size, self.read_range(size.saturating_sub(len)..size)?))
    }

    /// Largest gap between two ranges that is still read as one request.
    fn coalesce_gap(&self) -> u64 {
        DEFAULT_COALESCE_GAP
    }

    /// Reads several ranges (any order, overlaps allowed), returning one buffer per range in
    /// the order given. Nearby ranges are fetched with a single request and sliced.
    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        read_ranges_coalesced(ranges, self.coalesce_gap(), |r| self.read_range(r))
    }

    /// Whether a small read costs little more than copying its bytes (local files): then
    /// takes of fixed-width values read each row straight into the output with
    /// [`Reader::read_into`] instead of planning coalesced requests.
    fn cheap_small_reads(&self) -> bool {
        false
    }

    /// The whole object as bytes in memory, if the reader has it mapped or loaded (local files
    /// are mapped on first call). Small reads are then plain copies out of this slice.
    fn mapped(&self) -> Option<&[u8]> {
        None
    }

    /// Says that `count` byte ranges (any order; `range(i)` is the i-th, `None` to skip it)
    /// are about to be read one small read at a time (the rows of a take, copied out of
    /// [`Reader::mapped`]): a reader whose small reads would each wait on the storage starts
    /// fetching them all now, so that they are in flight together instead of one after
    /// another. Ranges are asked for lazily: a reader that finds them in memory from a few
    /// never computes the rest. A hint only: errors are ignored, bytes already in memory are
    /// not fetched again.
    fn prefetch(&self, _count: usize, _range: &dyn Fn(usize) -> Option<Range<u64>>) {}

    /// Reads exactly `dst.len()` bytes at `pos` into `dst`; an error if the object is shorter.
    fn read_into(&self, pos: u64, dst: &mut [u8]) -> Result<()> {
        let end = pos.checked_add(dst.len() as u64).ok_or_else(|| Error::corrupt(format!("{}: read past 2^64", self.path())))?;
        let bytes = self.read_range(pos..end)?;
        dst.copy_from_slice(bytes.as_slice());
        Ok(())
    }
}

/// A plan for reading many ranges with few requests.
#[derive(Debug, Clone, Default)]
pub struct CoalescedPlan {
    /// The requests to make, sorted and non-overlapping.
    pub requests: Vec<Range<u64>>,
    /// For each input range: (request index, offset within that request).
    pub placement: Vec<(usize, u64)>,
}

/// Groups `ranges` (any order, overlaps allowed) into requests, merging ranges closer than
/// `max_gap` bytes.
pub fn plan_coalesced(ranges: &[Range<u64>], max_gap: u64) -> CoalescedPlan {
    plan_coalesced_capped(ranges, max_gap, u64::MAX)
}

/// As [`plan_coalesced`], but a request is not grown past `max_request` bytes by merging
/// (a single range larger than that stays one request; overlapping ranges always merge).
pub fn plan_coalesced_capped(ranges: &[Range<u64>], max_gap: u64, max_request: u64) -> CoalescedPlan {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_unstable_by_key(|&i| (ranges[i].start, ranges[i].end));
    let mut plan = CoalescedPlan { requests: Vec::new(), placement: vec![(0, 0); ranges.len()] };
    for &i in &order {
        let r = &ranges[i];
        match plan.requests.last_mut() {
            Some(last)
                if r.start < last.end
                    || (r.start <= last.end.saturating_add(max_gap) && r.end.max(last.end) - last.start <= max_request) =>
            {
                last.end = last.end.max(r.end);
            }
            _ => plan.requests.push(r.clone()),
        }
        let req = plan.requests.len() - 1;
        plan.placement[i] = (req, r.start - plan.requests[req].start);
    }
    plan
}

/// Reads `ranges` with coalesced requests made by `fetch` and slices the results back out.
pub fn read_ranges_coalesced(
    ranges: &[Range<u64>],
    max_gap: u64,
    mut fetch: impl FnMut(Range<u64>) -> Result<Buffer>,
) -> Result<Vec<Buffer>> {
    if ranges.len() == 1 {
        return Ok(vec![fetch(ranges[0].clone())?]);
    }
    let plan = plan_coalesced(ranges, max_gap);
    let fetched = plan.requests.iter().map(|r| fetch(r.clone())).collect::<Result<Vec<_>>>()?;
    Ok(ranges
        .iter()
        .zip(&plan.placement)
        .map(|(r, &(req, off))| fetched[req].slice_with_length(off as usize, (r.end - r.start) as usize))
        .collect())
}

/// Sequential writes of one new object. Nothing is guaranteed visible before `finish`.
pub trait Writer: Send {
    /// Appends bytes.
    fn write_all(&mut self, data: &[u8]) -> Result<()>;
    /// Number of bytes written so far.
    fn position(&self) -> u64;
    /// Flushes and publishes the object; returns its size.
    fn finish(self: Box<Self>) -> Result<u64>;
}

/// A reader over bytes already in memory (tests and small objects).
#[derive(Debug, Clone)]
pub struct BufferReader {
    name: String,
    data: Buffer,
}

impl BufferReader {
    /// Wraps `data`; `name` appears in error messages.
    pub fn new(name: impl Into<String>, data: Buffer) -> Self {
        Self { name: name.into(), data }
    }
}

impl Reader for BufferReader {
    fn path(&self) -> &str {
        &self.name
    }
    fn size(&self) -> Result<u64> {
        Ok(self.data.len() as u64)
    }
    fn read_range(&self, range: Range<u64>) -> Result<Buffer> {
        check_range(&range, self.data.len() as u64, &self.name)?;
        Ok(self.data.slice_with_length(range.start as usize, (range.end - range.start) as usize))
    }
    fn coalesce_gap(&self) -> u64 {
        0
    }
    fn cheap_small_reads(&self) -> bool {
        true
    }
    fn mapped(&self) -> Option<&[u8]> {
        Some(self.data.as_slice())
    }
}

/// Errors unless `range` lies within an object of `size` bytes.
pub(crate) fn check_range(range: &Range<u64>, size: u64, path: &str) -> Result<()> {
    if range.start > range.end || range.end > size {
        return Err(Error::Corrupt(format!(
            "{path}: byte range {}..{} is outside the object ({size} bytes); the file is truncated or damaged",
            range.start, range.end
        )));
    }
    Ok(())
}

/// Shared handle to a reader.
pub type ReaderRef = Arc<dyn Reader>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalescing_slices_back_in_request_order() {
        let data = Buffer::from_vec((0u8..=255).collect::<Vec<u8>>());
        let reader = BufferReader::new("mem", data);
        let mut calls = 0;
        let ranges = [10..20u64, 0..5, 12..14, 200..256, 19..30];
        let got = read_ranges_coalesced(&ranges, 8, |r| {
            calls += 1;
            reader.read_range(r)
        })
        .unwrap();
        assert_eq!(calls, 2);
        for (r, b) in ranges.iter().zip(&got) {
            let want: Vec<u8> = (r.start..r.end).map(|x| x as u8).collect();
            assert_eq!(b.as_slice(), &want[..]);
        }
    }

    #[test]
    fn capped_coalescing_keeps_requests_small_but_merges_overlaps() {
        let plan = plan_coalesced_capped(&[0..10, 12..20, 30..40, 35..100], 5, 15);
        assert_eq!(plan.requests, vec![0..10, 12..20, 30..100]);
        assert_eq!(plan.placement, vec![(0, 0), (1, 0), (2, 0), (2, 5)]);
    }

    #[test]
    fn out_of_bounds_is_corrupt_not_panic() {
        let reader = BufferReader::new("mem", Buffer::from_vec(vec![0u8; 10]));
        assert!(matches!(reader.read_range(5..11), Err(Error::Corrupt(_))));
        let mut dst = [0u8; 6];
        assert!(matches!(reader.read_into(5, &mut dst), Err(Error::Corrupt(_))));
        assert!(reader.read_into(u64::MAX - 2, &mut dst).is_err());
    }

    #[test]
    fn read_into_copies_exact_bytes() {
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let path = std::env::temp_dir().join(format!("lancepy-read-into-{}.bin", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let local = LocalReader::open(&path).unwrap();
        let mem = BufferReader::new("mem", Buffer::from_vec(bytes.clone()));
        for reader in [&local as &dyn Reader, &mem] {
            assert!(reader.cheap_small_reads());
            assert_eq!(reader.mapped(), Some(&bytes[..]), "{}", reader.path());
            for (pos, len) in [(0usize, 1usize), (4095, 2), (9_000, 1_000), (0, 10_000), (17, 0)] {
                let mut dst = vec![7u8; len];
                reader.read_into(pos as u64, &mut dst).unwrap();
                assert_eq!(&dst[..], &bytes[pos..pos + len], "{} at {pos}+{len}", reader.path());
            }
            let mut dst = [0u8; 2];
            assert!(matches!(reader.read_into(9_999, &mut dst), Err(Error::Corrupt(_))), "{}", reader.path());
        }
        // An empty file is never mapped; reading nothing from it works.
        let empty = std::env::temp_dir().join(format!("lancepy-read-into-empty-{}.bin", std::process::id()));
        std::fs::write(&empty, b"").unwrap();
        LocalReader::open(&empty).unwrap().read_into(0, &mut []).unwrap();
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&empty);
    }
}

/// Row indices from an Arrow integer array (negative or null entries are errors).
pub fn indices_from_array(array: &dyn arrow_array::Array) -> Result<Vec<u64>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_schema::DataType;
    if array.null_count() > 0 {
        return Err(Error::invalid_input("row indices must not contain nulls"));
    }
    fn signed<T: arrow_array::ArrowPrimitiveType>(a: &dyn arrow_array::Array) -> Result<Vec<u64>>
    where
        T::Native: Into<i64>,
    {
        a.as_primitive::<T>()
            .values()
            .iter()
            .map(|&v| {
                let v: i64 = v.into();
                u64::try_from(v).map_err(|_| Error::IndexOutOfRange(format!("row index {v} is negative")))
            })
            .collect()
    }
    Ok(match array.data_type() {
        DataType::UInt64 => array.as_primitive::<UInt64Type>().values().to_vec(),
        DataType::UInt32 => array.as_primitive::<UInt32Type>().values().iter().map(|&v| v as u64).collect(),
        DataType::UInt16 => array.as_primitive::<UInt16Type>().values().iter().map(|&v| v as u64).collect(),
        DataType::UInt8 => array.as_primitive::<UInt8Type>().values().iter().map(|&v| v as u64).collect(),
        DataType::Int64 => signed::<Int64Type>(array)?,
        DataType::Int32 => signed::<Int32Type>(array)?,
        DataType::Int16 => signed::<Int16Type>(array)?,
        DataType::Int8 => signed::<Int8Type>(array)?,
        other => return Err(Error::invalid_input(format!("row indices must be integers, got {other}"))),
    })
}
