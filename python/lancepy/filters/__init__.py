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

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, List, Optional, Set, Tuple, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancepy.exceptions import InvalidArgumentError, NotSupportedError
from lancepy.filters.casts import _cast, _cast_scalar, _coerce_literal, _sql_type
from lancepy.filters.parsing import _ARITHMETIC, _COMPARISONS, _Sql, _dialect, _parse, dialect, parse_sql
from lancepy.filters.patterns import _REGEX_FLAGS, _check_regex, _like_regex
from lancepy.filters.typed import (
    _INT_RANGE,
    _MixedUnsigned,
    _NULL,
    _V,
    _call,
    _coalesce_false,
    _comparison_type,
    _const,
    _fits,
    _is_float,
    _is_int,
    _is_null_type,
    _is_num,
    _is_str,
    _null_bool,
    _num_common,
)
from lancepy.filters.udfs import _udf_array_has, _udf_case, _udf_fmod, _udf_int_mod, _udf_total_cmp

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
# The translator
# --------------------------------------------------------------------------------------------

_CMP_FUNCS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal"}
_CMP_SWAP = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
_CMP_NEGATE = {"eq": "ne", "ne": "eq", "lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}


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
