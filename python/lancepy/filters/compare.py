"""The comparisons of the translator (a mixin of :class:`~lancepy.filters.translate._Translator`;
``self`` is the translator): ``= != < <= > >=``, BETWEEN and IN, with pylance's typing of
literals facing a column, unwrap-cast, exact UInt64 / signed comparisons and total-order floats.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from lancepy.exceptions import InvalidArgumentError, NotSupportedError
from lancepy.filters.casts import _cast, _cast_scalar, _coerce_literal
from lancepy.filters.parsing import _ARITHMETIC, _COMPARISONS, _Sql
from lancepy.filters.typed import (
    _MixedUnsigned,
    _V,
    _call,
    _comparison_type,
    _const,
    _is_float,
    _is_int,
    _is_null_type,
    _null_bool,
)
from lancepy.filters.udfs import _SWAPPED as _CMP_SWAP
from lancepy.filters.udfs import _udf_total_cmp

_CMP_FUNCS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal"}
_CMP_NEGATE = {"eq": "ne", "ne": "eq", "lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}


class _CoerceFailed(Exception):
    pass


class _Comparisons:
    """Comparisons, BETWEEN and IN (mixed into :class:`_Translator`)."""

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
