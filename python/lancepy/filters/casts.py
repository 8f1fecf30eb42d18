"""Coercion and CAST: literals typed as a facing column (pylance's safe_coerce_scalar), date and
timestamp text, SQL CAST of constants (as arrow-rs casts) and of expressions, SQL type names.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancepy.exceptions import InvalidArgumentError, NotSupportedError
from lancepy.filters.typed import (
    _INT_DIGITS,
    _INT_RANGE,
    _UTC_NAMES,
    _V,
    _const,
    _fits,
    _is_bin,
    _is_float,
    _is_int,
    _is_null_type,
    _is_num,
    _is_str,
    _ts_common,
)

# -- literal coercion (pylance's safe_coerce_scalar) ------------------------------------------


def _coerce_literal(v: _V, t: pa.DataType) -> Optional[_V]:
    """`v` (a SQL literal) as a literal of column type `t`, or None where pylance refuses."""
    s = v.const
    assert s is not None
    st = s.type
    if _is_null_type(st):
        return v
    if st == t:
        return v
    value = s.as_py()
    if pa.types.is_integer(st):
        if _is_int(t):
            return _const(pa.scalar(value, t), "literal") if _fits(value, t) else None
        if _is_float(t):
            return _const(pa.scalar(_to_float(value, t), t), "literal")
        return None
    if pa.types.is_floating(st):
        if _is_float(t):
            return _const(pa.scalar(_to_float(value, t), t), "literal")
        return None
    if _is_str(st):
        if _is_str(t):
            return _const(pa.scalar(value, t), "literal")
        return None
    if pa.types.is_boolean(st):
        return v if pa.types.is_boolean(t) else None
    if _is_bin(st):
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            return _const(pa.scalar(value, t), "literal")
        if pa.types.is_fixed_size_binary(t) and len(value) == t.byte_width:
            return _const(pa.scalar(value, t), "literal")
        return None
    return None


def _to_float(value: Any, t: pa.DataType) -> float:
    with np.errstate(over="ignore"):  # beyond FLOAT's range is infinity, as `as f32` gives
        if t == pa.float32():
            return float(np.float32(value))
        if t == pa.float16():
            return float(np.float16(value))
    return float(value)


# -- casts ----------------------------------------------------------------------------------

_INT_TEXT = re.compile(r"^[+-]?[0-9]+$")
_FLOAT_TEXT = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)$", re.I)
_DATE_TEXT = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$")
_TS_TEXT = re.compile(
    r"^([0-9]{4})-([0-9]{2})-([0-9]{2})"
    r"(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?)?"
    r"\s*(Z|z|[+-][0-9]{2}(?::?[0-9]{2})?)?$"
)
_UNIT_PER_SECOND = {"s": 1, "ms": 1000, "us": 1000000, "ns": 1000000000}
_EPOCH = datetime.date(1970, 1, 1)


def _parse_date(text: str) -> int:
    m = _DATE_TEXT.match(text.strip())
    if not m:
        raise NotSupportedError(f"filters: the date {text!r} (only YYYY-MM-DD) is not supported")
    try:
        d = datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        raise InvalidArgumentError(f"filters: {text!r} is not a date") from None
    return (d - _EPOCH).days


def _parse_timestamp(text: str, unit: str) -> int:
    """`text` as a count of `unit` since the epoch, in UTC (an offset in the text is applied)."""
    m = _TS_TEXT.match(text.strip())
    if not m:
        raise NotSupportedError(f"filters: the timestamp {text!r} (YYYY-MM-DD[ HH:MM[:SS[.f]]][offset]) is not supported")
    y, mo, d, hh, mi, ss, frac, off = m.groups()
    if off and hh is None:
        raise NotSupportedError(f"filters: the timestamp {text!r} is not supported")
    try:
        days = (datetime.date(int(y), int(mo), int(d)) - _EPOCH).days
    except ValueError:
        raise InvalidArgumentError(f"filters: {text!r} is not a timestamp") from None
    h, mnt, sec = int(hh or 0), int(mi or 0), int(ss or 0)
    if h > 23 or mnt > 59 or sec > 59:
        raise InvalidArgumentError(f"filters: {text!r} is not a timestamp")
    seconds = days * 86400 + h * 3600 + mnt * 60 + sec
    nanos = int((frac or "").ljust(9, "0")) if frac else 0
    if off and off not in ("Z", "z"):
        sign = 1 if off[0] == "+" else -1
        digits = off[1:].replace(":", "")
        oh, om = int(digits[:2]), int(digits[2:4] or 0)
        seconds -= sign * (oh * 3600 + om * 60)
    per = _UNIT_PER_SECOND[unit]
    sub = nanos * per // 1_000_000_000
    if (nanos * per) % 1_000_000_000:
        raise NotSupportedError(f"filters: the timestamp {text!r} has more precision than {unit}")
    return seconds * per + sub


def _cast_scalar(s: pa.Scalar, t: pa.DataType, what: str) -> pa.Scalar:
    """SQL CAST of a constant, as arrow-rs casts (failures are errors)."""
    st = s.type
    if st == t:
        return s
    if not s.is_valid:
        return pa.scalar(None, t)
    v = s.as_py()

    def fail() -> Any:
        raise InvalidArgumentError(f"filters: cannot cast {v!r} ({st}) to {t} in {what}")

    if pa.types.is_decimal(t):
        return _decimal_scalar(v, st, t, fail)
    if _is_str(st):
        if _is_int(t):
            if not _INT_TEXT.match(v):
                fail()
            n = int(v)
            return pa.scalar(n, t) if _fits(n, t) else fail()
        if _is_float(t):
            if not _FLOAT_TEXT.match(v):
                fail()
            return pa.scalar(_to_float(float(v), t), t)
        if pa.types.is_date32(t):
            return pa.scalar(_parse_date(v), pa.int32()).cast(t)
        if pa.types.is_timestamp(t):
            return pa.scalar(_parse_timestamp(v, t.unit), pa.int64()).cast(pa.timestamp(t.unit)).cast(t)
        if _is_str(t):
            return pa.scalar(v, t)
        if pa.types.is_binary(t):
            return pa.scalar(v.encode(), t)
        if pa.types.is_boolean(t):
            low = v.lower()
            if low in ("true", "false"):
                return pa.scalar(low == "true", t)
            raise NotSupportedError(f"filters: casting the string {v!r} to BOOLEAN is not supported")
        fail()
    if _is_int(st) or pa.types.is_boolean(st):
        n = int(v)
        if _is_int(t):
            return pa.scalar(n, t) if _fits(n, t) else fail()
        if _is_float(t):
            return pa.scalar(_to_float(n, t), t)
        if pa.types.is_boolean(t):
            return pa.scalar(n != 0, t)
        if _is_str(t):
            return pa.scalar(("true" if v else "false") if pa.types.is_boolean(st) else str(n), t)
        if pa.types.is_date32(t) and pa.types.is_signed_integer(st):
            return pa.scalar(n, pa.int32()).cast(t) if _fits(n, pa.int32()) else fail()
        fail()
    if _is_float(st):
        if _is_float(t):
            return pa.scalar(_to_float(v, t), t)
        if _is_int(t):
            if v != v or v in (float("inf"), float("-inf")):
                fail()
            n = int(v)
            return pa.scalar(n, t) if _fits(n, t) else fail()
        if pa.types.is_boolean(t):
            return pa.scalar(v != 0, t)
        raise NotSupportedError(f"filters: casting a {st} constant to {t} is not supported")
    if pa.types.is_date(st):
        days = s.cast(pa.int32()).as_py() if pa.types.is_date32(st) else s.cast(pa.int64()).as_py() // 86400000
        if pa.types.is_signed_integer(t) and pa.types.is_date32(st):
            return pa.scalar(days, t) if _fits(days, t) else fail()
        if pa.types.is_date32(t):
            return pa.scalar(days, pa.int32()).cast(t)
        if pa.types.is_timestamp(t):
            return pa.scalar(days * 86400 * _UNIT_PER_SECOND[t.unit], pa.int64()).cast(pa.timestamp(t.unit)).cast(t)
        if _is_str(t):
            return pa.scalar(v.isoformat(), t)
        fail()
    if pa.types.is_timestamp(st):
        ticks = s.cast(pa.int64()).as_py()
        if pa.types.is_timestamp(t):
            _ts_common(st, t)
            a, b = _UNIT_PER_SECOND[st.unit], _UNIT_PER_SECOND[t.unit]
            if b >= a:
                return pa.scalar(ticks * (b // a), pa.int64()).cast(pa.timestamp(t.unit)).cast(t)
            if ticks % (a // b):
                raise NotSupportedError("filters: casting a timestamp to a coarser unit is not supported")
            return pa.scalar(ticks // (a // b), pa.int64()).cast(pa.timestamp(t.unit)).cast(t)
        if pa.types.is_date32(t):
            if st.tz is not None and st.tz not in _UTC_NAMES:
                raise NotSupportedError(f"filters: timestamps in time zone {st.tz!r} are not supported")
            return pa.scalar(ticks // (86400 * _UNIT_PER_SECOND[st.unit]), pa.int32()).cast(t)
        raise NotSupportedError(f"filters: casting a timestamp constant to {t} is not supported")
    if _is_bin(st) and (_is_bin(t)):
        return pa.scalar(v, t)
    raise NotSupportedError(f"filters: casting a {st} constant to {t} is not supported")


def _cast(v: _V, t: pa.DataType, what: str) -> _V:
    """SQL CAST of a translated value (constants are cast now)."""
    if v.type == t:
        return v
    if v.const is not None:
        return _const(_cast_scalar(v.const, t, what))
    st = v.type
    e = v.expr
    if _is_null_type(st):
        return _const(pa.scalar(None, t))
    if _is_float(st) and _is_int(t):
        # Truncates toward zero; NaN, infinities and out-of-range values are errors.
        return _V(pc.trunc(e).cast(t), t)
    if _is_int(st) and _is_float(t):
        return _V(e.cast(t, safe=False), t)
    if _is_float(st) and _is_float(t):
        return _V(e.cast(t, safe=False), t)
    if (_is_int(st) or pa.types.is_boolean(st)) and (_is_int(t) or pa.types.is_boolean(t)):
        out = _V(e.cast(t), t)
        if _is_int(st) and _is_int(t):
            out.uncast = v.uncast or v
            lo, hi = v.urange or (-(2**64), 2**64)
            slo, shi = _INT_RANGE[st]
            out.urange = (max(lo, slo), min(hi, shi))
        return out
    if pa.types.is_boolean(st) and _is_float(t):
        return _V(e.cast(t), t)
    if _is_float(st) and pa.types.is_boolean(t):
        return _V(pc.not_equal(e, pc.scalar(0.0)), t)
    if (_is_int(st) or pa.types.is_date32(st) or _is_str(st)) and _is_str(t):
        return _V(e.cast(t), t)
    if pa.types.is_boolean(st) and _is_str(t):
        return _V(e.cast(t), t)
    if _is_str(st) and (_is_num(t) or _is_bin(t) or pa.types.is_date32(t)):
        return _V(e.cast(t), t)
    if pa.types.is_date(st) and pa.types.is_timestamp(t):
        if t.tz is not None:
            _ts_common(t, t)
            return _V(e.cast(pa.timestamp(t.unit)).cast(t), t)
        return _V(e.cast(t), t)
    if pa.types.is_timestamp(st) and pa.types.is_timestamp(t):
        common = _ts_common(st, t)
        a, b = _UNIT_PER_SECOND[st.unit], _UNIT_PER_SECOND[t.unit]
        if b < a:
            raise NotSupportedError("filters: casting timestamps to a coarser unit is not supported")
        if st.tz is not None and t.tz is None:
            e = e.cast(pa.timestamp(st.unit))
        elif st.tz is None and t.tz is not None:
            e = e.cast(pa.timestamp(st.unit, tz=common.tz))
        return _V(e.cast(t), t)
    if pa.types.is_timestamp(st) and pa.types.is_date32(t):
        if st.tz is not None:
            _ts_common(st, st)
        return _V(e.cast(t), t)
    if pa.types.is_date(st) and pa.types.is_date(t):
        return _V(e.cast(t), t)
    if _is_bin(st) and _is_bin(t):
        return _V(e.cast(t), t)
    if pa.types.is_signed_integer(st) and pa.types.is_date32(t):
        return _V(e.cast(pa.int32()).cast(t), t)
    if pa.types.is_date32(st) and pa.types.is_signed_integer(t):
        return _V(e.cast(pa.int32()).cast(t), t)
    if (pa.types.is_decimal(st) or _is_int(st)) and pa.types.is_decimal(t):
        # Only casts that hold every value exactly (what comparisons need): pylance's narrowing
        # casts depend on its planner (it may unwrap the cast), so they are refused here.
        whole, scale = (st.precision - st.scale, st.scale) if pa.types.is_decimal(st) else (_INT_DIGITS[st.bit_width], 0)
        if pa.types.is_uint64(st):
            whole += 1
        if t.precision - t.scale < whole or t.scale < scale:
            raise NotSupportedError(f"filters: CAST from {st} to {t} (not every value fits) is not supported")
        return _V(e.cast(t), t)
    raise NotSupportedError(f"filters: CAST from {st} to {t} is not supported")


def _decimal_scalar(v: Any, st: pa.DataType, t: pa.DataType, fail: Any) -> pa.Scalar:
    """A constant (string, integer or decimal) as a decimal of type `t`, exactly: a value with
    more fractional digits than `t`'s scale, or more digits than its precision, fails."""
    import decimal

    if _is_str(st):
        try:
            d = decimal.Decimal(v.strip())
        except decimal.InvalidOperation:
            return fail()
    elif _is_int(st) or pa.types.is_decimal(st):
        d = decimal.Decimal(v)
    else:
        return fail()
    if not d.is_finite():
        return fail()
    exact = d.quantize(decimal.Decimal(1).scaleb(-t.scale), context=decimal.Context(prec=80))
    if exact != d or len(exact.as_tuple().digits) > t.precision and exact != 0:
        return fail()
    return pa.scalar(exact, t)


# -- SQL types ------------------------------------------------------------------------------

_SQL_TYPES: Dict[str, pa.DataType] = {
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "UTINYINT": pa.uint8(),
    "USMALLINT": pa.uint16(),
    "UINT": pa.uint32(),
    "UBIGINT": pa.uint64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "TEXT": pa.string(),
    "VARCHAR": pa.string(),
    "CHAR": pa.string(),
    "STRING": pa.string(),
    "BINARY": pa.binary(),
    "VARBINARY": pa.binary(),
    "DATE": pa.date32(),
}
_PRECISION_UNITS = {0: "s", 3: "ms", 6: "us", 9: "ns"}


def _sql_type(dt: Any) -> pa.DataType:
    from sqlglot import exp

    name = dt.this.name if hasattr(dt.this, "name") else str(dt.this)
    name = name.upper()
    if name in ("TIMESTAMP", "DATETIME", "TIMESTAMPNTZ", "TIMESTAMP_NTZ"):
        params = [p for p in dt.expressions if isinstance(p, exp.DataTypeParam)]
        if not params:
            return pa.timestamp("us")
        try:
            precision = int(params[0].this.this)
        except (TypeError, ValueError, AttributeError):
            raise InvalidArgumentError(f"filters: unsupported timestamp precision in {dt.sql()}") from None
        if precision not in _PRECISION_UNITS:
            raise InvalidArgumentError(f"filters: unsupported timestamp precision {precision} (0, 3, 6 or 9)")
        return pa.timestamp(_PRECISION_UNITS[precision])
    if name in ("DECIMAL", "NUMERIC", "DEC"):
        params = [p for p in dt.expressions if isinstance(p, exp.DataTypeParam)]
        if len(params) != 2:
            raise InvalidArgumentError(f"filters: {dt.sql()} needs a precision and a scale, as DECIMAL(p, s)")
        try:
            precision, scale = int(params[0].this.this), int(params[1].this.this)
        except (TypeError, ValueError, AttributeError):
            raise InvalidArgumentError(f"filters: {dt.sql()}: the precision and scale must be integers") from None
        if not (1 <= precision <= 76 and 0 <= scale <= precision):
            raise InvalidArgumentError(f"filters: {dt.sql()}: precision 1 to 76 and a scale of 0 to the precision")
        return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    if name in ("TIMESTAMPTZ", "TIMESTAMPLTZ"):
        raise NotSupportedError("filters: TIMESTAMP WITH TIME ZONE is not supported (pylance refuses a zone in the type)")
    t = _SQL_TYPES.get(name)
    if t is None:
        raise NotSupportedError(f"filters: the type {dt.sql()} is not supported")
    return t


_ARROW_NAMES = {
    "Null": pa.null(), "Boolean": pa.bool_(), "Int8": pa.int8(), "Int16": pa.int16(), "Int32": pa.int32(),
    "Int64": pa.int64(), "UInt8": pa.uint8(), "UInt16": pa.uint16(), "UInt32": pa.uint32(), "UInt64": pa.uint64(),
    "Float16": pa.float16(), "Float32": pa.float32(), "Float64": pa.float64(), "Utf8": pa.string(),
    "LargeUtf8": pa.large_string(), "Utf8View": pa.string_view(), "Binary": pa.binary(), "LargeBinary": pa.large_binary(),
    "BinaryView": pa.binary_view(), "Date32": pa.date32(), "Date64": pa.date64(),
}
_UNITS = {"Second": "s", "Millisecond": "ms", "Microsecond": "us", "Nanosecond": "ns"}


def arrow_type_from_string(text: str) -> pa.DataType:
    """An Arrow type from the text ``arrow_cast`` takes (arrow-rs's names: ``Int32``,
    ``Utf8``, ``FixedSizeBinary(16)``, ``FixedSizeList(32, Float32)``, ``List(Int64)``,
    ``Timestamp(Microsecond, None)`` / ``Timestamp(Millisecond, Some("UTC"))``,
    ``Decimal128(10, 2)``). Raises InvalidArgumentError for anything else."""
    pos = 0
    src = text.strip()

    def fail() -> InvalidArgumentError:
        return InvalidArgumentError(f"arrow_cast: cannot read the type {text!r}")

    def skip() -> None:
        nonlocal pos
        while pos < len(src) and src[pos] == " ":
            pos += 1

    def word() -> str:
        nonlocal pos
        skip()
        start = pos
        while pos < len(src) and (src[pos].isalnum() or src[pos] in "_\""):
            pos += 1
        if start == pos:
            raise fail()
        return src[start:pos]

    def expect(ch: str) -> None:
        nonlocal pos
        skip()
        if pos >= len(src) or src[pos] != ch:
            raise fail()
        pos += 1

    def number() -> int:
        w = word()
        if not w.lstrip("-").isdigit():
            raise fail()
        return int(w)

    def parse() -> pa.DataType:
        name = word()
        if name in _ARROW_NAMES:
            return _ARROW_NAMES[name]
        expect("(")
        if name == "FixedSizeBinary":
            t = pa.binary(number())
        elif name in ("FixedSizeList", "List", "LargeList"):
            size = number() if name == "FixedSizeList" else None
            if size is not None:
                expect(",")
            inner = parse()
            t = pa.list_(inner, size) if size is not None else pa.list_(inner) if name == "List" else pa.large_list(inner)
        elif name in ("Decimal128", "Decimal256"):
            p = number()
            expect(",")
            sc = number()
            t = pa.decimal128(p, sc) if name == "Decimal128" else pa.decimal256(p, sc)
        elif name == "Timestamp":
            unit = _UNITS.get(word())
            if unit is None:
                raise fail()
            expect(",")
            tz = word()
            if tz == "Some":
                expect("(")
                end = src.find(")", pos)
                if end < 0:
                    raise fail()
                tzname = src[pos:end].strip().strip('"')
                set_pos(end + 1)
                t = pa.timestamp(unit, tzname)
            elif tz == "None":
                t = pa.timestamp(unit)
            else:
                raise fail()
        else:
            raise fail()
        expect(")")
        return t

    def set_pos(p: int) -> None:
        nonlocal pos
        pos = p

    out = parse()
    skip()
    if pos != len(src):
        raise fail()
    return out
