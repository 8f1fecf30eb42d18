//! `object_store`-backed reads and writes: `memory://` and the cloud stores.
//!
//! Reads are shaped for object storage, where a request costs far more than the bytes next
//! to it: the ranges of one call are coalesced with a wide gap ([`OBJECT_STORE_COALESCE_GAP`],
//! not the few KiB that suit a page cache), merged requests stay below
//! [`OBJECT_STORE_MAX_REQUEST`] so that large reads still run in parallel, and the requests
//! of a call are issued concurrently ([`OBJECT_STORE_MAX_IN_FLIGHT`] at a time) on the shared
//! tokio runtime. A file's footer and metadata come from one suffix request
//! ([`Reader::read_tail`]), which also tells the object's size, so opening a file is one
//! request, not a HEAD and a GET.
//!
//! Writes buffer up to one part ([`MULTIPART_PART_SIZE`]); a larger object becomes a
//! multipart upload whose parts are sent while the writer goes on (a few in flight), so
//! memory stays bounded by a few parts whatever the file size. Nothing is visible before
//! `finish`; a writer dropped unfinished aborts its upload.

use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_buffer::Buffer;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange, PutPayload, WriteMultipart};

use super::uri::StoreHandle;
use super::{check_range, Reader, Writer};
use crate::error::{Error, Result};

/// Ranges of one read closer than this are fetched with one request. A request on object
/// storage costs about as much as transferring this many bytes on a fast link (the same
/// order as the reference implementation's 64 KiB).
pub const OBJECT_STORE_COALESCE_GAP: u64 = 64 * 1024;
/// Coalescing stops growing a request beyond this size, and a larger single range is
/// fetched as parts of this size in parallel (one connection rarely fills a link).
pub const OBJECT_STORE_MAX_REQUEST: u64 = 16 * 1024 * 1024;
/// Requests of one read (one file) in flight at once. The fragments of a take read in
/// parallel on the I/O pool (`crate::parallel::io_pool`), so a take has up to this many
/// requests in flight per fragment it touches. With 20 ms per request (a loopback server
/// behind a delaying proxy), 32 left a 1,000-row take 0.7x pylance's speed; 64 with the I/O
/// pool brought it level (benches/RESULTS.md, "Object storage with latency").
pub const OBJECT_STORE_MAX_IN_FLIGHT: usize = 64;
/// Size of the parts of a multipart upload (S3's minimum is 5 MiB).
pub const MULTIPART_PART_SIZE: usize = 5 * 1024 * 1024;
/// Parts of one upload in flight at once.
const MULTIPART_IN_FLIGHT: usize = 4;

/// The process-wide tokio runtime used to drive `object_store` futures.
///
/// Rebuilt after `fork()`: a child process inherits the parent's runtime handle but none of
/// its worker threads, so using it would hang (PyTorch DataLoader workers fork).
/// Process-wide and harmless to share: it drives futures and holds no data or credentials
/// (clients are cached per configuration in [`super::uri`]).
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

/// Maps an `object_store` error on `display` to ours: a missing object or bucket is
/// [`Error::NotFound`], a store that cannot do what was asked is [`Error::NotSupported`],
/// refused credentials say so first.
pub(crate) fn map_store_error(display: &str, e: object_store::Error) -> Error {
    let text = e.to_string();
    match e {
        object_store::Error::NotFound { .. } => Error::NotFound(display.to_string()),
        object_store::Error::NotImplemented => {
            Error::not_supported(format!("{display}: the object store does not implement this operation"))
        }
        _ if text.contains("NoSuchBucket") => Error::NotFound(format!("{display}: the bucket does not exist (NoSuchBucket)")),
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
            Error::Storage(format!("{display}: access denied; check the credentials in storage_options ({text})"))
        }
        _ if text.contains("403 Forbidden") || text.contains("401 Unauthorized") => {
            Error::Storage(format!("{display}: access denied; check the credentials in storage_options ({text})"))
        }
        other => Error::ObjectStore(other),
    }
}

/// Bytes a reader keeps for its life (the file's tail, read once for the footer and
/// metadata): blocks sorted by start.
#[derive(Debug)]
struct Prefetched {
    blocks: Vec<(u64, Buffer)>,
}

impl Prefetched {
    /// The bytes of `r` if one block holds all of them.
    fn slice(&self, r: &Range<u64>) -> Option<Buffer> {
        let i = self.blocks.partition_point(|(start, _)| *start <= r.start).checked_sub(1)?;
        let (start, buf) = &self.blocks[i];
        (r.end <= start + buf.len() as u64).then(|| buf.slice_with_length((r.start - start) as usize, (r.end - r.start) as usize))
    }
}

/// Reads one object of an object store.
#[derive(Debug)]
pub struct ObjectStoreReader {
    store: StoreHandle,
    location: ObjectPath,
    display: String,
    size: OnceLock<u64>,
    prefetched: Mutex<Vec<Prefetched>>,
}

impl ObjectStoreReader {
    /// A reader of `location` in `store`; `display` is used in messages.
    pub fn new(store: StoreHandle, location: ObjectPath, display: String) -> Self {
        Self { store, location, display, size: OnceLock::new(), prefetched: Mutex::new(Vec::new()) }
    }

    fn err(&self, e: object_store::Error) -> Error {
        map_store_error(&self.display, e)
    }

    /// Fetches the coalesced requests of `ranges` concurrently: (plan, one buffer per request).
    fn fetch(&self, ranges: &[Range<u64>]) -> Result<(super::CoalescedPlan, Vec<Buffer>)> {
        let size = self.size()?;
        for r in ranges {
            check_range(r, size, &self.display)?;
        }
        let plan = super::plan_coalesced_capped(ranges, self.coalesce_gap(), OBJECT_STORE_MAX_REQUEST);
        // Requests larger than the cap are fetched as parts, joined afterwards.
        let mut parts: Vec<Range<u64>> = Vec::with_capacity(plan.requests.len());
        let mut parts_of: Vec<Range<usize>> = Vec::with_capacity(plan.requests.len());
        for r in &plan.requests {
            let first = parts.len();
            let mut start = r.start;
            loop {
                let end = r.end.min(start.saturating_add(OBJECT_STORE_MAX_REQUEST));
                parts.push(start..end);
                start = end;
                if start >= r.end {
                    break;
                }
            }
            parts_of.push(first..parts.len());
        }
        let store = self.store.get()?;
        let location = &self.location;
        let fetched: Vec<Bytes> = runtime()
            .block_on(
                futures::stream::iter(parts.iter().cloned().map(|r| {
                    let store = store.clone();
                    async move {
                        if r.start == r.end {
                            Ok(Bytes::new())
                        } else {
                            store.get_range(location, r).await
                        }
                    }
                }))
                .buffered(OBJECT_STORE_MAX_IN_FLIGHT)
                .try_collect(),
            )
            .map_err(|e| self.err(e))?;
        for (r, b) in parts.iter().zip(&fetched) {
            if b.len() as u64 != r.end - r.start {
                return Err(Error::corrupt(format!(
                    "{}: asked for bytes {}..{}, got {} bytes",
                    self.display,
                    r.start,
                    r.end,
                    b.len()
                )));
            }
        }
        let mut fetched: Vec<Option<Bytes>> = fetched.into_iter().map(Some).collect();
        let joined = parts_of
            .iter()
            .zip(&plan.requests)
            .map(|(p, r)| {
                if p.len() == 1 {
                    return Buffer::from(fetched[p.start].take().expect("each part used once"));
                }
                let mut buf = arrow_buffer::MutableBuffer::with_capacity((r.end - r.start) as usize);
                for i in p.clone() {
                    buf.extend_from_slice(&fetched[i].take().expect("each part used once"));
                }
                buf.into()
            })
            .collect();
        Ok((plan, joined))
    }

    /// Fetches `ranges` (no prefetched bytes consulted), one buffer per range.
    fn read_uncached(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        let (plan, fetched) = self.fetch(ranges)?;
        super::count_reads(fetched.len() as u64, fetched.iter().map(|b| b.len() as u64).sum());
        Ok(ranges
            .iter()
            .zip(&plan.placement)
            .map(|(r, &(req, off))| fetched[req].slice_with_length(off as usize, (r.end - r.start) as usize))
            .collect())
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
        let store = self.store.get()?;
        let meta = runtime().block_on(store.head(&self.location)).map_err(|e| self.err(e))?;
        let _ = self.size.set(meta.size);
        Ok(meta.size)
    }

    fn read_range(&self, range: Range<u64>) -> Result<Buffer> {
        Ok(self.read_ranges(std::slice::from_ref(&range))?.pop().expect("one range in, one buffer out"))
    }

    fn read_tail(&self, len: u64) -> Result<(u64, Buffer)> {
        if len == 0 {
            return Ok((self.size()?, Buffer::from_vec(Vec::<u8>::new())));
        }
        let store = self.store.get()?;
        let opts = GetOptions { range: Some(GetRange::Suffix(len)), ..Default::default() };
        let (size, bytes) = runtime()
            .block_on(async {
                let r = store.get_opts(&self.location, opts).await?;
                let size = r.meta.size;
                Ok::<_, object_store::Error>((size, r.bytes().await?))
            })
            .map_err(|e| self.err(e))?;
        let _ = self.size.set(size);
        super::count_reads(1, bytes.len() as u64);
        if bytes.len() as u64 != len.min(size) {
            return Err(Error::corrupt(format!(
                "{}: asked for the last {} bytes of {size}, got {}",
                self.display,
                len.min(size),
                bytes.len()
            )));
        }
        let tail = Buffer::from(bytes);
        // Kept for the reader's life: later reads of the tail, and every read of a file
        // smaller than the tail, need no request.
        let block = Prefetched { blocks: vec![(size - tail.len() as u64, tail.clone())] };
        self.prefetched.lock().unwrap_or_else(|p| p.into_inner()).push(block);
        Ok((size, tail))
    }

    fn coalesce_gap(&self) -> u64 {
        if self.store.is_remote() {
            OBJECT_STORE_COALESCE_GAP
        } else {
            // memory://: a "request" is a slice of a buffer.
            0
        }
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        if ranges.is_empty() {
            return Ok(Vec::new());
        }
        let mut out: Vec<Option<Buffer>> = vec![None; ranges.len()];
        {
            let prefetched = self.prefetched.lock().unwrap_or_else(|p| p.into_inner());
            if !prefetched.is_empty() {
                for (slot, r) in out.iter_mut().zip(ranges) {
                    *slot = prefetched.iter().find_map(|p| p.slice(r));
                }
            }
        }
        let missing: Vec<Range<u64>> = ranges.iter().zip(&out).filter(|(_, b)| b.is_none()).map(|(r, _)| r.clone()).collect();
        if missing.len() == ranges.len() {
            return self.read_uncached(ranges);
        }
        let mut fetched = self.read_uncached(&missing)?.into_iter();
        Ok(out.into_iter().map(|b| b.unwrap_or_else(|| fetched.next().expect("one buffer per missing range"))).collect())
    }
}

/// Writes one new object: a single PUT when small, a multipart upload when large.
pub struct ObjectStoreWriter {
    store: StoreHandle,
    location: ObjectPath,
    display: String,
    /// Bytes not yet handed to an upload.
    buffer: Vec<u8>,
    upload: Option<WriteMultipart>,
    pos: u64,
}

impl ObjectStoreWriter {
    /// A writer that will create `location` in `store`; `display` is used in messages.
    pub fn new(store: StoreHandle, location: ObjectPath, display: String) -> Self {
        Self { store, location, display, buffer: Vec::new(), upload: None, pos: 0 }
    }

    fn err(&self, e: object_store::Error) -> Error {
        map_store_error(&self.display, e)
    }
}

impl Writer for ObjectStoreWriter {
    fn write_all(&mut self, data: &[u8]) -> Result<()> {
        self.pos += data.len() as u64;
        if self.upload.is_none() {
            self.buffer.extend_from_slice(data);
            if self.buffer.len() < MULTIPART_PART_SIZE {
                return Ok(());
            }
            let store = self.store.get()?;
            let upload = runtime().block_on(store.put_multipart(&self.location)).map_err(|e| self.err(e))?;
            self.upload = Some(WriteMultipart::new_with_chunk_size(upload, MULTIPART_PART_SIZE));
        }
        let rt = runtime();
        let pending = std::mem::take(&mut self.buffer);
        let upload = self.upload.as_mut().expect("upload started");
        {
            // `write` spawns the upload of each full part on the runtime.
            let _entered = rt.enter();
            upload.write(if pending.is_empty() { data } else { &pending });
        }
        let waited = rt.block_on(upload.wait_for_capacity(MULTIPART_IN_FLIGHT));
        waited.map_err(|e| self.err(e))
    }

    fn position(&self) -> u64 {
        self.pos
    }

    fn finish(mut self: Box<Self>) -> Result<u64> {
        let rt = runtime();
        match self.upload.take() {
            Some(upload) => {
                if let Err(e) = rt.block_on(upload.finish()) {
                    // `finish` aborts the upload itself when a part failed.
                    return Err(self.err(e));
                }
            }
            None => {
                let store = self.store.get()?;
                let payload = PutPayload::from(std::mem::take(&mut self.buffer));
                rt.block_on(store.put(&self.location, payload)).map_err(|e| self.err(e))?;
            }
        }
        super::count_writes(1, self.pos);
        Ok(self.pos)
    }
}

impl Drop for ObjectStoreWriter {
    fn drop(&mut self) {
        if let Some(upload) = self.upload.take() {
            // Unfinished: remove the parts already uploaded (best effort).
            let _ = runtime().block_on(upload.abort());
        }
    }
}
