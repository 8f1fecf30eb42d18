"""The protobuf messages of IVF vector indices (``IVF``, ``Tensor``, ``VectorIndexDetails``),
encoded and decoded by prost (``protos/index.proto``, ``rust/src/table/index_proto.rs``).

The expected bytes were written by lancepy's earlier hand-written Python encoder, whose
output pylance reads (and matches what pylance writes): the prost path must write exactly
these bytes and read the same values back from them.
"""

import struct

import numpy as np
import pyarrow as pa
import pytest

from lancepy import _lancepy
from lancepy._ops import ivf_build
from lancepy.exceptions import CorruptFileError, InvalidArgumentError, UnsupportedError

CENTROIDS = (np.arange(12, dtype=np.float32).reshape(4, 3) / 7 - 0.5).astype(np.float32)
CENTROIDS_HEX = "000000bf6edbb6beb66d5bbe244992bd2849923db86d5b3e6edbb63e0000003f4a92243f9224493fdcb66d3f9224893f"

IVF_FULL = bytes.fromhex("12090003820180e497d0121a05037f80010122380802120204031a30" + CENTROIDS_HEX + "290000000000402940")
IVF_INDEX_IDX = bytes.fromhex("1204000000001a040000000022380802120204031a30" + CENTROIDS_HEX + "290000000000000000")
IVF_NO_LOSS = bytes.fromhex("120200001a02000022200802120202031a18" + CENTROIDS_HEX[:48])
IVF_AUX = bytes.fromhex("12030002021a040200ac02")
TENSOR = bytes.fromhex("0802120203021a180000c03f000000c000005040000000006f12833a0000e0c0")

_IVF_HINTS = "4a1c0a156c616e63652e6976662e73616d706c655f7261746512033235364a190a136c616e63652e6976662e6d61785f697465727312023530"
DETAILS_FLAT_L2 = bytes.fromhex("4200" + _IVF_HINTS)
DETAILS_FLAT_COSINE = bytes.fromhex("08014200" + _IVF_HINTS)
DETAILS_PQ_DOT = bytes.fromhex(
    "08022204080810104a1c0a156c616e63652e6976662e73616d706c655f7261746512033330304a180a136c616e63652e6976662e6d61"
    "785f69746572731201374a1b0a146c616e63652e70712e73616d706c655f7261746512033330304a170a126c616e63652e70712e6d61"
    "785f69746572731201374a1a0a156c616e63652e70712e6b6d65616e735f7265646f73120131"
)
DETAILS_PQ_L2 = bytes.fromhex(
    "2205080810c8014a1d0a156c616e63652e6976662e73616d706c655f726174651204313030304a1a0a136c616e63652e6976662e6d61"
    "785f697465727312033135304a1c0a146c616e63652e70712e73616d706c655f726174651204313030304a190a126c616e63652e7071"
    "2e6d61785f697465727312033135304a1a0a156c616e63652e70712e6b6d65616e735f7265646f73120131"
)


def _params(kind, metric, m, sample_rate, max_iters):
    return ivf_build.IvfParams(kind, metric, 8, m, sample_rate, max_iters, None, None, True, None)


def test_ivf_messages_are_written_as_before():
    assert ivf_build.ivf_message([0, 3, 130, 5_000_000_000], [3, 127, 128, 1], CENTROIDS, 12.625) == IVF_FULL
    assert ivf_build.ivf_message([0] * 4, [0] * 4, CENTROIDS, 0.0) == IVF_INDEX_IDX
    assert ivf_build.ivf_message([0] * 2, [0] * 2, CENTROIDS[:2], None) == IVF_NO_LOSS
    assert ivf_build.ivf_message([0, 2, 2], [2, 0, 300]) == IVF_AUX
    assert ivf_build.ivf_message([], []) == b""
    # float64 centroids are stored as float32, as before
    assert ivf_build.ivf_message([0] * 4, [0] * 4, CENTROIDS.astype(np.float64), 0.0) == IVF_INDEX_IDX


def test_tensors_are_written_as_before():
    values = np.array([[1.5, -2.0, 3.25], [0.0, 1e-3, -7.0]], np.float32)
    # the codebook is written with shape (256, dim) over values of another layout: only the
    # count has to agree
    assert ivf_build._tensor_f32(values, (3, 2)) == TENSOR


@pytest.mark.parametrize(
    "params, expected",
    [
        (_params("IVF_FLAT", "l2", None, 256, 50), DETAILS_FLAT_L2),
        (_params("IVF_FLAT", "cosine", None, 256, 50), DETAILS_FLAT_COSINE),
        (_params("IVF_PQ", "dot", 16, 300, 7), DETAILS_PQ_DOT),
        (_params("IVF_PQ", "l2", 200, 1000, 150), DETAILS_PQ_L2),
    ],
    ids=["flat_l2", "flat_cosine", "pq_dot", "pq_l2"],
)
def test_vector_index_details_are_written_as_before(params, expected):
    assert ivf_build.vector_index_details(params) == expected


def test_ivf_messages_read_as_before():
    offsets, lengths, centroids, loss = _lancepy.decode_ivf(IVF_FULL)
    assert (offsets, lengths, loss) == ([0, 3, 130, 5_000_000_000], [3, 127, 128, 1], 12.625)
    c = np.asarray(centroids)
    assert c.dtype == np.float32 and c.shape == (4, 3) and np.array_equal(c, CENTROIDS)
    offsets, lengths, centroids, loss = _lancepy.decode_ivf(IVF_INDEX_IDX)
    assert (offsets, lengths, loss) == ([0] * 4, [0] * 4, 0.0) and np.array_equal(np.asarray(centroids), CENTROIDS)
    offsets, lengths, centroids, loss = _lancepy.decode_ivf(IVF_NO_LOSS)
    assert (offsets, lengths, loss) == ([0, 0], [0, 0], None) and np.array_equal(np.asarray(centroids), CENTROIDS[:2])
    assert _lancepy.decode_ivf(IVF_AUX) == ([0, 2, 2], [2, 0, 300], None, None)
    assert _lancepy.decode_ivf(b"") == ([], [], None, None)


def test_tensors_read_as_before():
    t = np.asarray(_lancepy.decode_tensor_f32(TENSOR))
    assert t.dtype == np.float32 and t.shape == (3, 2)
    assert t.tolist() == np.array([[1.5, -2.0], [3.25, 0.0], [1e-3, -7.0]], np.float32).tolist()
    assert not t.flags.writeable


def test_damaged_messages_raise_typed_errors():
    for n in range(1, len(TENSOR)):
        with pytest.raises(CorruptFileError):
            _lancepy.decode_tensor_f32(TENSOR[:n])
    with pytest.raises(CorruptFileError):
        _lancepy.decode_ivf(IVF_FULL[:-12])
    with pytest.raises(CorruptFileError, match="shape"):
        _lancepy.decode_tensor_f32(TENSOR.replace(bytes.fromhex("120203"), bytes.fromhex("120204")))
    uint16 = bytes.fromhex("0805120101") + bytes.fromhex("1a02") + bytes(2)
    with pytest.raises(UnsupportedError, match="UINT16"):
        _lancepy.decode_tensor_f32(uint16)
    # uint8 tensors (the centroids of binary vectors, hamming) are read as their byte values
    uint8 = bytes.fromhex("0804120102") + bytes.fromhex("1a02") + bytes([7, 255])
    assert np.asarray(_lancepy.decode_tensor_f32(uint8)).tolist() == [7.0, 255.0]
    assert _lancepy.encode_tensor_f32(pa.array([7.0, 255.0], pa.float32()), [2], "uint8") == uint8
    with pytest.raises(InvalidArgumentError, match="uint8"):
        _lancepy.encode_tensor_f32(pa.array([1.5], pa.float32()), [1], "uint8")
    # float64 (and float16) tensors are read as float32, as pylance writes them for such vectors
    float64 = bytes.fromhex("0803120101") + bytes.fromhex("1a08") + struct.pack("<d", 2.5)
    assert np.asarray(_lancepy.decode_tensor_f32(float64)).tolist() == [2.5]
