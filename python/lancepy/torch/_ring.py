"""Moving batches out of DataLoader worker processes through a ring of shared memory.

PyTorch moves every tensor a worker returns into a *new* shared-memory segment: the worker
creates and fills a fresh file (zeroed pages, one fault per page), sends its descriptor through
a socket, and the training process maps it (a fault per page again) and unmaps it once the batch
dies. For a 3 MB batch that costs the training process more than reading the batch does, which
caps any worker-based loader at well under what one process can read (benches/RESULTS.md,
issue 22).

Here each worker process owns one shared-memory file cut into slots, created once. A batch
leaving the worker (see :func:`ship`) has its tensor and array leaves copied into a free slot;
what is pickled is only the slot number and the leaves' dtypes, shapes and offsets. The
training process maps each worker's file once and hands out tensors that *view* the slot; when
the last of them is garbage-collected (the DataLoader's pin-memory thread copies and drops them
at once), the slot is marked free in the file's header, and the worker may fill it again.

A worker never waits: when every slot is still held (the training loop keeps batches) or a
batch does not fit, that batch goes the usual way (PyTorch's own pickling); a batch larger than
the slots makes the worker open a larger file for the next ones. Files live in ``/dev/shm`` and
are unlinked as soon as the training process has mapped them (or when the worker exits), so
nothing is left behind; where there is no ``/dev/shm`` the usual path is used.
"""

from __future__ import annotations

import mmap
import os
import secrets
import threading
import weakref
from multiprocessing import util as _mp_util
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch

_SHM_DIR = "/dev/shm"
_HEADER = 4096  # slot flags (one byte each); slots start page-aligned after it
_ALIGN = 64  # each leaf starts on a cache line
_SLOTS = 8  # per worker: the DataLoader's prefetch (2-4) + the batch in use + slack

#: Set to False to send every batch the usual way (benchmarks compare both).
enabled = True

# Counters (per process) for tests and benchmarks: batches sent through a slot, batches that
# went the usual way because no slot was free / the batch did not fit / had no array leaves.
stats = {"ring": 0, "busy": 0, "grown": 0, "plain": 0, "received": 0}


def _round_up(n: int, to: int) -> int:
    return (n + to - 1) // to * to


# ------------------------------------------------------------------------------------------
# Leaves: what is copied into a slot, and how it comes back


def _as_array(leaf: Any) -> Optional[np.ndarray]:
    """A C-contiguous numpy view of a CPU tensor / array leaf worth copying, else None."""
    if isinstance(leaf, torch.Tensor):
        if leaf.device.type != "cpu" or leaf.requires_grad or leaf.layout != torch.strided or leaf.is_quantized:
            return None
        if leaf.dtype == torch.bool or leaf.is_complex() or leaf.dtype not in _TORCH_TO_NUMPY:
            return None
        return np.ascontiguousarray(leaf.numpy())
    if isinstance(leaf, np.ndarray):
        if leaf.dtype.hasobject or leaf.dtype.kind not in "biufcmMV":
            return None
        return np.ascontiguousarray(leaf)
    return None


_TORCH_TO_NUMPY = {
    torch.float64: np.float64,
    torch.float32: np.float32,
    torch.float16: np.float16,
    torch.int64: np.int64,
    torch.int32: np.int32,
    torch.int16: np.int16,
    torch.int8: np.int8,
    torch.uint8: np.uint8,
}


def _flatten(obj: Any, arrays: List[np.ndarray]) -> Any:
    """The structure of `obj` with each copyable leaf replaced by ``("#", i, is_tensor)``
    (``arrays[i]`` is its data); other values stay as they are (pickled as usual)."""
    if isinstance(obj, dict):
        return ("d", type(obj), [(k, _flatten(v, arrays)) for k, v in obj.items()])
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return ("t", [_flatten(v, arrays) for v in obj])
    if isinstance(obj, list):
        return ("l", [_flatten(v, arrays) for v in obj])
    arr = _as_array(obj)
    if arr is None:
        return ("v", obj)
    arrays.append(arr)
    return ("#", len(arrays) - 1, isinstance(obj, torch.Tensor))


def _unflatten(tree: Any, leaves: List[Any]) -> Any:
    kind = tree[0]
    if kind == "d":
        return tree[1]((k, _unflatten(v, leaves)) for k, v in tree[2])
    if kind == "t":
        return tuple(_unflatten(v, leaves) for v in tree[1])
    if kind == "l":
        return [_unflatten(v, leaves) for v in tree[1]]
    if kind == "v":
        return tree[1]
    return leaves[tree[1]]


# ------------------------------------------------------------------------------------------
# The worker's side


class _WorkerRing:
    """The shared-memory file of one worker process: a header of slot flags (0 free, 1 in use
    by the training process), then `slots` slots of `slot_bytes` each."""

    def __init__(self, slot_bytes: int, slots: int = _SLOTS) -> None:
        self.pid = os.getpid()
        self.slot_bytes = slot_bytes
        self.slots = slots
        self.size = _HEADER + slots * slot_bytes
        self.path = os.path.join(_SHM_DIR, f"lancepy-ring-{self.pid}-{secrets.token_hex(8)}")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, self.size)
            self.mm = mmap.mmap(fd, self.size)
        except BaseException:
            os.close(fd)
            _unlink(self.path)
            raise
        os.close(fd)
        # Removed at the worker's exit if the training process never mapped it (it unlinks
        # the file itself when it does).
        _mp_util.Finalize(self, _unlink, args=(self.path,), exitpriority=10)
        self.flags = np.frombuffer(self.mm, dtype=np.uint8, count=slots, offset=0)
        self.next = 0

    def claim(self) -> Optional[int]:
        for k in range(self.slots):
            s = (self.next + k) % self.slots
            if self.flags[s] == 0:
                self.flags[s] = 1
                self.next = (s + 1) % self.slots
                return s
        return None

    def write(self, slot: int, arrays: List[np.ndarray]) -> List[Tuple[int, str, Tuple[int, ...]]]:
        base = _HEADER + slot * self.slot_bytes
        where = []
        off = 0
        for a in arrays:
            dst = np.frombuffer(self.mm, dtype=a.dtype, count=a.size, offset=base + off)
            np.copyto(dst, a.reshape(-1), casting="no")
            where.append((off, a.dtype.str, a.shape))
            off = _round_up(off + a.nbytes, _ALIGN)
        return where

    def close(self) -> None:
        self.flags = None  # type: ignore[assignment]  # the view must go before the map
        try:
            self.mm.close()
        except BufferError:  # a view is still alive somewhere: the map goes with it
            pass


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


_worker_ring: Optional[_WorkerRing] = None


def _bytes_needed(arrays: List[np.ndarray]) -> int:
    return sum(_round_up(a.nbytes, _ALIGN) for a in arrays)


class _Shipment:
    """A batch on its way out of a worker: pickled as a slot of the worker's ring."""

    __slots__ = ("batch",)

    def __init__(self, batch: Any) -> None:
        self.batch = batch

    def __reduce__(self) -> Any:
        global _worker_ring
        arrays: List[np.ndarray] = []
        tree = _flatten(self.batch, arrays)
        need = _bytes_needed(arrays)
        if not arrays or not enabled:
            stats["plain"] += 1
            return (_identity, (self.batch,))
        ring = _worker_ring
        if ring is not None and ring.pid != os.getpid():
            ring = None  # inherited through fork: the parent's
        if ring is None or need > ring.slot_bytes:
            if ring is not None:
                ring.close()  # in-flight slots stay readable: the file lives until mapped
                stats["grown"] += 1
            try:
                ring = _WorkerRing(_round_up(need + need // 4, 1 << 16))
            except OSError:
                _worker_ring = None
                stats["plain"] += 1
                return (_identity, (self.batch,))
            _worker_ring = ring
        slot = ring.claim()
        if slot is None:
            stats["busy"] += 1
            return (_identity, (self.batch,))
        where = ring.write(slot, arrays)
        stats["ring"] += 1
        return (_receive, (ring.path, ring.pid, ring.size, ring.slots, ring.slot_bytes, slot, tree, where))


def _identity(x: Any) -> Any:
    return x


def available() -> bool:
    """Whether batches can move through a shared-memory ring on this system."""
    return enabled and os.path.isdir(_SHM_DIR) and os.access(_SHM_DIR, os.W_OK)


def ship(batch: Any) -> Any:
    """`batch`, wrapped to leave a DataLoader worker through its ring (unchanged when not in a
    worker process, or where shared memory files are not available)."""
    if isinstance(batch, _Shipment) or torch.utils.data.get_worker_info() is None or not available():
        return batch
    return _Shipment(batch)


# ------------------------------------------------------------------------------------------
# The training process's side


class _MappedRing:
    """A worker's ring as mapped in the training process, with the number of live views of
    each slot; a slot is freed (its flag cleared in the shared header) when its last view dies."""

    def __init__(self, path: str, pid: int, size: int, slots: int) -> None:
        fd = os.open(path, os.O_RDWR)
        try:
            if os.fstat(fd).st_size != size:
                raise OSError(f"shared-memory ring {path} has an unexpected size")
            self.mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        _unlink(path)  # mapped by both sides now: nothing to leave behind
        self.pid = pid
        self.flags = np.frombuffer(self.mm, dtype=np.uint8, count=slots, offset=0)
        self.live: Dict[int, int] = {}
        self.lock = threading.Lock()

    def release(self, slot: int) -> None:
        with self.lock:
            n = self.live[slot] - 1
            if n:
                self.live[slot] = n
            else:
                del self.live[slot]
                self.flags[slot] = 0

    def try_close(self) -> bool:
        """Unmaps the ring when its worker has exited and no view of it is alive."""
        if self.live or _alive(self.pid):
            return False
        flags, self.flags = self.flags, None
        del flags
        try:
            self.mm.close()
        except BufferError:
            return False
        return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_mapped: Dict[str, _MappedRing] = {}
_mapped_lock = threading.Lock()


def _ring_for(path: str, pid: int, size: int, slots: int) -> _MappedRing:
    with _mapped_lock:
        ring = _mapped.get(path)
        if ring is None:
            for p in [p for p, r in _mapped.items() if r.try_close()]:
                del _mapped[p]
            ring = _mapped[path] = _MappedRing(path, pid, size, slots)
        return ring


def _receive(path: str, pid: int, size: int, slots: int, slot_bytes: int, slot: int, tree: Any,
             where: List[Tuple[int, str, Tuple[int, ...]]]) -> Any:
    """Rebuilds a shipped batch in the training process: tensors viewing the slot."""
    ring = _ring_for(path, pid, size, slots)
    stats["received"] += 1
    base = _HEADER + slot * slot_bytes
    is_tensor: List[bool] = []
    _collect_tensor_flags(tree, is_tensor)
    specs = []
    for off, dtype, shape in where:
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not 0 <= slot < slots or off < 0 or off + count * dt.itemsize > slot_bytes or len(where) != len(is_tensor):
            raise OSError("corrupt shared-memory batch: a leaf lies outside its slot")
        specs.append((base + off, dt, count, shape))
    with ring.lock:
        ring.live[slot] = len(specs)
    leaves: List[Any] = []
    for (off, dt, count, shape), tensor in zip(specs, is_tensor):
        arr = np.frombuffer(ring.mm, dtype=dt, count=count, offset=off).reshape(shape)
        weakref.finalize(arr, ring.release, slot)
        leaves.append(torch.from_numpy(arr) if tensor else arr)
    return _unflatten(tree, leaves)


def _collect_tensor_flags(tree: Any, out: List[bool]) -> None:
    kind = tree[0]
    if kind == "d":
        for _, v in tree[2]:
            _collect_tensor_flags(v, out)
    elif kind in ("t", "l"):
        for v in tree[1]:
            _collect_tensor_flags(v, out)
    elif kind == "#":
        out.append(tree[2])
