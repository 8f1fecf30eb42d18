"""Cold reads for the benchmarks without root: drop files from the page cache and count
what a read brought back into it.

* :func:`evict` flushes each file (``fsync``) and asks the kernel to drop its cached pages
  (``posix_fadvise(POSIX_FADV_DONTNEED)``). Pages some process still has mapped and has
  touched are not dropped: close readers (and drop datasets that map their files) first;
  :class:`Probe` reports what stayed resident.
* :func:`resident_bytes` is the bytes of a file in the page cache (``mincore(2)`` over a
  private mapping, which faults nothing in). The difference before and after a read is what
  it fetched from storage for those files, the kernel's read-ahead included, whichever
  library read them.

Shared by benches/bench_file.py and benches/bench_torch.py (``--cold``); the tests carry
their own copy of these few lines (tests import nothing from benches/).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import time
from typing import Iterable, List, Sequence

import numpy as np

PAGE = os.sysconf("SC_PAGE_SIZE")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]


def resident_bytes(path: str) -> int:
    """Bytes of ``path`` in the page cache now."""
    size = os.path.getsize(path)
    if size == 0:
        return 0
    pages = (size + PAGE - 1) // PAGE
    vec = (ctypes.c_ubyte * pages)()
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY)
        try:
            anchor = ctypes.c_char.from_buffer(m)
            rc = _libc.mincore(ctypes.addressof(anchor), size, vec)
            del anchor
        finally:
            m.close()
    if rc != 0:
        raise OSError(ctypes.get_errno(), f"mincore failed on {path}")
    return int(np.count_nonzero(np.frombuffer(vec, dtype=np.uint8) & 1)) * PAGE


def evict(paths: Iterable[str]) -> None:
    """Drops the files' pages from the page cache (those no process has mapped)."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def forget_lancepy_readers(root: str) -> None:
    """Drops lancepy's process-wide cache of open files under ``root`` (a dataset directory),
    which keeps their mappings alive after the dataset objects are gone: call it once those
    objects are dropped, so that :func:`evict` can drop the pages they touched. (A private
    lancepy function: a bench-only tool.)"""
    from lancepy import _lancepy

    _lancepy.evict_cached_files(os.path.abspath(root))


def data_files(uri: str) -> List[str]:
    """The files a read of a dataset (a directory: every file under it) or of one file reads."""
    if os.path.isfile(uri):
        return [uri]
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(uri) for f in fs)


class Probe:
    """Evicts a set of files, then measures what one read fetched back into the cache:

        probe = Probe(files)
        probe.evict()            # untimed
        ... the timed read ...
        fetched = probe.fetched()

    ``residual`` is what stayed resident after the eviction (pages mapped by a live reader:
    those reads are not cold; the benches print it)."""

    def __init__(self, files: Sequence[str]) -> None:
        self.files = list(files)
        self.residual = 0

    def total(self) -> int:
        return sum(resident_bytes(f) for f in self.files)

    def evict(self, tries: int = 4) -> int:
        """Evicts; again (after 20 ms) while pages stay, up to `tries` times: pages still being
        read in (the kernel's read-ahead after the untimed open) cannot be dropped until their
        reads finish."""
        for i in range(tries):
            evict(self.files)
            self.residual = self.total()
            if self.residual == 0 or i == tries - 1:
                break
            time.sleep(0.02)
        return self.residual

    def fetched(self) -> int:
        return self.total() - self.residual
