"""Where an index's rows are after a compaction: the one mapping every index segment
(IVF, BTREE, BITMAP, LABEL_LIST) applies to its row addresses when it is remapped."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence, Tuple

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def moved_rows(
    row_addresses: "np.ndarray",
    old_addresses: "np.ndarray",
    new_addresses: "np.ndarray",
    compacted_fragments: Sequence[int],
    dropped_fragments: Sequence[int],
) -> Tuple["np.ndarray", "np.ndarray"]:
    """``(new addresses, keep)`` for an index's `row_addresses`: a row of
    `compacted_fragments` at ``old_addresses[i]`` (sorted) moved to ``new_addresses[i]``, and
    one not among them was deleted (not kept); rows of `dropped_fragments` (compacted together
    with rows the index does not cover) are not kept; other rows stay where they are."""
    import numpy as np

    rid = np.asarray(row_addresses, dtype=np.uint64)
    frag = (rid >> np.uint64(32)).astype(np.int64)
    moved = np.isin(frag, np.asarray(list(compacted_fragments), dtype=np.int64))
    keep = ~np.isin(frag, np.asarray(list(dropped_fragments), dtype=np.int64))
    new_rid = rid.copy()
    if moved.any() and len(old_addresses):
        pos = np.searchsorted(old_addresses, rid[moved])
        pos_c = np.minimum(pos, len(old_addresses) - 1)
        found = (pos < len(old_addresses)) & (old_addresses[pos_c] == rid[moved])
        new_rid[moved] = np.where(found, new_addresses[pos_c], 0)
        keep[moved] &= found
    elif moved.any():
        keep[moved] = False
    return new_rid, keep
