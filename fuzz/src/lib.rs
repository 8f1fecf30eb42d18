//! Shared drivers of the fuzz targets in `fuzz_targets/`.
//!
//! Each driver feeds untrusted bytes to one of lancepy's public decoding entry points and
//! exercises everything a caller could do next with the result. Typed errors (corrupt file,
//! not supported, ...) are the expected outcome for most inputs; a panic, an abort, a hang,
//! an allocation over the fuzzer's `-malloc_limit_mb`, or an `Error::Internal` / bare
//! `Error::Arrow` (untyped: see [`drive::check_error`]) is a finding.
//!
//! Requests are bounded by the harness, never by the file: a file may legitimately claim
//! billions of rows (constant pages need no bytes per row), so asking for all of them could
//! rightly need that much memory. Every read below asks for at most [`MAX_ROWS`] rows, so the
//! legitimate output of one request stays far below the 1 GiB allocation limit for inputs of
//! the fuzzer's `-max_len`; anything bigger is a decoder trusting a count it should not.

use std::alloc::{GlobalAlloc, Layout, System};

pub mod drive;
pub use drive::*;

/// Largest single allocation allowed (1 GiB), checked by [`LimitedAlloc`].
pub const MAX_ALLOC: usize = 1 << 30;

/// The system allocator, aborting on any request over [`MAX_ALLOC`] bytes.
///
/// libFuzzer's `-malloc_limit_mb` needs a sanitizer's malloc hooks; the targets are built
/// without a sanitizer (Rust is memory safe outside `unsafe`, and they run several times
/// faster), so the limit is enforced here: an abort is a crash libFuzzer saves and reports.
/// Asking for more than 1 GiB is a finding even if the memory is never touched.
pub struct LimitedAlloc;

impl LimitedAlloc {
    #[cold]
    fn too_large(size: usize) -> ! {
        use std::io::Write;
        // No allocation here: a fixed message, then the size as digits on the stack.
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut n = size;
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(b"==lancepy-fuzz== allocation over the 1 GiB limit: ");
        let _ = err.write_all(&digits[i..]);
        let _ = err.write_all(b" bytes\n");
        std::process::abort()
    }
}

// SAFETY: every call is forwarded unchanged to `System`, which upholds the `GlobalAlloc`
// contract; the only addition is an abort (no return) before oversized requests.
unsafe impl GlobalAlloc for LimitedAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOC {
            Self::too_large(layout.size());
        }
        // SAFETY: same layout as our caller's, which satisfies `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOC {
            Self::too_large(layout.size());
        }
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through us) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOC {
            Self::too_large(new_size);
        }
        // SAFETY: `ptr` and `layout` come from our caller under `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: LimitedAlloc = LimitedAlloc;
