//! Local files: positional reads into 64-byte aligned buffers, buffered sequential writes.

use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use arrow_buffer::{Buffer, MutableBuffer};

use super::{check_range, Reader, Writer};
use crate::error::{Error, Result};

/// A local file opened for positional reads.
#[derive(Debug)]
pub struct LocalReader {
    file: File,
    path: String,
    size: u64,
    /// The file mapped read-only, on the first [`Reader::mapped`] (`None` if that failed);
    /// shared with the buffers [`LocalReader::resident_slice`] hands out.
    map: OnceLock<Option<Arc<memmap2::Mmap>>>,
}

impl LocalReader {
    /// Opens `path` for reading.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let display = path.display().to_string();
        let file = File::open(path).map_err(|e| Error::io(format!("opening {display}"), e))?;
        let meta = file.metadata().map_err(|e| Error::io(format!("stat {display}"), e))?;
        if meta.is_dir() {
            return Err(Error::invalid_input(format!("{display} is a directory, not a file")));
        }
        Ok(Self { file, path: display, size: meta.len(), map: OnceLock::new() })
    }
}

impl LocalReader {
    /// The file mapped read-only, on first use (`None` if it cannot be mapped). The mapping
    /// is advised random access: a page fault then reads that page only, not the megabytes
    /// of read-ahead around it (a take of 1,000 scattered rows of a cold file read the whole
    /// file). Scans read with `pread`, whose read-ahead this advice does not touch.
    fn mapping(&self) -> Option<&Arc<memmap2::Mmap>> {
        self.map
            .get_or_init(|| {
                if self.size == 0 || usize::try_from(self.size).is_err() {
                    return None;
                }
                // SAFETY: a mapping is only sound while nobody changes the file. Lance data
                // files are immutable: written once under a unique name, then only read or
                // deleted (deleting keeps a mapped file's pages alive). Readers copy bytes
                // out of the mapping, or hand out buffers over it that hold it alive
                // (`resident_slice`), and check every range against the size the file had
                // when opened, which the mapping must cover.
                let map = unsafe { memmap2::Mmap::map(&self.file) }.ok()?;
                // Advice only changes how pages are read, never what the mapping holds.
                let _ = map.advise(memmap2::Advice::Random);
                (map.len() as u64 >= self.size).then_some(Arc::new(map))
            })
            .as_ref()
    }

    /// The bytes of `range` as a buffer over the mapping, without copying them, when they
    /// are worth it (at least [`MIN_MAPPED_READ`] bytes), start 64-byte aligned in the file
    /// (the copies start so) and every page of them is in the page cache; `None` otherwise
    /// (then they are read with `pread`: a cold range faulted in through the mapping, which
    /// is advised random access, would be read a page at a time). A warm take of dense rows
    /// reads whole pages of every column: copying them out of the page cache was a third of
    /// its time.
    fn resident_slice(&self, range: &Range<u64>) -> Option<Buffer> {
        let len = (range.end - range.start) as usize;
        if len < MIN_MAPPED_READ || range.start % 64 != 0 || range.end > self.size {
            return None;
        }
        let map = self.mapping()?;
        if !self.all_resident(map, range) {
            return None;
        }
        let ptr = NonNull::new(map[range.start as usize..range.end as usize].as_ptr() as *mut u8)?;
        let owner: Arc<dyn arrow_buffer::alloc::Allocation> = map.clone();
        // SAFETY: `ptr` points at `len` bytes inside the mapping (the range was checked against
        // the size the mapping covers), which stays mapped as long as `owner`, a reference to
        // it, is held by the buffer. Nothing writes through a read-only mapping, and Lance data
        // files are never modified once written (see `mapping`), so the bytes stay as read.
        Some(unsafe { Buffer::from_custom_allocation(ptr, len, owner) })
    }

    /// Whether every page of `range` is in the page cache (`mincore`).
    fn all_resident(&self, map: &memmap2::Mmap, range: &Range<u64>) -> bool {
        let page = page_size();
        let (first, last) = (range.start / page, range.end.div_ceil(page));
        let offset = (first * page) as usize;
        let len = ((last - first) * page) as usize;
        if offset + len > map.len().next_multiple_of(page as usize) {
            return false;
        }
        let mut flags = vec![0u8; (last - first) as usize];
        // SAFETY: `offset` is a multiple of the page size inside the mapping (whose start is
        // page-aligned), `len` covers whole pages of it, and `flags` has one byte per page of
        // that span, as mincore(2) writes.
        let rc = unsafe { libc::mincore(map.as_ptr().add(offset) as *mut libc::c_void, len, flags.as_mut_ptr()) };
        rc == 0 && flags.iter().all(|f| f & 1 == 1)
    }

    /// Whether the pages of a sample of the `count` ranges (up to [`RESIDENCY_SAMPLE`],
    /// spread over them) are all in the page cache.
    fn sample_resident(&self, map: &memmap2::Mmap, count: usize, range: &dyn Fn(usize) -> Option<Range<u64>>) -> bool {
        let page = page_size();
        let step = count.div_ceil(RESIDENCY_SAMPLE).max(1);
        let mut flags = Vec::new();
        for r in (0..count).step_by(step).filter_map(range) {
            if r.start >= r.end || r.end > self.size {
                continue;
            }
            let (first, last) = (r.start / page, r.end.div_ceil(page));
            let len = ((last - first) * page) as usize;
            flags.resize((last - first) as usize, 0u8);
            let offset = (first * page) as usize;
            if offset + len > map.len().next_multiple_of(page as usize) {
                continue;
            }
            // SAFETY: `offset` is a multiple of the page size inside the mapping (whose start
            // is page-aligned), `len` covers whole pages of it, and `flags` has one byte per
            // page of that span, as mincore(2) writes.
            let rc = unsafe { libc::mincore(map.as_ptr().add(offset) as *mut libc::c_void, len, flags.as_mut_ptr()) };
            if rc != 0 || flags.iter().any(|f| f & 1 == 0) {
                return false;
            }
        }
        true
    }
}

/// Smallest read served straight out of the mapping (smaller ones cost a copy of a few
/// pages at most).
const MIN_MAPPED_READ: usize = 64 * 1024;

/// Largest gap between ranges served as one slice of the mapping.
const MAPPED_GAP: u64 = 1 << 20;

/// Ranges of a take whose residency is checked before deciding to prefetch.
const RESIDENCY_SAMPLE: usize = 8;

fn page_size() -> u64 {
    static PAGE: OnceLock<u64> = OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE.get_or_init(|| match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as u64,
        _ => 4096,
    })
}

impl Reader for LocalReader {
    fn path(&self) -> &str {
        &self.path
    }

    fn size(&self) -> Result<u64> {
        Ok(self.size)
    }

    fn coalesce_gap(&self) -> u64 {
        // A positional read of cached data costs about as much as copying a few KiB.
        4096
    }

    /// Resident ranges are slices of the mapping (see [`LocalReader::resident_slice`]); all
    /// other coalesced requests land in one allocation (many small allocations, their zeroing
    /// and page faults would otherwise dominate random-access reads).
    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        if ranges.len() <= 1 {
            return ranges.iter().map(|r| self.read_range(r.clone())).collect();
        }
        for r in ranges {
            check_range(r, self.size, &self.path)?;
        }
        let plan = super::plan_coalesced(ranges, self.coalesce_gap());
        // (counted as the requests of the copying path, however the bytes are served)
        let requested: u64 = plan.requests.iter().map(|r| r.end - r.start).sum();
        // In memory, a gap costs nothing to skip: ranges a page apart (the chunks a dense take
        // needs, but for one) are one slice of the mapping, if all of them are in the cache.
        let wide = super::plan_coalesced(ranges, MAPPED_GAP);
        if wide.requests.iter().all(|r| r.end - r.start >= MIN_MAPPED_READ as u64) {
            if let Some(mapped) = wide.requests.iter().map(|r| self.resident_slice(r)).collect::<Option<Vec<Buffer>>>() {
                super::count_reads(plan.requests.len() as u64, requested);
                return Ok(ranges
                    .iter()
                    .zip(&wide.placement)
                    .map(|(r, &(req, off))| mapped[req].slice_with_length(off as usize, (r.end - r.start) as usize))
                    .collect());
            }
        }
        // Large requests whose pages are in memory are served straight out of the mapping;
        // the rest are read into one shared buffer.
        let mapped: Vec<Option<Buffer>> = plan.requests.iter().map(|r| self.resident_slice(r)).collect();
        let copied: Vec<usize> = (0..plan.requests.len()).filter(|&i| mapped[i].is_none()).collect();
        // The requests of a cold take are scattered: have them all in flight at once.
        self.prefetch(copied.len(), &|i| Some(plan.requests[copied[i]].clone()));
        // Each copied request starts 64-byte aligned inside the shared buffer.
        let mut starts = vec![0usize; plan.requests.len()];
        let mut total = 0usize;
        for &i in &copied {
            let r = &plan.requests[i];
            starts[i] = total;
            total = (total + (r.end - r.start) as usize).next_multiple_of(64);
        }
        let mut buf = MutableBuffer::from_len_zeroed(total);
        let dst = buf.as_slice_mut();
        for &i in &copied {
            let (r, s) = (&plan.requests[i], starts[i]);
            let len = (r.end - r.start) as usize;
            self.file
                .read_exact_at(&mut dst[s..s + len], r.start)
                .map_err(|e| Error::io(format!("reading {len} bytes at {} of {}", r.start, self.path), e))?;
        }
        super::count_reads(plan.requests.len() as u64, requested);
        let all: Buffer = buf.into();
        Ok(ranges
            .iter()
            .zip(&plan.placement)
            .map(|(r, &(req, off))| match &mapped[req] {
                Some(m) => m.slice_with_length(off as usize, (r.end - r.start) as usize),
                None => all.slice_with_length(starts[req] + off as usize, (r.end - r.start) as usize),
            })
            .collect())
    }

    fn cheap_small_reads(&self) -> bool {
        true
    }

    /// One `pread` straight into `dst` (no intermediate buffer).
    fn read_into(&self, pos: u64, dst: &mut [u8]) -> Result<()> {
        let range = pos..pos.saturating_add(dst.len() as u64);
        check_range(&range, self.size, &self.path)?;
        self.file
            .read_exact_at(dst, pos)
            .map_err(|e| Error::io(format!("reading {} bytes at {pos} of {}", dst.len(), self.path), e))?;
        super::count_reads(1, dst.len() as u64);
        Ok(())
    }

    /// The file mapped read-only: many small reads (rows of vectors in random order) then cost
    /// a `memcpy` each instead of a system call and page-cache lookups (which took twice as
    /// long as the copy itself).
    fn mapped(&self) -> Option<&[u8]> {
        self.mapping().map(|m| &m[..self.size as usize])
    }

    /// Starts reading the pages of `ranges` that are not in the page cache, all at once
    /// (`madvise(MADV_WILLNEED)`: asynchronous reads the disk serves at its full queue
    /// depth), so the copies out of the mapping that follow wait on them together rather
    /// than faulting them in one at a time. Whether the take is cold is judged from a
    /// sample of its ranges (`mincore`), so a warm take pays a few system calls, not one per
    /// row.
    fn prefetch(&self, count: usize, range: &dyn Fn(usize) -> Option<Range<u64>>) {
        let Some(map) = self.mapping() else { return };
        if count == 0 || self.sample_resident(map, count, range) {
            return;
        }
        let page = page_size();
        let mut pages: Vec<(u64, u64)> = (0..count)
            .filter_map(range)
            .filter(|r| r.start < r.end && r.end <= self.size)
            .map(|r| (r.start / page, r.end.div_ceil(page)))
            .collect();
        pages.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(pages.len());
        for (s, e) in pages {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        super::count_prefetch(merged.len() as u64, merged.iter().map(|(s, e)| (e - s) * page).sum());
        for (s, e) in merged {
            let (offset, len) = ((s * page) as usize, (((e - s) * page) as usize).min(map.len() - (s * page) as usize));
            // A hint: a failure only means the copies fault the pages in themselves.
            let _ = map.advise_range(memmap2::Advice::WillNeed, offset, len);
        }
    }

    fn read_range(&self, range: Range<u64>) -> Result<Buffer> {
        check_range(&range, self.size, &self.path)?;
        let len = (range.end - range.start) as usize;
        if let Some(mapped) = self.resident_slice(&range) {
            super::count_reads(1, len as u64);
            return Ok(mapped);
        }
        let mut buf = MutableBuffer::from_len_zeroed(len);
        self.file
            .read_exact_at(buf.as_slice_mut(), range.start)
            .map_err(|e| Error::io(format!("reading {} bytes at {} of {}", len, range.start, self.path), e))?;
        super::count_reads(1, len as u64);
        Ok(buf.into())
    }
}

/// Writes a new local file through a large buffer.
pub struct LocalWriter {
    file: std::io::BufWriter<File>,
    path: PathBuf,
    pos: u64,
}

impl LocalWriter {
    /// Creates (or truncates) `path`; parent directories are created.
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        if let Some(parent) = path.parent() {
            if !parent.as_os_str().is_empty() {
                std::fs::create_dir_all(parent).map_err(|e| Error::io(format!("creating directory {}", parent.display()), e))?;
            }
        }
        let file = File::create(&path).map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        Ok(Self { file: std::io::BufWriter::with_capacity(1 << 20, file), path, pos: 0 })
    }
}

impl Writer for LocalWriter {
    fn write_all(&mut self, data: &[u8]) -> Result<()> {
        self.file.write_all(data).map_err(|e| Error::io(format!("writing {}", self.path.display()), e))?;
        self.pos += data.len() as u64;
        Ok(())
    }

    fn position(&self) -> u64 {
        self.pos
    }

    fn finish(self: Box<Self>) -> Result<u64> {
        let path = self.path.clone();
        // No fsync: like the reference, durability against power loss is left to the OS;
        // a killed process cannot lose data already handed to the kernel.
        self.file.into_inner().map_err(|e| Error::io(format!("flushing {}", path.display()), e.into_error()))?;
        super::count_writes(1, self.pos);
        Ok(self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `len` seeded bytes, written now (so its pages are in the page cache).
    fn file_of(len: usize, name: &str) -> (PathBuf, Vec<u8>) {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let data: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let path = std::env::temp_dir().join(format!("lancepy-local-{name}-{}", std::process::id()));
        std::fs::write(&path, &data).unwrap();
        (path, data)
    }

    fn within(buf: &Buffer, map: &memmap2::Mmap) -> bool {
        let (p, m) = (buf.as_ptr() as usize, map.as_ptr() as usize);
        p >= m && p + buf.len() <= m + map.len()
    }

    #[test]
    fn resident_ranges_come_out_of_the_mapping_with_the_same_bytes() {
        let (path, data) = file_of(3 << 20, "mapped");
        let reader = LocalReader::open(&path).unwrap();
        // chunks of a dense take: aligned start, gaps of one skipped chunk, odd lengths
        let ranges: Vec<Range<u64>> = (0..200u64).filter(|i| i % 37 != 5).map(|i| i * 8192..i * 8192 + 8000).collect();
        let got = reader.read_ranges(&ranges).unwrap();
        let map = reader.mapping().unwrap();
        for (r, b) in ranges.iter().zip(&got) {
            assert_eq!(b.as_slice(), &data[r.start as usize..r.end as usize]);
            assert!(within(b, map), "a resident range was copied");
        }
        // a single large range, and one that starts unaligned (copied, as the copies start
        // 64-byte aligned), and small ones (copied)
        let one = reader.read_range(64..(1 << 20)).unwrap();
        assert_eq!(one.as_slice(), &data[64..1 << 20]);
        assert!(within(&one, map));
        for r in [3..(1u64 << 20), 100..200, 4096..4100] {
            let b = reader.read_range(r.clone()).unwrap();
            assert_eq!(b.as_slice(), &data[r.start as usize..r.end as usize]);
            assert!(!within(&b, map), "{r:?}");
        }
        let mixed = [5..(1u64 << 20) + 5, (2 << 20)..(2 << 20) + 100_000, 10..20];
        for (r, b) in mixed.iter().zip(reader.read_ranges(&mixed).unwrap()) {
            assert_eq!(b.as_slice(), &data[r.start as usize..r.end as usize]);
        }
        // past the end: an error, as before
        assert!(reader.read_ranges(&[0..70_000, (3 << 20) - 10..(3 << 20) + 1]).is_err());
        std::fs::remove_file(&path).unwrap();
    }
}
