"""Typed values and DataFusion's type rules: :class:`_V` (a translated sub-expression with its
Arrow type), type predicates, integer ranges, the common type of two numeric / timestamp types,
the type a comparison is made in, and :func:`_call` (a compute call, folded when constant).
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancepy.exceptions import InvalidArgumentError, NotSupportedError


class _V:
    """A translated sub-expression: its Arrow expression and type.

    ``kind`` is ``"column"`` for a column reference, ``"literal"`` for a SQL literal (what
    pylance coerces to a facing column's type), ``"expr"`` otherwise; ``const`` holds the value
    (a ``pa.Scalar``) when the expression is constant; ``uncast`` the integer expression a
    ``CAST`` between integer types was applied to (comparisons look through it, as
    DataFusion's unwrap-cast does); ``regexp`` marks ``regexp_match`` (a list that is
    ``NULL`` where nothing matches), usable only as a condition.
    """

    __slots__ = ("expr", "type", "kind", "const", "uncast", "urange", "regexp")

    def __init__(self, expr: Any, type: pa.DataType, kind: str = "expr", const: Optional[pa.Scalar] = None,
                 uncast: Optional["_V"] = None, regexp: bool = False) -> None:
        self.expr = expr
        self.type = type
        self.kind = kind
        self.const = const
        self.uncast = uncast
        self.urange: Optional[Tuple[int, int]] = None  # values every cast down to `uncast` keeps
        self.regexp = regexp

    def unwrap(self, n: int) -> Optional["_V"]:
        """The uncast integer expression, if constant `n` survives every cast in between."""
        if self.uncast is None or self.urange is None:
            return None
        lo, hi = self.urange
        return self.uncast if lo <= n <= hi and _fits(n, self.type) else None


def _const(value: pa.Scalar, kind: str = "expr") -> _V:
    if pa.types.is_null(value.type):
        return _V(pc.scalar(None), value.type, kind, value)
    return _V(pc.scalar(value), value.type, kind, value)


def _null_scalar() -> pa.Scalar:
    """The null literal (made on use: creating a scalar imports pandas, which `import lancepy`
    should not)."""
    return pa.scalar(None, pa.null())


def _null_bool() -> _V:
    return _const(pa.scalar(None, pa.bool_()))


def _is_null_type(t: pa.DataType) -> bool:
    return pa.types.is_null(t)


def _is_int(t: pa.DataType) -> bool:
    return pa.types.is_integer(t)


def _is_float(t: pa.DataType) -> bool:
    return pa.types.is_floating(t)


def _is_num(t: pa.DataType) -> bool:
    return _is_int(t) or _is_float(t)


def _is_str(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_bin(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


def _is_temporal(t: pa.DataType) -> bool:
    return pa.types.is_date(t) or pa.types.is_timestamp(t)


_INT_RANGE = {}
for _t in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()):
    _info = np.iinfo(np.dtype(str(_t)))
    _INT_RANGE[_t] = (int(_info.min), int(_info.max))


def _fits(v: int, t: pa.DataType) -> bool:
    lo, hi = _INT_RANGE[t]
    return lo <= v <= hi


class _MixedUnsigned(NotSupportedError):
    """A signed integer meets a UInt64: DataFusion works in DECIMAL; comparisons are exact here."""


def _int_type(signed: bool, bits: int) -> pa.DataType:
    return {(True, 8): pa.int8(), (True, 16): pa.int16(), (True, 32): pa.int32(), (True, 64): pa.int64(),
            (False, 8): pa.uint8(), (False, 16): pa.uint16(), (False, 32): pa.uint32(), (False, 64): pa.uint64()}[(signed, bits)]


def _num_common(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """DataFusion's common type of two numeric types."""
    if a == b:
        return a
    if _is_float(a) or _is_float(b):
        if pa.float64() in (a, b):
            return pa.float64()
        if pa.float32() in (a, b):
            return pa.float32()
        return pa.float16()
    sa, sb = pa.types.is_signed_integer(a), pa.types.is_signed_integer(b)
    wa, wb = a.bit_width, b.bit_width
    if sa == sb:
        return _int_type(sa, max(wa, wb))
    signed_w, unsigned_w = (wa, wb) if sa else (wb, wa)
    need = max(signed_w, unsigned_w * 2)
    if need > 64:
        raise _MixedUnsigned(f"filters: combining {a} with {b} (a DECIMAL in pylance) is not supported")
    return _int_type(True, need)


def _ts_common(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    units = ["s", "ms", "us", "ns"]
    unit = a.unit if units.index(a.unit) >= units.index(b.unit) else b.unit
    tz = a.tz or b.tz
    for z in (a.tz, b.tz):
        if z is not None and z not in _UTC_NAMES:
            raise NotSupportedError(f"filters: timestamps in time zone {z!r} (only UTC) are not supported")
    return pa.timestamp(unit, tz=tz)


_UTC_NAMES = ("UTC", "utc", "+00:00", "Z", "Etc/UTC", "GMT")


#: Decimal digits any value of an integer type has at most.
_INT_DIGITS = {8: 3, 16: 5, 32: 10, 64: 19}


def _decimal_common(a: pa.DataType, b: pa.DataType, what: str) -> pa.DataType:
    """A decimal type holding every value of `a` and `b` exactly (a decimal with a decimal, an
    integer or a string, which is read as a decimal of the other side's type)."""
    if _is_str(a) or _is_str(b):
        return a if pa.types.is_decimal(a) else b

    def digits(t: pa.DataType) -> Tuple[int, int]:  # (integer digits, scale)
        if pa.types.is_decimal(t):
            return t.precision - t.scale, t.scale
        if _is_int(t):
            return _INT_DIGITS[t.bit_width] + (1 if pa.types.is_uint64(t) else 0), 0
        raise InvalidArgumentError(f"filters: cannot compare {a} with {b} in {what} (decimals meet integers and decimals)")

    (ia, sa), (ib, sb) = digits(a), digits(b)
    scale = max(sa, sb)
    precision = max(ia, ib) + scale
    if precision > 76:
        raise NotSupportedError(f"filters: comparing {a} with {b} needs more than 76 digits (in {what})")
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


def _comparison_type(a: pa.DataType, b: pa.DataType, what: str) -> pa.DataType:
    """The type two sides of a comparison (or IN / BETWEEN) are compared in."""
    if a == b:
        return a
    if _is_null_type(a):
        return b
    if _is_null_type(b):
        return a
    if pa.types.is_decimal(a) or pa.types.is_decimal(b):
        return _decimal_common(a, b, what)
    if _is_num(a) and _is_num(b):
        return _num_common(a, b)
    if _is_str(a) and _is_str(b):
        return pa.large_string() if pa.types.is_large_string(a) or pa.types.is_large_string(b) else pa.string()
    if _is_num(a) and _is_str(b):
        return a
    if _is_str(a) and _is_num(b):
        return b
    if _is_temporal(a) and _is_str(b):
        return a
    if _is_str(a) and _is_temporal(b):
        return b
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b):
        return _ts_common(a, b)
    if pa.types.is_timestamp(a) and pa.types.is_date(b):
        return a
    if pa.types.is_date(a) and pa.types.is_timestamp(b):
        return b
    if pa.types.is_date(a) and pa.types.is_date(b):
        return pa.date32()
    if pa.types.is_date32(a) and pa.types.is_signed_integer(b) or pa.types.is_signed_integer(a) and pa.types.is_date32(b):
        return pa.int64()  # a date is its count of days (pylance unwraps the cast to DATE)
    if (_is_bin(a) or _is_str(a)) and (_is_bin(b) or _is_str(b)):
        return pa.binary()  # a string meeting bytes is compared as its UTF-8 bytes
    for x in (a, b):
        if not (_is_num(x) or _is_str(x) or _is_bin(x) or _is_temporal(x) or pa.types.is_boolean(x)):
            raise NotSupportedError(f"filters: comparing {x} values is not supported (in {what})")
    raise InvalidArgumentError(f"filters: cannot compare {a} with {b} in {what}")


def _coalesce_false(e: Any) -> Any:
    return pc.Expression._call("coalesce", [e, pc.scalar(False)])


def _call(name: str, args: List[_V], out_type: pa.DataType, options: Any = None) -> _V:
    """`name`(args) as an expression, or folded now when every argument is constant."""
    if all(a.const is not None for a in args):
        try:
            scalars = [a.const for a in args]
            if any(not s.is_valid for s in scalars) and name not in ("and_kleene", "or_kleene", "is_null", "is_valid", "coalesce"):
                return _const(pa.scalar(None, out_type))
            res = pc.call_function(name, [pa.array([s.as_py()], s.type) for s in scalars], options)
            if isinstance(res, pa.ChunkedArray):
                res = res.combine_chunks()
            value = res[0] if isinstance(res, pa.Array) else res
            if value.type != out_type:
                value = value.cast(out_type)
            return _const(value)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ZeroDivisionError) as e:
            raise InvalidArgumentError(f"filters: cannot evaluate constant {name}: {e}") from None
    return _V(pc.Expression._call(name, [a.expr for a in args], options), out_type)
