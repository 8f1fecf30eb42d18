"""Compute functions Arrow lacks, written with numpy and registered once per process as Arrow
scalar UDFs: IEEE-754 total-order comparisons, ``fmod``, truncating integer ``%``, Unicode
``upper``/``lower`` and ``array_has``. The translator calls them by the names returned here.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Set

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_UDF_LOCK = threading.Lock()
_UDFS: Set[str] = set()


def _validity(a: Any, n: int) -> np.ndarray:
    if isinstance(a, pa.Scalar):
        return np.full(n, a.is_valid, dtype=bool)
    if a.null_count == 0:
        return np.ones(len(a), dtype=bool)
    return np.asarray(pc.is_valid(a).to_numpy(zero_copy_only=False), dtype=bool)


def _values(a: Any, n: int, dtype: Any) -> np.ndarray:
    """`a`'s values as a numpy array of `n` (nulls become zeros)."""
    if isinstance(a, pa.Scalar):
        v = a.as_py() if a.is_valid else 0
        if isinstance(v, float) and dtype is not None and np.dtype(dtype).kind in "iu":
            v = 0
        return np.full(n, v, dtype=dtype)
    if a.null_count:
        a = pc.fill_null(a, pa.scalar(0, a.type))
    return np.asarray(a.to_numpy(zero_copy_only=False), dtype=dtype)


def _float_values(a: Any, n: int) -> np.ndarray:
    if isinstance(a, pa.Scalar):
        v = a.as_py() if a.is_valid else 0.0
        return np.full(n, v, dtype=np.float64)
    return np.asarray(a.to_numpy(zero_copy_only=False), dtype=np.float64)


def _total_key(x: np.ndarray) -> np.ndarray:
    """Integers ordered as IEEE-754 totalOrder orders the doubles `x` (Rust's total_cmp)."""
    bits = x.view(np.int64)
    return bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))


_TOTAL_OPS: Dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
}


def _register(name: str, fn: Callable, in_types: Dict[str, pa.DataType], out_type: pa.DataType) -> str:
    with _UDF_LOCK:
        if name in _UDFS:
            return name
        try:
            pc.register_scalar_function(fn, name, {"summary": name, "description": "lancepy filter function"}, in_types, out_type)
        except pa.ArrowKeyError:  # already registered in this process (module reloaded)
            pass
        _UDFS.add(name)
    return name


_SWAPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def _total_cmp_constant(op: str, a: pa.Array, c: float) -> pa.Array:
    """`a <op> c` in total order, for a constant `c` that is neither NaN nor zero: IEEE
    comparison agrees with total order there except at NaNs (IEEE: unordered; total order:
    a NaN with the sign bit clear above every number, one with it set below), which are
    mended afterwards. One pass over the values and one over the NaN test, where the key
    transform takes five, and no array is made of the constant."""
    x = np.asarray(a.to_numpy(zero_copy_only=False), dtype=np.float64)
    out = _TOTAL_OPS[op](x, c)
    nan = np.isnan(x)
    if op not in ("eq", "ne") and nan.any():
        above = ~np.signbit(x[nan])
        out[nan] = above if op in ("gt", "ge") else ~above
    mask = None if a.null_count == 0 else ~_validity(a, len(a))
    return pa.array(out, type=pa.bool_(), mask=mask)


def _usable_constant(s: Any) -> bool:
    """Whether scalar `s` is a constant :func:`_total_cmp_constant` handles."""
    if not isinstance(s, pa.Scalar) or not s.is_valid:
        return False
    c = s.as_py()
    return c == c and c != 0.0


def _udf_total_cmp(op: str) -> str:
    cmp = _TOTAL_OPS[op]

    def fn(ctx: Any, a: Any, b: Any) -> pa.Array:
        n = ctx.batch_length
        if not isinstance(a, pa.Scalar) and _usable_constant(b):
            return _total_cmp_constant(op, a, b.as_py())
        if not isinstance(b, pa.Scalar) and _usable_constant(a):
            return _total_cmp_constant(_SWAPPED[op], b, a.as_py())
        valid = _validity(a, n) & _validity(b, n)
        out = cmp(_total_key(_float_values(a, n)), _total_key(_float_values(b, n)))
        return pa.array(out, type=pa.bool_(), mask=~valid)

    return _register(f"lancepy_total_{op}", fn, {"a": pa.float64(), "b": pa.float64()}, pa.bool_())


def _udf_fmod() -> str:
    def fn(ctx: Any, a: Any, b: Any) -> pa.Array:
        n = ctx.batch_length
        valid = _validity(a, n) & _validity(b, n)
        with np.errstate(all="ignore"):
            out = np.fmod(_float_values(a, n), _float_values(b, n))
        return pa.array(out, type=pa.float64(), mask=~valid)

    return _register("lancepy_fmod", fn, {"a": pa.float64(), "b": pa.float64()}, pa.float64())


def _udf_int_mod(t: pa.DataType) -> str:
    dtype = np.dtype(t.to_pandas_dtype())

    def fn(ctx: Any, a: Any, b: Any) -> pa.Array:
        n = ctx.batch_length
        valid = _validity(a, n) & _validity(b, n)
        x, y = _values(a, n, dtype), _values(b, n, dtype)
        if np.any((y == 0) & valid):
            raise pa.ArrowInvalid("divide by zero")
        y = np.where(valid & (y != 0), y, 1).astype(dtype)
        with np.errstate(all="ignore"):
            out = np.fmod(x, y)  # truncated remainder (C / Rust %); MIN % -1 is 0
        return pa.array(out, type=t, mask=~valid)

    return _register(f"lancepy_mod_{t}", fn, {"a": t, "b": t}, t)


def _udf_case(upper: bool) -> str:
    def fn(ctx: Any, a: Any) -> pa.Array:
        if isinstance(a, pa.Scalar):
            v = a.as_py()
            return pa.array([None if v is None else (v.upper() if upper else v.lower())] * ctx.batch_length, pa.string())
        return pa.array([None if v is None else (v.upper() if upper else v.lower()) for v in a.to_pylist()], pa.string())

    # Python's str.upper/lower map case as Rust's to_uppercase/to_lowercase do (full mappings:
    # 'ß' → 'SS'; a final sigma lowers to 'ς'), where Arrow's utf8_upper maps one to one.
    return _register("lancepy_upper" if upper else "lancepy_lower", fn, {"a": pa.string()}, pa.string())


def _udf_array_has(list_type: pa.DataType) -> str:
    value_type = list_type.value_type

    def fn(ctx: Any, lists: Any, needle: Any) -> pa.Array:
        n = ctx.batch_length
        if isinstance(lists, pa.Scalar):
            lists = pa.array([lists.as_py()] * n, list_type)
        valid = _validity(lists, n) & _validity(needle, n)
        out = np.zeros(n, dtype=bool)
        flat = pc.list_flatten(lists)
        if len(flat):
            parents = np.asarray(pc.list_parent_indices(lists).to_numpy(zero_copy_only=False))
            if isinstance(needle, pa.Scalar):
                hit = pc.equal(flat, needle)
            else:
                hit = pc.equal(flat, pc.take(needle, pa.array(parents)))
            hit = np.asarray(pc.fill_null(hit, False).to_numpy(zero_copy_only=False), dtype=bool)
            out[parents[hit]] = True
        return pa.array(out, type=pa.bool_(), mask=~valid)

    return _register(f"lancepy_array_has_{list_type}", fn, {"l": list_type, "v": value_type}, pa.bool_())


def _udf_array_has_set(list_type: pa.DataType, every: bool) -> str:
    """``array_has_any`` / ``array_has_all`` (`every`) of a list column and a constant list, as
    pylance evaluates them: a NULL list is NULL, an empty constant list gives false (any) or
    true (all) on every row, NULL elements match NULL elements, repeats count once."""

    def fn(ctx: Any, lists: Any, wanted: Any) -> pa.Array:
        n = ctx.batch_length
        values = wanted.as_py() if wanted.is_valid else []
        if not values:
            return pa.array(np.full(n, every, dtype=bool), type=pa.bool_())
        if isinstance(lists, pa.Scalar):
            lists = pa.array([lists.as_py()] * n, list_type)
        valid = _validity(lists, n)
        flat = pc.list_flatten(lists)
        parents = np.asarray(pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)) if len(flat) else None
        distinct = list(dict.fromkeys(v for v in values if v is not None))
        out = np.full(n, every, dtype=bool)
        for v in distinct + ([None] if None in values else []):
            found = np.zeros(n, dtype=bool)
            if parents is not None:
                hit = pc.is_null(flat) if v is None else pc.fill_null(pc.equal(flat, pa.scalar(v, flat.type)), False)
                found[parents[np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool)]] = True
            out = (out & found) if every else (out | found)
        return pa.array(out, type=pa.bool_(), mask=~valid)

    kind = "all" if every else "any"
    return _register(f"lancepy_array_has_{kind}_{list_type}", fn, {"l": list_type, "w": list_type}, pa.bool_())


# JSON functions: the result type of each, as pylance registers them.
JSON_FUNCTIONS: Dict[str, pa.DataType] = {
    "json_extract": pa.string(),
    "json_exists": pa.bool_(),
    "json_get": pa.large_binary(),
    "json_get_string": pa.string(),
    "json_get_int": pa.int64(),
    "json_get_float": pa.float64(),
    "json_get_bool": pa.bool_(),
    "json_array_contains": pa.bool_(),
    "json_array_length": pa.int64(),
}


def _udf_json(name: str, values_type: pa.DataType, n_args: int) -> str:
    """JSON function `name` over values of `values_type` (JSON text, or JSONB from
    ``json_get``) and `n_args` constant string arguments, evaluated natively."""
    from lancepy import _lancepy

    out_type = JSON_FUNCTIONS[name]

    def fn(ctx: Any, values: Any, *args: Any) -> pa.Array:
        n = ctx.batch_length
        if isinstance(values, pa.Scalar):
            values = pa.array([values.as_py()] * n, values_type)
        consts = [a.as_py() if isinstance(a, pa.Scalar) else None for a in args]
        if any(c is None for c in consts):  # a NULL argument: NULL
            return pa.nulls(n, out_type)
        out = pa.table(_lancepy.json_function(name, values, consts)).column(0)
        return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out

    in_types = {"values": values_type, **{f"a{i}": pa.string() for i in range(n_args)}}
    return _register(f"lancepy_{name}_{values_type}", fn, in_types, out_type)
