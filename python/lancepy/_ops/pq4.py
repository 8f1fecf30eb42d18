"""4-bit product quantization (``IVF_PQ`` with ``num_bits=4``), as pylance 14 stores and
searches it.

* Codebook: 16 codewords per sub-vector, a ``Tensor`` of shape ``16 x dim`` (values sub-vector
  by sub-vector: ``num_sub_vectors x 16 x (dim / num_sub_vectors)``), trained by k-means on
  ``16 x sample_rate`` rows (residuals, except for dot).
* Codes: two sub-vectors a byte, sub-vector ``2j`` in the low nibble and ``2j+1`` in the high
  one (``num_sub_vectors / 2`` bytes a row; transposed within a partition as 8-bit codes are).
* Search: per probed partition, a table of the query's distance (squared L2 from the query's
  residual, or dot) to each codeword, summed in float32 over the sub-vectors in order. The
  mirrored lance source quantizes that table to bytes for rows past the first 200 of a
  partition; pylance 14.0.2's results are the float sums for every row (checked against its
  searches in tests/test_vector_index_kinds.py), and those are what lancepy returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import pyarrow as pa

from lancepy import _lancepy

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

CODEWORDS = 16


def train_codebook(sample: "np.ndarray", m: int, max_iters: int, seed: int) -> "np.ndarray":
    """``m x 16 x (dim / m)`` codewords: k-means (L2) of each sub-vector of `sample`."""
    import numpy as np

    n, dim = sample.shape
    sd = dim // m
    out = np.empty((m, CODEWORDS, sd), np.float32)
    for j in range(m):
        sub = np.ascontiguousarray(sample[:, j * sd : (j + 1) * sd], dtype=np.float32)
        got, _, _ = _lancepy.kmeans_train(pa.array(sub.reshape(-1)), sd, CODEWORDS, max_iters, "l2", seed + j)
        out[j] = pa.record_batch(got).column("values").to_numpy(zero_copy_only=False).reshape(CODEWORDS, sd)
    return out


def encode(mat: "np.ndarray", codebook: "np.ndarray") -> "np.ndarray":
    """``rows x m`` codes (0..15): each sub-vector's nearest codeword (L2)."""
    import numpy as np

    m, _, sd = codebook.shape
    codes = np.empty((len(mat), m), np.uint8)
    for j in range(m):
        sub = np.ascontiguousarray(mat[:, j * sd : (j + 1) * sd], dtype=np.float32)
        got = _lancepy.ivf_assign(pa.array(sub.reshape(-1)), sd, pa.array(np.ascontiguousarray(codebook[j]).reshape(-1)), "l2")
        codes[:, j] = pa.record_batch(got).column("partition").to_numpy(zero_copy_only=False)
    return codes


def pack(codes: "np.ndarray") -> "np.ndarray":
    """``rows x m`` codes to ``rows x m/2`` bytes (``2j`` low nibble, ``2j+1`` high)."""
    import numpy as np

    return np.ascontiguousarray((codes[:, 1::2].astype(np.uint8) << 4) | (codes[:, 0::2].astype(np.uint8) & 0x0F))


def unpack(packed: "np.ndarray") -> "np.ndarray":
    """``rows x m/2`` bytes to ``rows x m`` codes."""
    import numpy as np

    out = np.empty((packed.shape[0], packed.shape[1] * 2), np.uint8)
    out[:, 0::2] = packed & 0x0F
    out[:, 1::2] = packed >> 4
    return out


def distance_table(q: "np.ndarray", codebook: "np.ndarray", metric: str) -> "np.ndarray":
    """``m x 16`` float32: L2 (squared) or dot distances (``1 - x.y``) from each sub-vector of
    `q` (the query, or its residual for L2) to each codeword."""
    import numpy as np

    m, _, sd = codebook.shape
    qs = q.astype(np.float32).reshape(m, 1, sd)
    if metric == "dot":
        return (np.float32(1.0) - np.einsum("mkd,mkd->mk", np.broadcast_to(qs, codebook.shape), codebook)).astype(np.float32)
    d = codebook - qs
    return np.einsum("mkd,mkd->mk", d, d).astype(np.float32)


def table_for(q: "np.ndarray", centroid: Optional["np.ndarray"], codebook: "np.ndarray", metric: str) -> "np.ndarray":
    """The ``m x 16`` table a probed partition is scored with: of the query's residual to
    `centroid` (L2; cosine, its vectors normalized) or of the query itself (dot: a row's
    distance is then the table sum minus ``m - 1``)."""
    import numpy as np

    if metric == "dot":
        return distance_table(q, codebook, "dot")
    return distance_table((q.astype(np.float32) - centroid.astype(np.float32)).astype(np.float32), codebook, "l2")

