"""SQL predicates → ``pyarrow.compute`` expressions that give pylance's answers.

Filters (``to_table(filter=...)``, ``count_rows(filter=...)``, ``delete``, ``update``) are
SQL-style predicate strings as pylance accepts them, or ``pyarrow.compute.Expression``
objects. Strings are parsed by `sqlglot <https://github.com/tobymao/sqlglot>`_ with a dialect
shaped like pylance's parser (backticks quote identifiers; single *and* double quotes quote
strings; a backslash in a string is an ordinary character; ``TIMESTAMP`` has no time zone) and
translated node by node, with types, into an Arrow compute expression.

pylance plans a filter with DataFusion; the translation follows its rules:

* **Types.** A literal facing a column at the top of the filter (through ``AND``/``OR``, in
  ``IN`` lists and ``BETWEEN`` bounds) takes the column's type, as pylance coerces it (so
  ``i32_col = 2147483647 + 1`` wraps in 32 bits; where it does not fit, pylance refuses the
  filter and lancepy compares in the common type); elsewhere both sides are coerced to a
  common type: integers widen, an integer meeting a float becomes ``DOUBLE``, a string meeting
  a number or a date is parsed as one, a string meeting bytes is its UTF-8 bytes, a date
  meeting an integer is its count of days, a ``BIGINT UNSIGNED`` meeting a signed integer is
  compared exactly.
* **NULL.** Three-valued logic throughout: ``NOT NULL`` is ``NULL``; ``x IN (1, NULL)`` is
  ``NULL`` unless ``x = 1``; ``x NOT IN (..)`` is never true for a ``NULL`` ``x`` or a list
  holding ``NULL``; a row is returned only where the filter is true.
* **Floats** compare in IEEE-754 total order, as Arrow's Rust kernels do: ``NaN`` equals
  ``NaN`` and is greater than ``+inf`` (a negative ``NaN``, as ``inf - inf`` gives, is below
  ``-inf``), except that a comparison with a zero constant treats ``-0.0`` and ``0.0`` as one
  number. Integer arithmetic wraps on overflow; ``/`` and ``%`` on integers truncate and fail
  on a zero divisor; ``%`` on floats is ``fmod``.
* **Simplification.** pylance simplifies a filter before it runs it, and some rewrites decide
  rows: ``NOT`` is pushed through ``AND``/``OR``; ``TRUE``/``FALSE`` (also folded ones, like
  ``NULL IS NULL``) absorb their sibling, so an error there is not raised; two ``IN`` lists on
  the same expression joined by ``AND``/``OR`` (``x = 1 OR x = 2`` counting as one, and
  ``x = 0.0`` being ``x IN (-0.0, 0.0)``) are merged with set operations that disregard
  ``NULL`` (``x IN (1, 2) AND x NOT IN (2, NULL)`` returns the rows where ``x = 1``;
  ``x IN (1) AND x NOT IN (1)`` is ``FALSE`` even for a ``NULL`` x). lancepy applies the same
  rewrites.
* **LIKE / ILIKE** (``NOT LIKE``, ``NOT ILIKE``): ``%`` any run of characters, ``_`` one
  character, a backslash makes the next character literal (``ESCAPE '\\'`` is the default;
  another escape character is refused as pylance refuses it, unless the pattern is all ``%``
  or, for ``LIKE``, has no wildcard, which pylance rewrites before it looks at the escape);
  ``ILIKE`` folds case by Unicode rules, ``upper``/``lower`` map case as Rust does.
* **Time zones.** A ``TIMESTAMP`` literal with an offset is converted to UTC; columns with a
  zone other than UTC are not supported.

Supported: comparisons (``= == != <> < <= > >=``), ``AND OR NOT``, ``IN``/``NOT IN``,
``BETWEEN``/``NOT BETWEEN``, ``IS [NOT] NULL``, ``IS [NOT] TRUE/FALSE``, ``LIKE``/``ILIKE``,
arithmetic (``+ - * / %``, unary minus), ``||``, ``CAST(x AS type)`` (``TINYINT`` ...
``BIGINT [UNSIGNED]``, ``FLOAT``, ``DOUBLE``, ``STRING``, ``BOOLEAN``, ``DATE``,
``TIMESTAMP[(p)]``, ``DATETIME``), literals (numbers, strings, ``X'..'`` hex binaries,
booleans, ``NULL``, ``DATE '...'``, ``TIMESTAMP '...'`` with or without a UTC offset), struct
fields (``a.b``, ``a['b']``) and the functions ``lower``, ``upper``,
``length``/``character_length``, ``abs``, ``starts_with``, ``ends_with``, ``contains``, ``is_valid``, ``regexp_like``,
``regexp_match`` (true where it matches), ``array_has``/``array_contains``. Anything else raises
:class:`~lancepy.exceptions.NotSupportedError` naming the construct, and a filter pylance
refuses (a literal that does not fit its column, comparing a string with a boolean, ...) raises
:class:`~lancepy.exceptions.InvalidArgumentError` where lancepy cannot give it a meaning.

Compiled filters are cached by (text, schema); :func:`evaluate` runs an expression over a table.
"""

from __future__ import annotations

import datetime
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancepy.exceptions import InvalidArgumentError, NotSupportedError

__all__ = ["Filter", "compile_filter", "compile_expression", "compile_node", "parse_sql", "dialect", "evaluate"]

FilterLike = Union[str, "pc.Expression", None]


@dataclass(frozen=True)
class Filter:
    """A compiled filter: the Arrow expression and the columns it reads.

    ``columns`` is ``None`` when unknown (a ``pyarrow.compute.Expression`` given directly),
    in which case every column must be read.
    """

    expression: pc.Expression
    columns: Optional[List[str]]
    text: str


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------

_DIALECT_CLASS: Any = None


def _dialect() -> Any:
    """A sqlglot dialect that reads filters as pylance's parser (sqlparser) does."""
    global _DIALECT_CLASS
    if _DIALECT_CLASS is None:
        from sqlglot import exp
        from sqlglot.dialects.databricks import Databricks
        from sqlglot.tokens import TokenType

        class LanceFilterDialect(Databricks):
            class Tokenizer(Databricks.Tokenizer):
                # A backslash is an ordinary character in a string; '' is a quote.
                STRING_ESCAPES = ["'"]
                # TIMESTAMP is a timestamp without a time zone (TIMESTAMP WITH TIME ZONE is
                # another type, which pylance refuses).
                KEYWORDS = {**Databricks.Tokenizer.KEYWORDS, "TIMESTAMP": TokenType.TIMESTAMP}

            class Parser(Databricks.Parser):
                def _negate_range(self, this: Any = None) -> Any:
                    # `x NOT IN (..)` / `x NOT BETWEEN ..` come back as NOT(..): mark them, as
                    # pylance types their literals like those of `x IN` / `x BETWEEN`.
                    node = super()._negate_range(this)
                    if isinstance(node, exp.Not):
                        node.meta["postfix_not"] = True
                    return node

        _DIALECT_CLASS = LanceFilterDialect
    return _DIALECT_CLASS


def dialect() -> Any:
    """The sqlglot dialect filters are parsed with (for code that parses whole statements)."""
    return _dialect()


def parse_sql(sql: str) -> Any:
    """Parses one SQL expression with the filter dialect (a sqlglot node)."""
    try:
        import sqlglot
    except ImportError as e:  # pragma: no cover - sqlglot is a dependency
        raise InvalidArgumentError("SQL filters need the 'sqlglot' package") from e
    try:
        return sqlglot.parse_one(sql, read=_dialect())
    except sqlglot.errors.ParseError as e:
        raise InvalidArgumentError(f"cannot parse filter {sql!r}: {e}") from None
    except sqlglot.errors.TokenError as e:
        raise InvalidArgumentError(f"cannot parse filter {sql!r}: {e}") from None


def _parse(sql: str) -> Any:
    return parse_sql(sql)


# --------------------------------------------------------------------------------------------
# Compute functions Arrow lacks (registered once per process as Arrow UDFs)
# --------------------------------------------------------------------------------------------

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


def _udf_total_cmp(op: str) -> str:
    cmp = _TOTAL_OPS[op]

    def fn(ctx: Any, a: Any, b: Any) -> pa.Array:
        n = ctx.batch_length
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


# --------------------------------------------------------------------------------------------
# Typed values
# --------------------------------------------------------------------------------------------


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


_NULL = pa.scalar(None, pa.null())


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
    _info = np.iinfo(_t.to_pandas_dtype())
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


def _comparison_type(a: pa.DataType, b: pa.DataType, what: str) -> pa.DataType:
    """The type two sides of a comparison (or IN / BETWEEN) are compared in."""
    if a == b:
        return a
    if _is_null_type(a):
        return b
    if _is_null_type(b):
        return a
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
    raise NotSupportedError(f"filters: CAST from {st} to {t} is not supported")


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
    if name in ("TIMESTAMPTZ", "TIMESTAMPLTZ"):
        raise NotSupportedError("filters: TIMESTAMP WITH TIME ZONE is not supported (pylance refuses a zone in the type)")
    t = _SQL_TYPES.get(name)
    if t is None:
        raise NotSupportedError(f"filters: the type {dt.sql()} is not supported")
    return t


# -- LIKE and regular expressions -------------------------------------------------------------

_RE2_META = set("\\.+*?()|[]{}^$#&-~")


def _like_regex(pattern: str) -> str:
    """arrow-rs's translation of a LIKE pattern to a regular expression (for RE2)."""
    out = ["(?s)"]
    i = 0
    n = len(pattern)
    if pattern.startswith("%"):
        i = 1
    else:
        out.append("^")
    body: List[str] = []
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 < n:
                nxt = pattern[i + 1]
                body.append("\\" + nxt if nxt in _RE2_META else nxt)
                i += 2
                continue
            body.append("\\\\")  # a trailing backslash is a literal backslash
        elif c == "%":
            body.append(".*")
        elif c == "_":
            body.append(".")
        else:
            body.append("\\" + c if c in _RE2_META else c)
        i += 1
    text = "".join(body)
    if body and body[-1] == ".*":
        text = "".join(body[:-1])
    else:
        text += "$"
    return "".join(out) + text


_REGEX_FLAGS = set("imsU")


def _check_regex(pattern: str) -> None:
    """Refuses regex syntax where Rust's regex crate and RE2 disagree."""
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt.isalnum():
                raise NotSupportedError(
                    f"filters: the regular expression escape \\{nxt} is not supported (Unicode classes differ)"
                )
            i += 2
            continue
        i += 1
    for bad in ("&&", "~~", "(?<", "(?P<", "(?="):
        if bad in pattern:
            raise NotSupportedError(f"filters: the regular expression syntax {bad!r} is not supported")
    if "[" in pattern and "--" in pattern:
        raise NotSupportedError("filters: class subtraction (--) in regular expressions is not supported")


# --------------------------------------------------------------------------------------------
# The translator
# --------------------------------------------------------------------------------------------

_CMP_FUNCS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal"}
_CMP_SWAP = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
_CMP_NEGATE = {"eq": "ne", "ne": "eq", "lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}


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


class _Translator:
    """Translates sqlglot nodes into typed Arrow expressions against `schema`."""

    def __init__(self, schema: Optional[pa.Schema]) -> None:
        self.schema = schema
        self.columns: Set[str] = set()

    # -- public (kept for lancepy.sql) --------------------------------------------------

    def visit(self, node: Any) -> pc.Expression:
        """`node` as an Arrow expression (a value; top-level literal typing applies)."""
        return self.value(node, resolve=True).expr

    def condition(self, node: Any) -> pc.Expression:
        """`node` as a filter condition (a boolean Arrow expression)."""
        from sqlglot import exp

        top = node
        while isinstance(top, exp.Paren):
            top = top.this
        # AND / OR / NOT are booleans even when they simplify to a NULL (`NOT NOT NULL`).
        logical = isinstance(top, (exp.And, exp.Or)) or (isinstance(top, exp.Not) and not top.meta.get("postfix_not"))
        return self.bool_tree(node, resolve=True, top=not logical).expr

    # -- helpers ------------------------------------------------------------------------

    def column_type(self, parts: List[str]) -> Optional[pa.DataType]:
        if self.schema is None:
            return None
        field = self.schema.field(parts[0])
        t = field.type
        for p in parts[1:]:
            if not pa.types.is_struct(t):
                raise InvalidArgumentError(f"filters: {'.'.join(parts)}: {field.name} is not a struct")
            idx = t.get_field_index(p)
            if idx < 0:
                raise InvalidArgumentError(f"filters: the struct has no field {p!r} ({'.'.join(parts)})")
            field = t.field(idx)
            t = field.type
        return t

    def value(self, node: Any, resolve: bool = False) -> _V:
        v = self._visit(node, resolve)
        if v.regexp:
            raise NotSupportedError("filters: regexp_match is supported only as a condition (use regexp_like)")
        return v

    def boolean(self, node: Any, resolve: bool = False, top: bool = False) -> _V:
        """`node` where a condition is expected (a boolean or NULL)."""
        return self.as_boolean(self._visit(node, resolve), node, top)

    def as_boolean(self, v: _V, node: Any, top: bool = False) -> _V:
        if v.regexp:
            return _V(_coalesce_false(v.expr), pa.bool_())
        if pa.types.is_boolean(v.type):
            return v
        if _is_null_type(v.type):
            if top:
                raise InvalidArgumentError(f"filters: the filter {node.sql()} does not return a boolean")
            return _null_bool()
        raise InvalidArgumentError(f"filters: {node.sql()} is not a boolean ({v.type})")

    # -- dispatch -----------------------------------------------------------------------

    def _visit(self, node: Any, resolve: bool) -> _V:
        from sqlglot import exp

        if isinstance(node, exp.Paren):
            return self._visit(node.this, resolve)
        if isinstance(node, exp.Column):
            return self.column(node)
        if isinstance(node, exp.Bracket):
            return self.subscript(node)
        if isinstance(node, (exp.Literal, exp.Boolean, exp.Null, exp.HexString)):
            return self.literal(node)
        if isinstance(node, exp.Neg):
            inner = node.this
            if isinstance(inner, exp.Literal) and not inner.is_string:
                # pylance reads the digits first: -9223372036854775808 is a DOUBLE.
                n = self.number(inner.this)
                return _const(pa.scalar(-n.as_py(), n.type), "literal")
            return self.negate(self.value(inner))
        if isinstance(node, exp.And):
            return self.logical(node, "and_kleene", resolve)
        if isinstance(node, exp.Or):
            return self.logical(node, "or_kleene", resolve)
        if isinstance(node, exp.Not):
            return self.not_(node, resolve)
        if isinstance(node, exp.BitwiseNot):
            return self.invert(self.boolean(node.this))
        cmp = _COMPARISONS.get(type(node))
        if cmp is not None:
            return self.comparison(cmp, node.this, node.expression, resolve)
        arith = _ARITHMETIC.get(type(node))
        if arith is not None:
            return self.arithmetic_node(node, arith, resolve)
        if isinstance(node, exp.DPipe):
            return self.concat(self.value(node.this), self.value(node.expression))
        if isinstance(node, exp.Between):
            return self.between(node, resolve, negated=False)
        if isinstance(node, exp.In):
            return self.in_(node, resolve, negated=False)
        if isinstance(node, exp.Is):
            return self.is_(node)
        if isinstance(node, (exp.Like, exp.ILike)):
            return self.like(node, escape=None)
        if isinstance(node, exp.Escape):
            if not isinstance(node.this, (exp.Like, exp.ILike)):
                raise NotSupportedError(f"filters: ESCAPE outside LIKE is not supported: {node.sql()}")
            return self.like(node.this, escape=node.expression)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self.cast(node)
        if isinstance(node, (exp.NullSafeEQ, exp.NullSafeNEQ)):
            raise NotSupportedError(f"filters: IS [NOT] DISTINCT FROM is not supported: {node.sql()}")
        return self.function(node)

    # -- leaves -------------------------------------------------------------------------

    def column(self, node: Any) -> _V:
        return self.field_value(self.column_parts(node))

    def column_parts(self, node: Any) -> List[str]:
        """`a.b` as ["a", "b"] (struct field b of column a), the column's name resolved as
        pylance resolves it (exactly, else ignoring ASCII case unless `quoted`)."""
        from sqlglot import exp

        parts = [p.name for p in node.parts]
        top = parts[0]
        if self.schema is None:
            raise InvalidArgumentError(f"filters: column {top!r} cannot be typed without the dataset's schema")
        if top not in self.schema.names:
            quoted = isinstance(node.parts[0], exp.Identifier) and node.parts[0].quoted
            matches = [n for n in self.schema.names if n.lower() == top.lower()] if not quoted else []
            if not matches:
                raise InvalidArgumentError(
                    f"filter refers to column {top!r}, which the dataset does not have; columns are {self.schema.names}"
                )
            parts[0] = matches[0]
        self.columns.add(parts[0])
        return parts

    def field_value(self, parts: List[str]) -> _V:
        expr = pc.field(*parts)
        t = self.column_type(parts)
        if pa.types.is_dictionary(t):
            # Compared, matched and computed on as its values.
            expr = expr.cast(t.value_type)
            t = t.value_type
        return _V(expr, t, "column")

    def subscript(self, node: Any) -> _V:
        """`st['field']`: a struct field (as `st.field`); list indexing is not supported."""
        from sqlglot import exp

        def key(n: Any) -> Optional[str]:
            ks = n.expressions
            return ks[0].this if len(ks) == 1 and isinstance(ks[0], exp.Literal) and ks[0].is_string else None

        fields: List[str] = []
        base = node
        while isinstance(base, exp.Bracket) and key(base) is not None:
            fields.insert(0, key(base))
            base = base.this
        if fields and isinstance(base, exp.Column):
            return self.field_value(self.column_parts(base) + fields)
        raise NotSupportedError(f"filters: the subscript {node.sql(dialect=_dialect())} is not supported")

    def number(self, text: str) -> pa.Scalar:
        """A numeric literal: BIGINT when it is one, else DOUBLE (as pylance reads it)."""
        try:
            n = int(text)
            if _fits(n, pa.int64()):
                return pa.scalar(n, pa.int64())
        except ValueError:
            pass
        try:
            return pa.scalar(float(text), pa.float64())
        except ValueError:
            raise InvalidArgumentError(f"filters: {text!r} is not a number") from None

    def literal(self, node: Any) -> _V:
        from sqlglot import exp

        if isinstance(node, exp.Null):
            return _const(_NULL, "literal")
        if isinstance(node, exp.Boolean):
            return _const(pa.scalar(bool(node.this), pa.bool_()), "literal")
        if isinstance(node, exp.HexString):
            text = node.this
            if len(text) % 2:
                text = "0" + text
            try:
                return _const(pa.scalar(bytes.fromhex(text), pa.binary()), "literal")
            except ValueError:
                raise InvalidArgumentError(f"filters: {node.sql()} is not a hex literal") from None
        if node.is_string:
            return _const(pa.scalar(node.this, pa.string()), "literal")
        return _const(self.number(node.this), "literal")

    # -- logic --------------------------------------------------------------------------

    def logical(self, node: Any, fn: str, resolve: bool) -> _V:
        return self.bool_tree(node, resolve)

    def invert(self, v: _V) -> _V:
        return _call("invert", [v], pa.bool_())

    def not_(self, node: Any, resolve: bool) -> _V:
        from sqlglot import exp

        inner = node.this
        if node.meta.get("postfix_not"):
            if isinstance(inner, exp.In):
                return self.in_(inner, resolve, negated=True)
            if isinstance(inner, exp.Between):
                return self.between(inner, resolve, negated=True)
        return self.bool_tree(node, resolve)

    # -- comparisons --------------------------------------------------------------------

    def comparison(self, op: str, left: Any, right: Any, resolve: bool) -> _V:
        lv = self.value(left)
        rv = self.value(right)
        if resolve:
            lv, rv = self.resolve_pair(lv, rv, left, right)
        return self.compare(op, lv, rv, _Sql(left.parent or left))

    def resolve_pair(self, lv: _V, rv: _V, left: Any, right: Any) -> Tuple[_V, _V]:
        """pylance types literals facing a column (at the top of a filter) as the column."""
        from sqlglot import exp

        if lv.kind == "column":
            if rv.kind == "literal":
                c = _coerce_literal(rv, lv.type)
                if c is not None:
                    return lv, c
            elif self.is_binary_expr(right) and not any(True for _ in right.find_all(exp.Column)):
                # Only a tree without columns (`i32_col = 2147483647 + 1` wraps in 32 bits).
                try:
                    return lv, self.value_coerced(right, lv.type)
                except _CoerceFailed:
                    pass
        elif rv.kind == "column" and lv.kind == "literal":
            c = _coerce_literal(lv, rv.type)
            if c is not None:
                return c, rv
        return lv, rv

    @staticmethod
    def is_binary_expr(node: Any) -> bool:
        from sqlglot import exp

        while isinstance(node, exp.Paren):
            node = node.this
        return type(node) in _ARITHMETIC or type(node) in _COMPARISONS or isinstance(node, (exp.DPipe, exp.And, exp.Or))

    def value_coerced(self, node: Any, t: pa.DataType) -> _V:
        """`node` with every literal in its tree of binary operators typed as `t`."""
        from sqlglot import exp

        while isinstance(node, exp.Paren):
            node = node.this
        if type(node) in _ARITHMETIC:
            a = self.value_coerced(node.this, t)
            b = self.value_coerced(node.expression, t)
            return self.arithmetic(_ARITHMETIC[type(node)], a, b, node)
        if self.is_binary_expr(node):
            raise _CoerceFailed()
        v = self.value(node)
        if v.kind == "literal":
            c = _coerce_literal(v, t)
            if c is None:
                raise _CoerceFailed()
            return c
        return v

    def compare(self, op: str, lv: _V, rv: _V, what: str) -> _V:
        if _is_null_type(lv.type) or _is_null_type(rv.type):
            return _null_bool()
        if pa.types.is_boolean(lv.type) != pa.types.is_boolean(rv.type):
            raise InvalidArgumentError(f"filters: cannot compare {lv.type} with {rv.type} in {what}")
        # A date constant meeting an integer is its count of days.
        if pa.types.is_date32(rv.type) and rv.const is not None and _is_int(lv.type):
            rv = _const(_cast_scalar(rv.const, pa.int64(), what))
        if pa.types.is_date32(lv.type) and lv.const is not None and _is_int(rv.type):
            lv = _const(_cast_scalar(lv.const, pa.int64(), what))
        # Unwrap-cast: CAST(int AS int) = constant compares the uncast integers.
        for a, b, o in ((lv, rv, op), (rv, lv, _CMP_SWAP[op])):
            if a.uncast is not None and b.const is not None and _is_int(b.type) and b.const.is_valid:
                inner = a.unwrap(b.const.as_py())
                if inner is not None:
                    return self.compare(o, inner, _const(pa.scalar(b.const.as_py(), inner.type)), what)
        if _is_int(lv.type) and _is_int(rv.type) and pa.uint64() in (lv.type, rv.type) and (
            pa.types.is_signed_integer(lv.type) or pa.types.is_signed_integer(rv.type)
        ):
            return self.mixed_compare(op, lv, rv, what)
        t = _comparison_type(lv.type, rv.type, what)
        lc, rc = _cast(lv, t, what), _cast(rv, t, what)
        if _is_float(t):
            return self.float_compare(op, lc, rc)
        if pa.types.is_boolean(t) and op not in ("eq", "ne"):
            lc, rc = _cast(lc, pa.int8(), what), _cast(rc, pa.int8(), what)
        return _call(_CMP_FUNCS[op], [lc, rc], pa.bool_())

    def mixed_compare(self, op: str, a: _V, b: _V, what: str) -> _V:
        """A UInt64 compared with a signed integer, exactly (as DataFusion's DECIMAL does)."""
        if pa.types.is_signed_integer(a.type):
            a, b, op = b, a, _CMP_SWAP[op]
        u, sv = a, _cast(b, pa.int64(), what)
        # Where the signed side is negative, u > s whatever u is.
        fixed = _const(pa.scalar(op in ("ne", "gt", "ge")))
        if sv.const is not None:
            if not sv.const.is_valid:
                return _null_bool()
            if sv.const.as_py() < 0:
                return _call("if_else", [_call("is_valid", [u], pa.bool_()), fixed, _null_bool()], pa.bool_())
            return self.compare(op, u, _const(pa.scalar(sv.const.as_py(), pa.uint64())), what)
        if u.const is not None:
            if not u.const.is_valid:
                return _null_bool()
            if u.const.as_py() > 2**63 - 1:
                return _call("if_else", [_call("is_valid", [sv], pa.bool_()), fixed, _null_bool()], pa.bool_())
            return self.compare(op, _const(pa.scalar(u.const.as_py(), pa.int64())), sv, what)
        negative = _call("less", [sv, _const(pa.scalar(0, pa.int64()))], pa.bool_())
        as_u = _V(sv.expr.cast(pa.uint64(), safe=False), pa.uint64())
        fixed_or_null = _call("if_else", [_call("is_valid", [u], pa.bool_()), fixed, _null_bool()], pa.bool_())
        return _call("if_else", [negative, fixed_or_null, _call(_CMP_FUNCS[op], [u, as_u], pa.bool_())], pa.bool_())

    def float_compare(self, op: str, a: _V, b: _V) -> _V:
        if a.const is not None and b.const is not None:
            return _call(_udf_total_cmp(op), [_cast(a, pa.float64(), ""), _cast(b, pa.float64(), "")], pa.bool_())
        # A comparison with a zero constant treats -0.0 and 0.0 as one number.
        for x, z, o in ((a, b, op), (b, a, _CMP_SWAP[op])):
            if z.const is not None and z.const.is_valid and z.const.as_py() == 0.0:
                if o in ("eq", "ne"):
                    return _call(_CMP_FUNCS[o], [_cast(x, pa.float64(), ""), _const(pa.scalar(0.0))], pa.bool_())
                zero = -0.0 if o in ("lt", "ge") else 0.0
                return _call(_udf_total_cmp(o), [_cast(x, pa.float64(), ""), _const(pa.scalar(zero))], pa.bool_())
        return _call(_udf_total_cmp(op), [_cast(a, pa.float64(), ""), _cast(b, pa.float64(), "")], pa.bool_())

    def between(self, node: Any, resolve: bool, negated: bool) -> _V:
        x = self.value(node.this)
        low = self.value(node.args["low"])
        high = self.value(node.args["high"])
        if resolve and x.kind == "column":
            lc = _coerce_literal(low, x.type) if low.kind == "literal" else low
            hc = _coerce_literal(high, x.type) if high.kind == "literal" else high
            if lc is not None and hc is not None:
                low, high = lc, hc
        what = _Sql(node)
        t = x.type
        try:
            for other in (low, high):
                t = _comparison_type(t, other.type, what)
        except _MixedUnsigned:
            t = None  # compared pairwise, exactly
        if t is not None:
            if _is_null_type(t):
                return _null_bool()
            x, low, high = _cast(x, t, what), _cast(low, t, what), _cast(high, t, what)
        if negated:
            return _call("or_kleene", [self.compare("lt", x, low, what), self.compare("gt", x, high, what)], pa.bool_())
        return _call("and_kleene", [self.compare("ge", x, low, what), self.compare("le", x, high, what)], pa.bool_())

    def in_items(self, node: Any, resolve: bool) -> Tuple[_V, List[_V]]:
        """The probe and the values of an IN list (literals typed as pylance types them)."""
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            raise NotSupportedError("filters: subqueries are not supported")
        if node.args.get("field") is not None:
            raise NotSupportedError(f"filters: {node.sql()} is not supported")
        x = self.value(node.this)
        items = [self.value(i) for i in node.expressions]
        if not items:
            raise InvalidArgumentError("filters: an IN list needs at least one value")
        if resolve and x.kind == "column":
            coerced: Optional[List[_V]] = []
            for node_i, v in zip(node.expressions, items):
                if v.kind == "literal":
                    c = _coerce_literal(v, x.type)
                elif self.is_binary_expr(node_i):
                    try:
                        c = self.value_coerced(node_i, x.type)
                    except _CoerceFailed:
                        c = None
                else:
                    c = v
                if c is None:
                    coerced = None
                    break
                coerced.append(c)
            if coerced is not None:
                items = coerced
        return x, items

    def in_(self, node: Any, resolve: bool, negated: bool) -> _V:
        x, items = self.in_items(node, resolve)
        return self.in_eval(x, items, negated, _Sql(node))

    def in_eval(self, x: _V, items: List[_V], negated: bool, what: str) -> _V:
        """`x [NOT] IN (items)` in three-valued logic."""
        # Unwrap-cast: CAST(int AS int) IN (constants) looks up the uncast integers.
        if x.uncast is not None and all(v.const is not None and (_is_int(v.type) or _is_null_type(v.type)) for v in items):
            inner = [x.unwrap(v.const.as_py()) if v.const.is_valid else x.uncast for v in items]
            if all(i is not None for i in inner):
                x = x.uncast
                items = [_const(pa.scalar(v.const.as_py(), x.type)) for v in items]
        if all(v.const is not None and not v.const.is_valid for v in items):
            return _null_bool()  # x IN (NULL, ..): NULL whatever x is (pylance folds it so)
        t = x.type
        try:
            for v in items:
                t = _comparison_type(t, v.type, what)
        except _MixedUnsigned:
            res = self.compare("eq", x, items[0], what)
            for v in items[1:]:
                res = _call("or_kleene", [res, self.compare("eq", x, v, what)], pa.bool_())
            return self.invert(res) if negated else res
        if _is_null_type(t):
            return _null_bool()
        if pa.types.is_boolean(x.type) != pa.types.is_boolean(t):
            raise InvalidArgumentError(f"filters: cannot compare {x.type} with {t} in {what}")
        x = _cast(x, t, what)
        items = [_cast(v, t, what) for v in items]
        consts = all(v.const is not None for v in items)
        if consts and not _is_float(t) and x.const is None:
            values = [v.const for v in items if v.const.is_valid]
            has_null = len(values) < len(items)
            hit = pc.is_in(x.expr, value_set=pa.array([s.as_py() for s in values], t))
            out = pc.if_else(pc.is_null(x.expr), pc.scalar(pa.scalar(None, pa.bool_())), hit)
            if has_null:
                out = pc.if_else(out, pc.scalar(True), pc.scalar(pa.scalar(None, pa.bool_())))
            res = _V(out, pa.bool_())
        else:
            res = self.compare("eq", x, items[0], what)
            for v in items[1:]:
                res = _call("or_kleene", [res, self.compare("eq", x, v, what)], pa.bool_())
        return self.invert(res) if negated else res

    # -- conditions simplified as pylance's optimizer simplifies them -------------------

    def bool_tree(self, node: Any, resolve: bool, top: bool = False) -> _V:
        """A tree of AND / OR / NOT, simplified as DataFusion's simplifier does it before it
        runs (see `_simplify`), then translated."""
        tree = self.build(node, resolve)
        for _ in range(3):  # DataFusion's simplifier runs at most three cycles
            tree, changed = _simplify(tree)
            if not changed:
                break
        return self.evaluate(tree, top)

    def build(self, node: Any, resolve: bool) -> tuple:
        from sqlglot import exp

        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.And):
            return ("and", self.build(node.this, resolve), self.build(node.expression, resolve))
        if isinstance(node, exp.Or):
            return ("or", self.build(node.this, resolve), self.build(node.expression, resolve))
        if isinstance(node, exp.Not):
            inner = node.this
            while isinstance(inner, exp.Paren):
                inner = inner.this
            if node.meta.get("postfix_not"):
                lst = self.inlist(inner, resolve, True) if isinstance(inner, exp.In) else None
                return ("inlist", lst) if lst is not None else self.leaf(node, resolve)
            # pylance types literals before it simplifies, and not under NOT.
            return ("not", self.build(inner, False))
        if isinstance(node, exp.Boolean):
            return ("const", bool(node.this))
        if isinstance(node, exp.In):
            lst = self.inlist(node, resolve, False)
            if lst is not None:
                return ("inlist", lst)
        if isinstance(node, (exp.EQ, exp.NEQ)):
            zero = self.zero_comparison(node, resolve)
            if zero is not None:
                return ("inlist", zero)
        if isinstance(node, exp.EQ):
            for probe, other in ((node.this, node.expression), (node.expression, node.this)):
                if isinstance(probe, exp.Column):
                    lv, rv = self.value(node.this), self.value(node.expression)
                    if resolve:
                        lv, rv = self.resolve_pair(lv, rv, node.this, node.expression)
                    x, v = (lv, rv) if probe is node.this else (rv, lv)
                    if v.const is not None and x.kind == "column":
                        lst = self.make_inlist(probe, x, [v], [other], False, False)
                        if lst is not None:
                            return ("eq", node, resolve, lst)
                    break
        return self.leaf(node, resolve)

    def zero_comparison(self, node: Any, resolve: bool) -> Optional["_InList"]:
        """`x = 0.0` / `x != 0.0` as the IN list pylance makes of it (`x [NOT] IN (-0.0, 0.0)`),
        which then merges with other IN lists on `x`."""
        from sqlglot import exp

        lv, rv = self.value(node.this), self.value(node.expression)
        if resolve:
            lv, rv = self.resolve_pair(lv, rv, node.this, node.expression)
        for x_node, x, z, z_node in ((node.this, lv, rv, node.expression), (node.expression, rv, lv, node.this)):
            if x.const is None and z.const is not None and z.const.is_valid and _is_num(z.type) and z.const.as_py() == 0:
                try:
                    t = _comparison_type(x.type, z.type, _Sql(node))
                except (InvalidArgumentError, NotSupportedError):
                    return None
                if _is_float(t):
                    return self.make_inlist(x_node, x, [z], [z_node], isinstance(node, exp.NEQ), True)
        return None

    def leaf(self, node: Any, resolve: bool) -> tuple:
        """A condition other than AND / OR / NOT / IN, translated now: a constant can decide
        its parent (`FALSE AND x`), and an error in a branch pylance prunes is not raised."""
        try:
            return ("leaf", node, self._visit(node, resolve))
        except (InvalidArgumentError, NotSupportedError) as e:
            return ("error", e)

    def inlist(self, node: Any, resolve: bool, negated: bool) -> Optional["_InList"]:
        x, items = self.in_items(node, resolve)
        return self.make_inlist(node.this, x, items, list(node.expressions), negated, True)

    def make_inlist(self, probe: Any, x: _V, items: List[_V], nodes: List[Any], negated: bool, is_list: bool) -> Optional["_InList"]:
        """The IN list as pylance merges it: probe and items coerced to the list's type (an
        integer probe keeps its own type where every constant fits it, as the unwrap-cast
        rewrite leaves it), or None where lancepy does not merge it."""
        what = _Sql(probe)
        try:
            t = x.type
            for v in items:
                t = _comparison_type(t, v.type, what)
            if _is_null_type(t) or pa.types.is_boolean(x.type) != pa.types.is_boolean(t):
                return None
            if _is_int(t) and _is_int(x.type) and all(
                v.const is not None and (not v.const.is_valid or (_is_int(v.const.type) and _fits(v.const.as_py(), x.type)))
                for v in items
            ):
                t = x.type
            cast = [_cast(v, t, what) for v in items]
            xc = _cast(x, t, what)
        except (InvalidArgumentError, NotSupportedError):
            return None
        return _InList(probe, t, xc, [(self.item_key(v, n), v) for v, n in zip(cast, nodes)], negated, is_list)

    def evaluate(self, tree: tuple, top: bool = False) -> _V:
        kind = tree[0]
        if kind == "const":
            return _const(pa.scalar(tree[1]))
        if kind in ("and", "or"):
            a, b = self.evaluate(tree[1]), self.evaluate(tree[2])
            return _call("and_kleene" if kind == "and" else "or_kleene", [a, b], pa.bool_())
        if kind == "not":
            return self.invert(self.evaluate(tree[1]))
        if kind == "inlist":
            return tree[1].evaluate(self)
        if kind == "error":
            raise tree[1]
        if kind == "leaf":
            return self.as_boolean(tree[2], tree[1], top=top)
        # "eq": an equality no IN list absorbed
        return self.boolean(tree[1], tree[2], top=top)

    def item_key(self, v: _V, node: Any) -> Any:
        if v.const is None:
            return ("expr", node.sql(dialect=_dialect()))
        s = v.const
        if not s.is_valid:
            return ("null", str(s.type))
        value = s.as_py()
        if isinstance(value, float):
            # Bit patterns (NaN payloads differ), but -0.0 and 0.0 are one item to pylance.
            value = np.float64(0.0 if value == 0.0 else value).view(np.int64).item()
        return (str(s.type), value)

    # -- IS -----------------------------------------------------------------------------

    def is_(self, node: Any) -> _V:
        from sqlglot import exp

        target = node.expression
        negate = bool(node.args.get("negate"))
        if isinstance(target, exp.Null):
            v = self._visit(node.this, False)
            if v.regexp:
                # regexp_match is NULL where nothing matches.
                res = self.invert(_V(_coalesce_false(v.expr), pa.bool_()))
            elif v.const is not None:
                res = _const(pa.scalar(not v.const.is_valid))
            else:
                res = _V(pc.is_null(v.expr), pa.bool_())
            return self.invert(res) if negate else res
        if isinstance(target, exp.Boolean):
            v = self.value(node.this)
            if _is_null_type(v.type):
                v = _null_bool()
            if not pa.types.is_boolean(v.type):
                raise InvalidArgumentError(f"filters: {node.this.sql()} is not a boolean, in {node.sql()}")
            if bool(target.this):
                res = _call("coalesce", [v, _const(pa.scalar(False))], pa.bool_()) if v.const is None else _const(
                    pa.scalar(v.const.as_py() is True))
            else:
                res = _call("coalesce", [self.invert(v), _const(pa.scalar(False))], pa.bool_()) if v.const is None else _const(
                    pa.scalar(v.const.as_py() is False))
            return self.invert(res) if negate else res
        raise NotSupportedError(f"filters: {node.sql()} is not supported")

    # -- LIKE ---------------------------------------------------------------------------

    def like(self, node: Any, escape: Any) -> _V:
        from sqlglot import exp

        custom_escape = None
        if escape is not None:
            if not (isinstance(escape, exp.Literal) and escape.is_string and len(escape.this) >= 1):
                raise InvalidArgumentError(f"filters: the LIKE escape must be one character, got {escape.sql()}")
            if escape.this[0] != "\\":
                custom_escape = escape.this[0]
        s = self.value(node.this)
        pattern = self.value(node.expression)
        negate = bool(node.args.get("negate"))
        if _is_null_type(s.type) or _is_null_type(pattern.type):
            return _null_bool()
        if not _is_str(s.type):
            raise InvalidArgumentError(f"filters: LIKE needs a string, got {s.type} in {node.sql()}")
        if pattern.const is None or not _is_str(pattern.type):
            raise NotSupportedError(f"filters: LIKE needs a constant string pattern: {node.sql()}")
        if not pattern.const.is_valid:
            return _null_bool()
        text = pattern.const.as_py()
        ilike = isinstance(node, exp.ILike)
        if custom_escape is not None:
            # pylance (DataFusion) rewrites `LIKE '%'` to IS NOT NULL and a LIKE without
            # wildcards to `=` before it looks at the escape; any other pattern is refused.
            if text and set(text) == {"%"}:
                res = _call("is_valid", [s], pa.bool_())
                res = _call("if_else", [res, _const(pa.scalar(True)), _null_bool()], pa.bool_())
                return self.invert(res) if negate else res
            if not ilike and not (set(text) & {"%", "_", custom_escape}):
                res = self.compare("eq", s, _const(pa.scalar(text, pa.string())), _Sql(node))
                return self.invert(res) if negate else res
            raise NotSupportedError(
                f"filters: LIKE ... ESCAPE {escape.sql()} is not supported (only the backslash, as in pylance)"
            )
        regex = _like_regex(text)
        res = self.regex_match(s, regex, ilike)
        return self.invert(res) if negate else res

    def regex_match(self, s: _V, regex: str, ignore_case: bool) -> _V:
        if s.const is not None:
            return _call("match_substring_regex", [s], pa.bool_(), pc.MatchSubstringOptions(regex, ignore_case=ignore_case))
        return _V(pc.match_substring_regex(s.expr, pattern=regex, ignore_case=ignore_case), pa.bool_())

    # -- arithmetic ---------------------------------------------------------------------

    def arithmetic_node(self, node: Any, op: str, resolve: bool) -> _V:
        a = self.value(node.this)
        b = self.value(node.expression)
        return self.arithmetic(op, a, b, node)

    def arithmetic(self, op: str, a: _V, b: _V, node: Any) -> _V:
        what = _Sql(node)
        for v in (a, b):
            if not (_is_num(v.type) or _is_null_type(v.type)):
                raise InvalidArgumentError(f"filters: arithmetic on {v.type} is not supported in {what}")
        if _is_null_type(a.type) or _is_null_type(b.type):
            other = b.type if _is_null_type(a.type) else a.type
            return _const(pa.scalar(None, other if not _is_null_type(other) else pa.null()))
        t = _num_common(a.type, b.type)
        ac, bc = _cast(a, t, what), _cast(b, t, what)
        if op == "mod":
            if _is_float(t):
                # fmod is exact, so a FLOAT remainder computed in DOUBLE is the FLOAT one.
                wide = [_cast(ac, pa.float64(), what), _cast(bc, pa.float64(), what)]
                return _cast(_call(_udf_fmod(), wide, pa.float64()), t, what)
            return _call(_udf_int_mod(t), [ac, bc], t)
        return _call(op, [ac, bc], t)

    def negate(self, v: _V) -> _V:
        if _is_null_type(v.type):
            return v
        if pa.types.is_unsigned_integer(v.type) or not _is_num(v.type):
            raise InvalidArgumentError(f"filters: negation of {v.type} is not supported")
        return _call("negate", [v], v.type)

    def concat(self, a: _V, b: _V) -> _V:
        if _is_null_type(a.type) or _is_null_type(b.type):
            return _const(pa.scalar(None, pa.string()))
        parts = []
        for v in (a, b):
            if _is_str(v.type):
                parts.append(_cast(v, pa.string(), "||"))
            elif _is_int(v.type) or pa.types.is_date32(v.type):
                parts.append(_cast(v, pa.string(), "||"))
            else:
                raise NotSupportedError(f"filters: || with {v.type} is not supported")
        return _call("binary_join_element_wise", [parts[0], parts[1], _const(pa.scalar(""))], pa.string())

    # -- casts --------------------------------------------------------------------------

    def cast(self, node: Any) -> _V:
        from sqlglot import exp

        t = _sql_type(node.to)
        v = self.value(node.this)
        if isinstance(node, exp.TryCast) or node.args.get("safe"):
            if v.type == t or _is_null_type(v.type):
                return _cast(v, t, _Sql(node))
            # Only the casts that cannot fail (so TRY_CAST is CAST).
            widening = _is_int(t) and _is_int(v.type) and _INT_RANGE[t][0] <= _INT_RANGE[v.type][0] and (
                _INT_RANGE[v.type][1] <= _INT_RANGE[t][1])
            if not (_is_int(v.type) and (_is_float(t) or _is_str(t) or widening)):
                raise NotSupportedError(f"filters: TRY_CAST from {v.type} to {t} is not supported")
        return _cast(v, t, _Sql(node))

    # -- functions ----------------------------------------------------------------------

    def function(self, node: Any) -> _V:
        from sqlglot import exp

        name = (node.name if isinstance(node, exp.Anonymous) else type(node).__name__).lower()
        if isinstance(node, exp.Lower) or isinstance(node, exp.Upper):
            v = self.value(node.this)
            if _is_null_type(v.type):
                return _const(pa.scalar(None, pa.string()))
            if not _is_str(v.type):
                raise InvalidArgumentError(f"filters: {name} needs a string, got {v.type}")
            return _call(_udf_case(isinstance(node, exp.Upper)), [_cast(v, pa.string(), name)], pa.string())
        if isinstance(node, exp.Length):
            v = self.value(node.this)
            if _is_null_type(v.type):
                return _const(pa.scalar(None, pa.int32()))
            if pa.types.is_binary(v.type):
                return _call("binary_length", [v], pa.int32())
            if not _is_str(v.type):
                raise InvalidArgumentError(f"filters: length needs a string, got {v.type}")
            return _call("utf8_length", [_cast(v, pa.string(), name)], pa.int32())
        if isinstance(node, exp.Abs):
            v = self.value(node.this)
            if _is_null_type(v.type):
                return v
            if not _is_num(v.type):
                raise InvalidArgumentError(f"filters: abs needs a number, got {v.type}")
            return _call("abs_checked" if _is_int(v.type) else "abs", [v], v.type)
        if isinstance(node, (exp.StartsWith, exp.Contains)) or name in ("ends_with", "endswith"):
            args = [node.this, node.expression] if not isinstance(node, exp.Anonymous) else list(node.expressions)
            if len(args) != 2:
                raise InvalidArgumentError(f"filters: {name} takes two arguments")
            s, p = self.value(args[0]), self.value(args[1])
            if _is_null_type(s.type) or _is_null_type(p.type):
                return _null_bool()
            if not (_is_str(s.type) and _is_str(p.type)):
                raise InvalidArgumentError(f"filters: {name} needs strings")
            if p.const is None:
                raise NotSupportedError(f"filters: {name} needs a constant second argument")
            fn = {"startswith": "starts_with", "contains": "match_substring"}.get(name, "ends_with")
            return _call(fn, [_cast(s, pa.string(), name)], pa.bool_(), pc.MatchSubstringOptions(p.const.as_py()))
        if isinstance(node, exp.ArrayContains):
            lst, needle = self.value(node.this), self.value(node.expression)
            if _is_null_type(lst.type):
                return _null_bool()
            if not (pa.types.is_list(lst.type) or pa.types.is_large_list(lst.type)):
                raise InvalidArgumentError(f"filters: array_has needs a list, got {lst.type}")
            vt = lst.type.value_type
            if _is_null_type(needle.type):
                return _null_bool()
            needle = _cast(needle, _comparison_type(vt, needle.type, _Sql(node)), _Sql(node))
            if needle.type != vt:
                raise NotSupportedError(f"filters: array_has of a {needle.type} in a list of {vt} is not supported")
            if _is_float(vt):
                raise NotSupportedError("filters: array_has on lists of floats is not supported")
            return _call(_udf_array_has(lst.type), [lst, needle], pa.bool_())
        if isinstance(node, exp.RegexpLike) or name in ("regexp_like", "regexp_match"):
            if isinstance(node, exp.Anonymous):
                args = list(node.expressions)
            else:
                args = [node.this, node.expression] + ([node.args["flag"]] if node.args.get("flag") is not None else [])
            if len(args) not in (2, 3):
                raise InvalidArgumentError(f"filters: {name} takes two or three arguments")
            s, p = self.value(args[0]), self.value(args[1])
            flags = self.value(args[2]) if len(args) == 3 else None
            if p.const is None or (flags is not None and flags.const is None):
                raise NotSupportedError(f"filters: {name} needs a constant pattern and flags")
            is_match = name == "regexp_match"
            if _is_null_type(s.type) or not p.const.is_valid or (flags is not None and not flags.const.is_valid):
                null = pa.scalar(None, pa.bool_())
                return _V(pc.scalar(null), pa.bool_(), const=null, regexp=is_match)
            if not _is_str(s.type) or not _is_str(p.type):
                raise InvalidArgumentError(f"filters: {name} needs strings")
            pattern = p.const.as_py()
            _check_regex(pattern)
            prefix = ""
            if flags is not None:
                f = flags.const.as_py()
                if "g" in f:
                    raise InvalidArgumentError(f"filters: {name} does not support the global flag")
                if not set(f) <= _REGEX_FLAGS:
                    raise NotSupportedError(f"filters: {name} flags {f!r} are not supported")
                if f:
                    prefix = f"(?{''.join(sorted(set(f)))})"
            res = self.regex_match(_cast(s, pa.string(), name), prefix + pattern, False)
            if is_match:
                # A list of the captures, NULL where nothing matches: true / NULL.
                if res.const is None:
                    matched = pc.if_else(res.expr, pc.scalar(True), pc.scalar(pa.scalar(None, pa.bool_())))
                    res = _V(matched, pa.bool_(), regexp=True)
                else:
                    res = _V(res.expr, pa.bool_(), const=res.const, regexp=True)
            return res
        if name == "is_valid" and isinstance(node, exp.Anonymous) and len(node.expressions) == 1:
            v = self._visit(node.expressions[0], False)
            return _V(pc.is_valid(v.expr), pa.bool_()) if v.const is None else _const(pa.scalar(v.const.is_valid))
        raise NotSupportedError(f"filters: {node.sql(dialect=_dialect())} ({type(node).__name__}) is not supported")


class _Sql:
    """A node's SQL text, generated only if an error message needs it."""

    __slots__ = ("node",)

    def __init__(self, node: Any) -> None:
        self.node = node

    def __str__(self) -> str:
        return self.node.sql(dialect=_dialect())

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class _CoerceFailed(Exception):
    pass


class _InList:
    """`probe [NOT] IN (items)` as pylance's optimizer (DataFusion's simplifier) sees it.

    DataFusion merges two IN lists on the same expression (coerced to the same type) joined by
    AND / OR with set operations (``x IN A AND x NOT IN B`` becomes ``x IN (A - B)``, ...) and ``x = 1 OR x = 2``
    into ``x IN (1, 2)``. The merges ignore NULL items (``x IN (1, 2) AND x NOT IN (2, NULL)``
    is ``x = 1`` there, never true in SQL), so lancepy merges the same way to give the same rows.
    ``is_list`` is false for a lone ``x = literal`` (merged only into an OR).
    """

    __slots__ = ("probe", "type", "x", "items", "negated", "is_list")

    def __init__(self, probe: Any, type: pa.DataType, x: _V, items: List[Tuple[Any, _V]], negated: bool, is_list: bool) -> None:
        self.probe = probe
        self.type = type
        self.x = x
        self.items = items
        self.negated = negated
        self.is_list = is_list

    def evaluate(self, t: "_Translator") -> _V:
        if not self.items:
            return _const(pa.scalar(self.negated))
        return t.in_eval(self.x, [v for _, v in self.items], self.negated, _Sql(self.probe))


def _negate_clause(tree: tuple) -> tuple:
    """NOT pushed into `tree` (DataFusion's negate_clause): De Morgan through AND / OR, NOT NOT
    x is x, an IN list flips to NOT IN."""
    kind = tree[0]
    if kind == "const":
        return ("const", None if tree[1] is None else not tree[1])
    c = _constant(tree)
    if c is not None:  # a folded condition (`NULL IS NULL`)
        return ("const", not c)
    if kind == "not":
        return tree[1]
    if kind == "and":
        return ("or", _negate_clause(tree[1]), _negate_clause(tree[2]))
    if kind == "or":
        return ("and", _negate_clause(tree[1]), _negate_clause(tree[2]))
    if kind == "inlist":
        lst = tree[1]
        return ("inlist", _InList(lst.probe, lst.type, lst.x, lst.items, not lst.negated, True))
    return ("not", tree)


def _constant(tree: tuple) -> Optional[bool]:
    """TRUE / FALSE where `tree` is that constant (folded: `NULL IS NULL`, `1 = 1`), else None."""
    if tree[0] == "const":
        return tree[1]
    if tree[0] == "leaf":
        v = tree[2]
        if v.const is not None and pa.types.is_boolean(v.const.type) and v.const.is_valid:
            return bool(v.const.as_py())
    return None


def _as_inlist(tree: tuple) -> Optional[_InList]:
    if tree[0] == "inlist":
        return tree[1]
    if tree[0] == "eq":
        return tree[3]
    return None


def _simplify(tree: tuple) -> Tuple[tuple, bool]:
    """One bottom-up pass of the rules of DataFusion's simplifier that decide which rows a
    filter returns: NOT pushed down, TRUE / FALSE absorbed, IN lists merged (`_merge_inlists`)."""
    kind = tree[0]
    if kind == "not":
        child, changed = _simplify(tree[1])
        return _negate_clause(child), True
    if kind not in ("and", "or"):
        return tree, False
    a, ca = _simplify(tree[1])
    b, cb = _simplify(tree[2])
    changed = ca or cb
    is_and = kind == "and"
    for x, y in ((a, b), (b, a)):
        c = _constant(x)
        if c is not None:
            if c == is_and:  # TRUE AND y, FALSE OR y
                return y, True
            return ("const", c), True  # FALSE AND y, TRUE OR y
    la, lb = _as_inlist(a), _as_inlist(b)
    if la is not None and lb is not None and la.probe == lb.probe and la.type == lb.type:
        merged = _merge_inlists(la, lb, is_and)
        if merged is not None:
            if not merged.items:
                return ("const", merged.negated), True  # x IN () is FALSE, x NOT IN () TRUE
            return ("inlist", merged), True
    return (kind, a, b), changed


def _merge_inlists(a: _InList, b: _InList, is_and: bool) -> Optional[_InList]:
    from sqlglot import exp

    def union(l1: _InList, l2: _InList, negated: bool) -> _InList:
        keys = {k for k, _ in l1.items}
        return _InList(l1.probe, l1.type, l1.x, l1.items + [(k, v) for k, v in l2.items if k not in keys], negated, True)

    def intersection(l1: _InList, l2: _InList, negated: bool) -> _InList:
        keys = {k for k, _ in l2.items}
        return _InList(l1.probe, l1.type, l1.x, [(k, v) for k, v in l1.items if k in keys], negated, True)

    def except_(l1: _InList, l2: _InList) -> _InList:
        keys = {k for k, _ in l2.items}
        return _InList(l1.probe, l1.type, l1.x, [(k, v) for k, v in l1.items if k not in keys], False, True)

    if not is_and:
        if not a.negated and not b.negated and isinstance(a.probe, exp.Column):
            return union(a, b, False)  # x = 1 OR x IN (2, 3): x IN (1, 2, 3)
        if a.negated and b.negated and a.is_list and b.is_list:
            return intersection(a, b, True)
        return None
    if not (a.is_list and b.is_list):
        return None
    if not a.negated and not b.negated:
        return intersection(a, b, False)
    if a.negated and b.negated:
        return union(a, b, True)
    if not a.negated:
        return except_(a, b)
    return except_(b, a)


def _comparison_classes() -> Dict[type, str]:
    from sqlglot import exp

    return {exp.EQ: "eq", exp.NEQ: "ne", exp.GT: "gt", exp.GTE: "ge", exp.LT: "lt", exp.LTE: "le"}


def _arithmetic_classes() -> Dict[type, str]:
    from sqlglot import exp

    return {exp.Add: "add", exp.Sub: "subtract", exp.Mul: "multiply", exp.Div: "divide", exp.Mod: "mod"}


class _LazyMap(dict):
    def __init__(self, build: Callable[[], Dict[type, str]]) -> None:
        super().__init__()
        self._build = build

    def get(self, key: Any, default: Any = None) -> Any:  # type: ignore[override]
        if not dict.__len__(self):
            self.update(self._build())
        return dict.get(self, key, default)

    def __contains__(self, key: Any) -> bool:
        if not dict.__len__(self):
            self.update(self._build())
        return dict.__contains__(self, key)

    def __getitem__(self, key: Any) -> Any:
        if not dict.__len__(self):
            self.update(self._build())
        return dict.__getitem__(self, key)


_COMPARISONS: Dict[type, str] = _LazyMap(_comparison_classes)
_ARITHMETIC: Dict[type, str] = _LazyMap(_arithmetic_classes)


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------


def evaluate(table: pa.Table, expr: pc.Expression) -> pa.ChunkedArray:
    """`expr` over the rows of `table`, in order (Acero, one thread: a fraction of the cost of
    a ``pyarrow.dataset`` scan for the small batches filters see)."""
    try:
        import pyarrow.acero as acero
    except ImportError:  # pragma: no cover - pyarrow without Acero
        import pyarrow.dataset as pads

        return pads.dataset(table).to_table(columns={"v": expr}).column("v")
    plan = acero.Declaration.from_sequence([
        acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
        acero.Declaration("project", acero.ProjectNodeOptions([expr], ["v"])),
    ])
    return plan.to_table(use_threads=False).column("v")


def compile_node(node: Any, schema: Optional[pa.Schema] = None, *, text: Optional[str] = None, condition: bool = True) -> Filter:
    """Compiles a parsed sqlglot node (a condition, or a value with ``condition=False``)."""
    t = _Translator(schema)
    expr = t.condition(node) if condition else t.visit(node)
    return Filter(expression=expr, columns=sorted(t.columns), text=text if text is not None else node.sql(dialect=_dialect()))


def compile_expression(sql: str, schema: Optional[pa.Schema] = None) -> Filter:
    """Compiles one SQL value expression (a computed column, an update value) against `schema`."""
    return compile_node(_parse(sql), schema, text=sql, condition=False)


_CACHE_SIZE = 256
_cache: "OrderedDict[Tuple[str, Any], Filter]" = OrderedDict()
_cache_lock = threading.Lock()


def _compile_text(text: str, schema: Optional[pa.Schema]) -> Filter:
    """`compile_node(parse(text))`, remembered for the last few (text, schema) pairs: a scan
    and its count_rows, or a stream of scans, compile the same filter once."""
    try:
        key: Optional[Tuple[str, Any]] = (text, schema)
        hash(key)
    except TypeError:  # pragma: no cover - pa.Schema is hashable
        key = None
    if key is not None:
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                _cache.move_to_end(key)
                return hit
    flt = compile_node(_parse(text), schema, text=text, condition=True)
    if key is not None:
        with _cache_lock:
            _cache[key] = flt
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    return flt


def compile_filter(filter: FilterLike, schema: Optional[pa.Schema] = None) -> Optional[Filter]:
    """Compiles a filter given as SQL text or a ``pyarrow.compute.Expression``."""
    if filter is None:
        return None
    if isinstance(filter, pc.Expression):
        return Filter(expression=filter, columns=None, text=str(filter))
    if isinstance(filter, str):
        if not filter.strip():
            return None
        return _compile_text(filter, schema)
    raise InvalidArgumentError(
        f"a filter must be a SQL string or a pyarrow.compute.Expression, got {type(filter).__name__}"
    )
