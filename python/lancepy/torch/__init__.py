r"""PyTorch training data straight from Lance datasets (``pip install lancepy[torch]``).

::

    from torch.utils.data import DataLoader
    from lancepy.torch import LanceDataset, ShuffleSampler, collate_fn

    data = LanceDataset("train.lance", columns=["emb", "label"])      # the version is pinned now
    sampler = ShuffleSampler(data, seed=0)                              # DDP ranks: automatic
    loader = DataLoader(data, batch_size=256, sampler=sampler, collate_fn=collate_fn)  # see "Workers"
    for epoch in range(10):
        sampler.set_epoch(epoch)
        for batch in loader:         # {"emb": float32 tensor [256, 768], "label": int64 tensor [256]}
            ...

* :class:`LanceDataset` is map-style: index ``i`` is the ``i``-th live row of the pinned version
  (what ``ds.take([i])`` returns). The DataLoader hands a whole batch of indices to
  ``__getitems__``, which reads them with ONE native take over all fragments (rows in the
  given order, repeats allowed) and converts the columns without per-row Python objects.
* :class:`ShuffleSampler` yields a deterministic permutation per epoch (``set_epoch``), splits
  it into equal, disjoint shares for distributed ranks and resumes mid-epoch exactly
  (``state_dict`` / ``load_state_dict``); ``block_size=`` trades randomness for fewer, larger
  reads.
* :class:`LanceIterableDataset` yields ready batches, splitting the work across DataLoader
  workers and ranks with no overlap and no gap: a full scan in order, or shuffled.
* :class:`Loader` replaces the DataLoader for reading: threads in the training process read
  batches ahead (one native take each, GIL released), optionally pinned and copied to a CUDA
  device, in :class:`ShuffleSampler`'s (or any sampler's) order, with resume and ranks.

Batches are dicts ``column -> values``:

===========================================  =========================================================
column type                                  value
===========================================  =========================================================
int*, uint*, float16/32/64                   1-D tensor, **zero-copy** (shares the Arrow buffer)
date, time, timestamp, duration              1-D int32/int64 tensor of the stored integers, zero-copy
bool                                         1-D ``torch.bool`` tensor (one copy: Arrow packs bits)
fixed_size_list of the above (nested: N-D)   ``[batch, dim, ...]`` tensor, **zero-copy** (bool: 1 copy)
string, large_string (and dictionaries)      ``list[str]`` (``None`` for nulls)
binary, large_binary, fixed_size_binary      ``list[bytes]``; with ``binary="tensor"`` a
                                             :class:`BinaryTensor` ``(values, offsets)``: one uint8
                                             tensor of all values (zero-copy) + int64 offsets
anything else (lists, structs, decimals...)  the ``pyarrow.Array`` itself
===========================================  =========================================================

Numeric columns holding nulls raise :class:`NullValuesError` unless ``fill_null=`` is given
(one value for every column, or a dict per column); filling makes one copy. Zero-copy tensors
share memory with the batch just read (nothing else uses it); DataLoader workers move each
batch to shared memory, which is one copy. Reads go through lancepy's native take: one call
per batch, with the GIL released; vectors and large binary values stored row by row (full-zip
pages without nulls) are copied from the mapped files straight into the batch, in order (for
``list[bytes]``, straight into each ``bytes`` object: one copy).

Workers: PyTorch moves each tensor a worker returns into a new shared-memory segment, which
costs the training process more than reading the batch. With ``collate_fn=collate_fn`` (and
in :class:`LanceIterableDataset`), a batch leaves a worker through that worker's shared-memory
ring instead (``_ring``): its tensors are copied once into slots the training process mapped
once, and a slot is reused when the tensors viewing it are garbage-collected (at once with
``pin_memory=True``). On one H100 machine (16 cores, 1,024 × 768-d rows) that took DataLoader
workers from 0.36–0.45 M to 1.06–1.16 M rows/s. For reading alone :class:`Loader` (reads on
native threads of the training process, ahead of the loop) is faster still; use workers for
costly ``transform``\ s that hold the GIL (image decoding in Python, tokenizing).

Datasets are opened lazily in each process: the objects here pickle the URI, the pinned
version and the options, never open handles, so ``multiprocessing_context`` may be
``"fork"``, ``"spawn"`` or ``"forkserver"`` (``memory://`` datasets exist only in the process
that made them and its forks).

Layout of the package (imports only go downward: ``_ring`` <- ``_convert`` <- ``sampler`` <- ``dataset``
<- ``loader``; this module only re-exports):

* ``_ring``: batches out of DataLoader workers through a shared-memory ring per worker.
* ``_convert``: Arrow -> tensor conversion: :class:`Batch`, :class:`BinaryTensor`,
  :func:`collate_fn`, the column converters, null handling and :class:`NullValuesError`.
* ``sampler``: :class:`ShuffleSampler`, the per-epoch order shared out to ranks, rank and
  world size defaults.
* ``dataset``: :class:`LanceDataset`, :class:`LanceIterableDataset`, opening a pinned version.
* ``loader``: :class:`Loader` and its helpers (threads, pinning, device copies).
* ``data`` (imported on demand, from ``_convert`` and ``dataset``): pylance's
  ``lance.torch.data`` API: the iterable ``LanceDataset`` (batches from a
  :mod:`lancepy.sampler` sampler), ``SafeLanceDataset``, ``get_safe_loader``.
* ``devices``: :func:`preferred_device` (pylance's). ``distance`` (pylance's
  ``lance.torch.distance``: pairwise and nearest-centroid L2 / cosine / dot distances) and
  ``bench_utils`` (pylance's exact ``ground_truth`` k-NN over a dataset; from ``devices``
  and ``distance``) are imported on demand.
"""

from __future__ import annotations

import lancepy  # noqa: F401  (``lancepy.torch.lancepy``: tests patch ``lancepy.dataset`` through it)

from ._convert import Batch, BinaryTensor, FillNull, NullValuesError, _Converter, collate_fn
from .dataset import LanceDataset, LanceIterableDataset
from .devices import preferred_device
from .loader import Loader, _default_threads
from .sampler import ShuffleSampler, _Order  # _Order: pickles of samplers made before the split name it here


__all__ = [
    "LanceDataset",
    "LanceIterableDataset",
    "ShuffleSampler",
    "BinaryTensor",
    "NullValuesError",
    "collate_fn",
    "Loader",
    "preferred_device",
]
