//! Local files: positional reads into 64-byte aligned buffers, buffered sequential writes.

use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use arrow_buffer::{Buffer, MutableBuffer};

use super::{check_range, Reader, Writer};
use crate::error::{Error, Result};

/// A local file opened for positional reads.
#[derive(Debug)]
pub struct LocalReader {
    file: File,
    path: String,
    size: u64,
    /// The file mapped read-only, on the first [`Reader::mapped`] (`None` if that failed).
    map: OnceLock<Option<memmap2::Mmap>>,
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
    fn mapping(&self) -> Option<&memmap2::Mmap> {
        self.map
            .get_or_init(|| {
                if self.size == 0 || usize::try_from(self.size).is_err() {
                    return None;
                }
                // SAFETY: a mapping is only sound while nobody changes the file. Lance data
                // files are immutable: written once under a unique name, then only read or
                // deleted (deleting keeps a mapped file's pages alive). Readers copy bytes
                // out of the mapping and check every range against the size the file had
                // when opened, which the mapping must cover.
                let map = unsafe { memmap2::Mmap::map(&self.file) }.ok()?;
                // Advice only changes how pages are read, never what the mapping holds.
                let _ = map.advise(memmap2::Advice::Random);
                (map.len() as u64 >= self.size).then_some(map)
            })
            .as_ref()
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

    /// All coalesced requests land in one allocation (many small allocations, their zeroing
    /// and page faults would otherwise dominate random-access reads).
    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        if ranges.len() <= 1 {
            return ranges.iter().map(|r| self.read_range(r.clone())).collect();
        }
        for r in ranges {
            check_range(r, self.size, &self.path)?;
        }
        let plan = super::plan_coalesced(ranges, self.coalesce_gap());
        // The requests of a cold take are scattered: have them all in flight at once.
        self.prefetch(plan.requests.len(), &|i| Some(plan.requests[i].clone()));
        // Each request starts 64-byte aligned inside the shared buffer.
        let mut starts = Vec::with_capacity(plan.requests.len());
        let mut total = 0usize;
        for r in &plan.requests {
            starts.push(total);
            total = (total + (r.end - r.start) as usize).next_multiple_of(64);
        }
        let mut buf = MutableBuffer::from_len_zeroed(total);
        let dst = buf.as_slice_mut();
        for (r, &s) in plan.requests.iter().zip(&starts) {
            let len = (r.end - r.start) as usize;
            self.file
                .read_exact_at(&mut dst[s..s + len], r.start)
                .map_err(|e| Error::io(format!("reading {len} bytes at {} of {}", r.start, self.path), e))?;
        }
        super::count_reads(plan.requests.len() as u64, plan.requests.iter().map(|r| r.end - r.start).sum());
        let all: Buffer = buf.into();
        Ok(ranges
            .iter()
            .zip(&plan.placement)
            .map(|(r, &(req, off))| all.slice_with_length(starts[req] + off as usize, (r.end - r.start) as usize))
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
