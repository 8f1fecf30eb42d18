"""Shared fixtures, data generators and comparison helpers for the file-format tests.

Everything that builds test data lives here so that the interop, encoding, error and
Hypothesis suites exercise the same catalogue of types and data shapes (the list in the
file-format issue):

* ``TYPES`` maps a short id (used in test ids) to an Arrow type;
* ``make_array(type_id, shape, rng)`` builds an array of that type in a given *shape*
  (no nulls, some nulls, all nulls, zero rows, one row, sliced, long values, ...);
* ``assert_tables_equal`` compares two tables *exactly*: types, null masks and values,
  floats bit for bit (NaN, -0.0), dictionaries by their decoded values.
"""

from __future__ import annotations

import os
import string
import subprocess
import sys
import decimal
from decimal import Decimal
from typing import Dict, Iterable, List, Optional, Sequence

import numpy as np
import pyarrow as pa
import pytest

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "lancepy",
        max_examples=int(os.environ.get("LANCEPY_HYPOTHESIS_EXAMPLES", "40")),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
        print_blob=True,
    )
    settings.load_profile("lancepy")
except ImportError:  # pragma: no cover - hypothesis is a test dependency
    pass

VERSIONS = ["2.1", "2.2"]

# Rows per generated array: crosses the 1024-value bit-packing chunks and the 4096-value
# mini-block chunks of the writers (lancepy's and pylance's).
DEFAULT_ROWS = 5000
# Rows around which takes and ranges are checked (chunk and page edges).
EDGE_ROWS = (0, 1, 511, 512, 1023, 1024, 1025, 2047, 2048, 4095, 4096, 4097)


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pylance():
    """The reference implementation (``lance``, from PyPI ``pylance``)."""
    return pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")


@pytest.fixture(scope="session")
def s3():
    """One S3-compatible server (moto) on 127.0.0.1 for the session (tests/s3_server.py)."""
    pytest.importorskip("moto.server", reason="moto[server] is a test dependency (scripts/setup.sh)")
    from s3_server import S3Server, require_no_metadata_service

    require_no_metadata_service()
    os.environ["NO_PROXY"] = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1", "localhost"]))
    server = S3Server()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pylance_file(pylance):
    """``lance.file`` (LanceFileReader / LanceFileWriter of the reference)."""
    import lance.file

    return lance.file


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A generator seeded from the test's id, so every test's data is reproducible."""
    return np.random.default_rng(_stable_seed(request.node.nodeid))


def _stable_seed(text: str) -> int:
    # hash() is salted per process; use a stable digest instead.
    import hashlib

    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


# --------------------------------------------------------------------------------------------
# Type catalogue
# --------------------------------------------------------------------------------------------

INT_TYPES = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
}
FLOAT_TYPES = {"float16": pa.float16(), "float32": pa.float32(), "float64": pa.float64()}
TEMPORAL_TYPES = {
    "date32": pa.date32(),
    "date64": pa.date64(),
    "time32_s": pa.time32("s"),
    "time32_ms": pa.time32("ms"),
    "time64_us": pa.time64("us"),
    "time64_ns": pa.time64("ns"),
    **{f"timestamp_{u}": pa.timestamp(u) for u in ("s", "ms", "us", "ns")},
    **{f"timestamp_{u}_tz": pa.timestamp(u, tz) for u, tz in (("s", "UTC"), ("ms", "Europe/Paris"), ("us", "+05:30"), ("ns", "America/New_York"))},
    **{f"duration_{u}": pa.duration(u) for u in ("s", "ms", "us", "ns")},
}
DECIMAL_TYPES = {"decimal128": pa.decimal128(38, 10), "decimal128_small": pa.decimal128(9, 2), "decimal256": pa.decimal256(76, 20)}
VARIABLE_TYPES = {"string": pa.string(), "large_string": pa.large_string(), "binary": pa.binary(), "large_binary": pa.large_binary()}
VECTOR_TYPES = {
    f"fsl_{name}_{dim}": pa.list_(item, dim)
    for name, item in (("float16", pa.float16()), ("float32", pa.float32()), ("float64", pa.float64()), ("int8", pa.int8()), ("uint8", pa.uint8()))
    for dim in (1, 3, 16, 128, 4096)
}
DICT_TYPES = {
    "dict_int8_string": pa.dictionary(pa.int8(), pa.string()),
    "dict_int16_string": pa.dictionary(pa.int16(), pa.string()),
    "dict_int32_string": pa.dictionary(pa.int32(), pa.string()),
    "dict_int64_string": pa.dictionary(pa.int64(), pa.string()),
}

TYPES: Dict[str, pa.DataType] = {
    "null": pa.null(),
    "bool": pa.bool_(),
    **INT_TYPES,
    **FLOAT_TYPES,
    **DECIMAL_TYPES,
    **TEMPORAL_TYPES,
    **VARIABLE_TYPES,
    "fixed_size_binary": pa.binary(16),
    "fixed_size_binary_1": pa.binary(1),
    **VECTOR_TYPES,
    **DICT_TYPES,
}

# Shapes every type is tested in.
COMMON_SHAPES = ["no_nulls", "some_nulls", "all_nulls", "zero_rows", "one_row", "sliced", "multi_page"]


def shapes_for(type_id: str) -> List[str]:
    """The data shapes that make sense for a type (the issue's list, per type)."""
    t = TYPES[type_id]
    if pa.types.is_null(t):
        return ["all_nulls", "zero_rows", "one_row", "sliced", "multi_page"]
    shapes = list(COMMON_SHAPES)
    if pa.types.is_integer(t) or pa.types.is_temporal(t) or pa.types.is_decimal(t):
        # bit-packing, RLE and constant pages
        shapes += ["small_range", "runs", "constant"]
    if pa.types.is_floating(t):
        shapes += ["special_floats", "runs", "constant"]
    if pa.types.is_boolean(t):
        shapes += ["constant", "runs"]
    if t in (pa.string(), pa.large_string()):
        shapes += ["long_256", "huge_32k", "non_ascii", "empty_strings", "low_cardinality", "text_fsst", "constant"]
    if t in (pa.binary(), pa.large_binary()):
        shapes += ["long_256", "huge_32k", "empty_strings", "low_cardinality", "constant"]
    if pa.types.is_fixed_size_binary(t):
        shapes += ["low_cardinality", "constant"]
    if pa.types.is_fixed_size_list(t):
        shapes += ["item_nulls", "constant"]
    if pa.types.is_dictionary(t):
        shapes += ["non_ascii", "empty_strings", "long_256", "constant"]
    if "constant" in shapes:
        shapes.append("constant_nulls")  # one distinct value plus nulls (2.2 constant pages with levels)
    return shapes


def rows_for(t: pa.DataType, target: int = DEFAULT_ROWS, max_bytes: int = 4 << 20) -> int:
    """Rows to generate: ``target`` unless rows are wide (keeps each array to a few MiB)."""
    width = 8
    if pa.types.is_fixed_size_list(t):
        width = max(1, t.list_size * max(1, t.value_type.bit_width // 8))
    elif pa.types.is_fixed_size_binary(t) or pa.types.is_decimal(t):
        width = t.byte_width
    return max(16, min(target, max_bytes // width))


# --------------------------------------------------------------------------------------------
# Value generators
# --------------------------------------------------------------------------------------------

NON_ASCII_ALPHABET = "aé漢字🙂ß\u00a0\u200dЖ\U0001f600ق\u0301z"
TEXT_WORDS = (
    "lance columnar format reads writes vectors tables random access pages chunks encoding "
    "compression dictionary bitpacking fsst zstd arrow python rust fast small large data query"
).split()


def _random_strings(rng: np.random.Generator, n: int, min_len: int, max_len: int, alphabet: str) -> List[str]:
    lens = rng.integers(min_len, max_len + 1, size=n)
    chars = np.array(list(alphabet))
    return ["".join(chars[rng.integers(0, len(chars), size=k)]) for k in lens]


def _text(rng: np.random.Generator, n: int, words_min: int = 3, words_max: int = 30) -> List[str]:
    words = np.array(TEXT_WORDS)
    lens = rng.integers(words_min, words_max + 1, size=n)
    return [" ".join(words[rng.integers(0, len(words), size=k)]) for k in lens]


def _ints(t: pa.DataType, n: int, rng: np.random.Generator, shape: str) -> np.ndarray:
    info = np.iinfo(t.to_pandas_dtype())
    if shape == "small_range":
        lo, hi = (-50, 50) if info.min < 0 else (0, 100)
        return rng.integers(lo, hi, size=n, dtype=info.dtype)
    if shape == "runs":
        return np.repeat(rng.integers(max(info.min, -1000), min(info.max, 1000), size=n // 37 + 1, dtype=info.dtype), 37)[:n]
    v = rng.integers(info.min, info.max, size=n, dtype=info.dtype, endpoint=True)
    # Extremes, zero and -1 at fixed places so every page and every run sees them.
    specials = np.array([info.min, info.max, 0, -1 if info.min < 0 else 1], dtype=info.dtype)
    v[: min(n, 4)] = specials[: min(n, 4)]
    if n > 10:
        v[-1] = info.min
        v[n // 2] = info.max
    return v


def _floats(t: pa.DataType, n: int, rng: np.random.Generator, shape: str) -> np.ndarray:
    dtype = {16: np.float16, 32: np.float32, 64: np.float64}[t.bit_width]
    if shape == "runs":
        return np.repeat(rng.standard_normal(n // 37 + 1), 37)[:n].astype(dtype)
    v = (rng.standard_normal(n) * 1000).astype(dtype)
    specials = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, np.finfo(dtype).max, np.finfo(dtype).min, np.finfo(dtype).tiny], dtype=dtype)
    if shape == "special_floats":
        v = specials[rng.integers(0, len(specials), size=n)]
        # Negative NaN and a NaN payload: bits must survive exactly.
        if n > 2:
            bits = v.view({16: np.uint16, 32: np.uint32, 64: np.uint64}[t.bit_width])
            bits[1] = {16: 0xFE01, 32: 0xFFC00001, 64: 0xFFF8000000000001}[t.bit_width]
        return v
    v[: min(n, 3)] = specials[[1, 3, 4]][: min(n, 3)]  # -0.0, inf, -inf
    return v


def _temporal(t: pa.DataType, n: int, rng: np.random.Generator, shape: str) -> pa.Array:
    bits = t.bit_width
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        per_day = {"s": 86400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}[t.unit]
        lo, hi = 0, per_day - 1
    elif pa.types.is_date32(t):
        lo, hi = -1_000_000, 1_000_000
    elif pa.types.is_date64(t):
        lo, hi = -1_000_000, 1_000_000  # days; scaled to ms below
    else:
        lo, hi = (-(2**31), 2**31 - 1) if bits == 32 else (-(2**62), 2**62)
    if shape == "small_range":
        hi = lo + 100 if lo >= 0 else 50
        lo = max(lo, -50)
    if shape == "runs":
        v = np.repeat(rng.integers(lo, hi, size=n // 37 + 1), 37)[:n]
    else:
        v = rng.integers(lo, hi, size=n, endpoint=True)
    if pa.types.is_date64(t):
        v = v * 86_400_000
    storage = pa.int32() if bits == 32 else pa.int64()
    return pa.array(v.astype(storage.to_pandas_dtype()), type=storage).view(t)


def _decimals(t: pa.DataType, n: int, rng: np.random.Generator, shape: str) -> pa.Array:
    p, s = t.precision, t.scale
    if shape == "small_range":
        unscaled = [int(x) for x in rng.integers(-50, 50, size=n)]
    elif shape == "runs":
        unscaled = [int(x) for x in np.repeat(rng.integers(-(10**6), 10**6, size=n // 37 + 1), 37)[:n]]
    else:
        top = 10**p - 1
        # Python ints: the full precision, both signs, including the largest magnitudes.
        unscaled = [int.from_bytes(rng.bytes(33), "little") % (2 * top + 1) - top for _ in range(n)]
        if n >= 2:
            unscaled[0], unscaled[1] = top, -top
    ctx = decimal.Context(prec=100)
    return pa.array([Decimal(u).scaleb(-s, context=ctx) for u in unscaled], type=t)


def _variable(t: pa.DataType, n: int, rng: np.random.Generator, shape: str) -> List:
    is_text = pa.types.is_string(t) or pa.types.is_large_string(t)
    if shape == "long_256":
        lens = (256, 2000)
    elif shape == "huge_32k":
        lens = None
    else:
        lens = (0, 24)
    if shape == "huge_32k":
        # A mix of > 32 KiB compressible values and small ones.
        vals = []
        for i in range(n):
            if i % 3 == 0:
                k = int(rng.integers(32 * 1024 + 1, 80 * 1024))
                vals.append(("lance " * (k // 6 + 1))[:k] if is_text else bytes(rng.integers(0, 4, size=k, dtype=np.uint8)))
            else:
                vals.append(_random_strings(rng, 1, 0, 40, string.ascii_letters)[0])
        return vals if is_text else [v.encode() if isinstance(v, str) else v for v in vals]
    if shape == "non_ascii":
        vals = _random_strings(rng, n, 0, 30, NON_ASCII_ALPHABET)
    elif shape == "empty_strings":
        vals = [""] * n
        for i in range(0, n, 7):
            vals[i] = _random_strings(rng, 1, 1, 8, string.ascii_letters)[0]
    elif shape == "low_cardinality":
        pool = _random_strings(rng, 12, 3, 20, string.ascii_letters) + [""]
        vals = [pool[i] for i in rng.integers(0, len(pool), size=n)]
    elif shape == "text_fsst":
        vals = _text(rng, n)
    else:
        vals = _random_strings(rng, n, lens[0], lens[1], string.ascii_letters + string.digits + " é")
    if not is_text:
        return [v.encode() for v in vals]
    return vals


def _fixed_binary(t: pa.DataType, n: int, rng: np.random.Generator, shape: str) -> List[bytes]:
    w = t.byte_width
    if shape == "low_cardinality":
        pool = [bytes(rng.integers(0, 256, size=w, dtype=np.uint8)) for _ in range(7)]
        return [pool[i] for i in rng.integers(0, len(pool), size=n)]
    return [bytes(row) for row in rng.integers(0, 256, size=(n, w), dtype=np.uint8)]


def _vectors(t: pa.DataType, n: int, rng: np.random.Generator, shape: str) -> pa.Array:
    dim, item = t.list_size, t.value_type
    if pa.types.is_floating(item):
        flat = pa.array(_floats(item, n * dim, rng, "default"))
    else:
        flat = pa.array(_ints(item, n * dim, rng, "default"))
    if shape == "item_nulls" and n * dim > 0:
        mask = rng.random(n * dim) < 0.2
        flat = pa.array(flat.to_numpy(zero_copy_only=False), type=item, mask=mask)
    return pa.FixedSizeListArray.from_arrays(flat, type=t)


def _base_values(type_id: str, t: pa.DataType, n: int, rng: np.random.Generator, shape: str) -> pa.Array:
    """An array of ``n`` non-null values of type ``t`` in ``shape``."""
    if shape == "constant" and n > 0:
        one = _base_values(type_id, t, 1, rng, "no_nulls" if not pa.types.is_floating(t) else "default")
        return pa.concat_arrays([one] * n) if n < 64 else one.take(pa.array(np.zeros(n, dtype=np.int64)))
    if pa.types.is_null(t):
        return pa.nulls(n)
    if pa.types.is_boolean(t):
        if shape == "runs":
            return pa.array(np.repeat(rng.random(n // 50 + 1) < 0.5, 50)[:n])
        return pa.array(rng.random(n) < 0.5)
    if pa.types.is_integer(t):
        return pa.array(_ints(t, n, rng, shape), type=t)
    if pa.types.is_floating(t):
        return pa.array(_floats(t, n, rng, shape), type=t)
    if pa.types.is_temporal(t):
        return _temporal(t, n, rng, shape)
    if pa.types.is_decimal(t):
        return _decimals(t, n, rng, shape)
    if pa.types.is_fixed_size_binary(t):
        return pa.array(_fixed_binary(t, n, rng, shape), type=t)
    if pa.types.is_fixed_size_list(t):
        return _vectors(t, n, rng, shape)
    if pa.types.is_dictionary(t):
        card = min(100, max(1, n))
        pool_shape = {"non_ascii": "non_ascii", "empty_strings": "empty_strings", "long_256": "long_256"}.get(shape, "default")
        dictionary = pa.array(_variable(pa.string(), card, rng, pool_shape), type=t.value_type)
        hi = min(card, np.iinfo(t.index_type.to_pandas_dtype()).max + 1)
        indices = pa.array(rng.integers(0, hi, size=n), type=t.index_type)
        return pa.DictionaryArray.from_arrays(indices, dictionary)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.array(_variable(t, n, rng, shape), type=t)
    raise AssertionError(f"no generator for {t}")


def with_nulls(arr: pa.Array, mask: np.ndarray) -> pa.Array:
    """``arr`` (offset 0, no nulls) with the slots where ``mask`` is true set to null."""
    n = len(arr)
    assert len(mask) == n
    t = arr.type
    if pa.types.is_null(t) or not mask.any():
        return arr
    if pa.types.is_dictionary(t):
        return pa.DictionaryArray.from_arrays(with_nulls(arr.indices, mask), arr.dictionary)
    if pa.types.is_fixed_size_list(t):
        return pa.FixedSizeListArray.from_arrays(arr.values, type=t, mask=pa.array(mask))
    validity = pa.py_buffer(np.packbits(~mask, bitorder="little").tobytes())
    bufs = arr.buffers()
    if bufs[0] is not None:  # already had a validity bitmap: combine
        old = np.unpackbits(np.frombuffer(bufs[0], dtype=np.uint8), bitorder="little")[:n].astype(bool)
        validity = pa.py_buffer(np.packbits(old & ~mask, bitorder="little").tobytes())
    out = pa.Array.from_buffers(t, n, [validity] + bufs[1:], null_count=-1)
    out.validate(full=True)
    return out


def null_mask(n: int, rng: np.random.Generator, frac: float = 0.3) -> np.ndarray:
    mask = rng.random(n) < frac
    if n >= 3:
        mask[0] = True  # first and last rows null; second valid
        mask[1] = False
        mask[-1] = True
    return mask


def make_array(type_id: str, shape: str, rng: np.random.Generator, n: Optional[int] = None) -> pa.Array:
    """An array of ``TYPES[type_id]`` in ``shape`` (see ``shapes_for``)."""
    t = TYPES[type_id]
    if n is None:
        n = rows_for(t)
        if shape in ("long_256", "huge_32k"):
            n = 600 if shape == "long_256" else 60
    if shape == "zero_rows":
        return _base_values(type_id, t, 0, rng, "no_nulls")
    if shape == "one_row":
        return _base_values(type_id, t, 1, rng, "no_nulls")
    if shape == "all_nulls":
        return pa.nulls(n, type=t) if not pa.types.is_dictionary(t) else with_nulls(_base_values(type_id, t, n, rng, "no_nulls"), np.ones(n, bool))
    if shape == "sliced":
        # A slice with a non-zero offset (also of the validity bitmap), not a multiple of 8.
        full = make_array(type_id, "some_nulls", rng, n + 77)
        out = full.slice(13, n)
        assert out.offset == 13
        return out
    if shape == "some_nulls":
        base = _base_values(type_id, t, n, rng, "default")
        return with_nulls(base, null_mask(n, rng))
    if shape == "constant_nulls":
        return with_nulls(_base_values(type_id, t, n, rng, "constant"), null_mask(n, rng))
    base = _base_values(type_id, t, n, rng, shape)
    if shape == "multi_page":
        return with_nulls(base, null_mask(n, rng, 0.1))
    return base


def table_of(arr: pa.Array, name: str = "v") -> pa.Table:
    return pa.table({name: arr})


# --------------------------------------------------------------------------------------------
# Exact comparison
# --------------------------------------------------------------------------------------------

_UINT_OF_WIDTH = {16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}


def canonical(arr) -> List[pa.Array]:
    """Arrays whose ``equals`` is *exact* equality of ``arr``'s logical values.

    Floats are compared by their bits (NaN payloads, -0.0), dictionaries by decoded values,
    fixed-size lists by their validity plus their flattened items.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], type=arr.type)
    t = arr.type
    if pa.types.is_dictionary(t):
        return canonical(arr.dictionary_decode())
    if pa.types.is_floating(t):
        return [arr.view(_UINT_OF_WIDTH[t.bit_width])]
    if pa.types.is_temporal(t):
        # As integers: exact, and printable even outside Python's date range.
        return [arr.view(pa.int32() if t.bit_width == 32 else pa.int64())]
    if pa.types.is_fixed_size_list(t):
        return [arr.is_valid()] + canonical(arr.flatten())
    return [arr]


def _first_difference(a: pa.Array, b: pa.Array) -> str:
    la, lb = a.to_pylist(), b.to_pylist()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            xs, ys = repr(x), repr(y)
            return f"first difference at row {i}: expected {xs[:200]}, got {ys[:200]}"
    return f"lengths {len(la)} vs {len(lb)}"


def assert_arrays_equal(expected, actual, what: str = "") -> None:
    if isinstance(expected, pa.ChunkedArray):
        exp_type = expected.type
    else:
        exp_type = expected.type
    assert actual.type == exp_type, f"{what}: type {actual.type} != expected {exp_type}"
    assert len(actual) == len(expected), f"{what}: {len(actual)} rows, expected {len(expected)}"
    for e, a in zip(canonical(expected), canonical(actual)):
        if not a.equals(e):
            raise AssertionError(f"{what}: values differ; {_first_difference(e, a)}")
    assert actual.null_count == expected.null_count, f"{what}: {actual.null_count} nulls, expected {expected.null_count}"


def assert_tables_equal(expected: pa.Table, actual: pa.Table, what: str = "") -> None:
    """Exact equality of two tables' columns (names, types, nulls, values)."""
    assert actual.column_names == expected.column_names, f"{what}: columns {actual.column_names} != {expected.column_names}"
    assert actual.num_rows == expected.num_rows, f"{what}: {actual.num_rows} rows, expected {expected.num_rows}"
    for name in expected.column_names:
        assert_arrays_equal(expected.column(name), actual.column(name), f"{what} column {name!r}")


def take_expected(table: pa.Table, indices: Sequence[int]) -> pa.Table:
    return table.take(pa.array(list(indices), type=pa.int64()))


def take_indices(n: int, rng: np.random.Generator) -> List[int]:
    """Unsorted, repeated row indices touching every chunk / page edge that exists."""
    if n == 0:
        return []
    edges = [r for r in EDGE_ROWS if r < n] + [n - 1, n - 2 if n > 1 else 0, n // 2]
    rand = rng.integers(0, n, size=min(50, n)).tolist()
    idx = edges + rand + [edges[0], n - 1, edges[len(edges) // 2]]  # repeats
    rng.shuffle(idx)
    return [int(i) for i in idx]


def range_cases(n: int) -> List[tuple]:
    """(start, count) pairs: whole, interior, across chunk edges, single rows, empty."""
    cases = {(0, n), (n, 0), (0, 0)}
    if n:
        cases |= {(0, 1), (n - 1, 1), (n // 3, n - n // 3), (1, max(0, n - 2))}
    for e in (1023, 1024, 4095, 4096):
        if e < n:
            cases.add((e - 1, min(3, n - e + 1)))
            cases.add((max(0, e - 600), min(1200, n - max(0, e - 600))))
    return sorted(cases)


# --------------------------------------------------------------------------------------------
# Writing and reading with both implementations
# --------------------------------------------------------------------------------------------


def batches_of(table: pa.Table, sizes: Iterable[int]) -> List[pa.Table]:
    out, start = [], 0
    for s in sizes:
        if start >= table.num_rows:
            break
        out.append(table.slice(start, s))
        start += s
    if start < table.num_rows:
        out.append(table.slice(start))
    return out


def write_lancepy(path, table: pa.Table, version: str, *, max_page_bytes: Optional[int] = None, batch_sizes=None) -> None:
    from lancepy.file import LanceFileWriter

    kwargs = {"version": version}
    if max_page_bytes is not None:
        kwargs["max_page_bytes"] = max_page_bytes
    with LanceFileWriter(str(path), table.schema, **kwargs) as w:
        for part in batches_of(table, batch_sizes) if batch_sizes else [table]:
            w.write_batch(part)


def write_pylance(lance_file, path, table: pa.Table, version: str, *, max_page_bytes: Optional[int] = None, batch_sizes=None) -> None:
    kwargs = {"version": version}
    if max_page_bytes is not None:
        kwargs["max_page_bytes"] = max_page_bytes
    w = lance_file.LanceFileWriter(str(path), table.schema, **kwargs)
    for part in batches_of(table, batch_sizes) if batch_sizes else [table]:
        w.write_batch(part)
    w.close()


def read_pylance(lance_file, path) -> pa.Table:
    return lance_file.LanceFileReader(str(path)).read_all().to_table()


def run_isolated(code: str, timeout: float = 600) -> "subprocess.CompletedProcess":
    """Runs Python ``code`` in a fresh interpreter (crash-safety checks: a segfault or abort
    there fails the calling test instead of killing pytest)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)


# --------------------------------------------------------------------------------------------
# Where the suite's time goes (CI is kept well under 30 minutes)
# --------------------------------------------------------------------------------------------


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 - pytest's hook signature
    """Prints the test files that took longest (setup, call and teardown summed), so that each
    CI log says where the suite's minutes go."""
    per_file: Dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for r in reports:
            if hasattr(r, "duration") and hasattr(r, "nodeid"):
                f = r.nodeid.split("::", 1)[0]
                per_file[f] = per_file.get(f, 0.0) + r.duration
    if len(per_file) < 2:
        return
    total = sum(per_file.values())
    top = sorted(per_file.items(), key=lambda kv: -kv[1])[:15]
    terminalreporter.write_sep("-", f"slowest test files ({total / 60:.1f} min in tests)")
    for f, s in top:
        terminalreporter.write_line(f"{s:8.1f} s  {f}")
