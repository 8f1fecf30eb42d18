"""The translator: sqlglot nodes to typed Arrow compute expressions against a schema. Dispatch,
columns and literals, AND / OR / NOT and the condition trees simplified as pylance simplifies
them live here; comparisons come from :mod:`.compare`, the other node kinds from
:mod:`.functions`.
"""

from __future__ import annotations

from typing import Any, List, Optional, Set

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancepy.exceptions import InvalidArgumentError, NotSupportedError
from lancepy._core.schema import holds_json
from lancepy.filters.casts import _cast
from lancepy.filters.compare import _Comparisons
from lancepy.filters.functions import _Functions
from lancepy.filters.parsing import _ARITHMETIC, _COMPARISONS, _dialect, _Sql
from lancepy.filters.simplify import _InList, _simplify
from lancepy.filters.typed import (
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
    _null_bool,
    _null_scalar,
)


class _Translator(_Comparisons, _Functions):
    """Translates sqlglot nodes into typed Arrow expressions against `schema`."""

    def __init__(self, schema: Optional[pa.Schema]) -> None:
        self.schema = schema
        self.columns: Set[str] = set()
        #: top-level JSON columns read as the first argument of a JSON function, and columns
        #: holding JSON read any other way (see ``Filter.stored``)
        self.json_fn_columns: Set[str] = set()
        self.json_text_columns: Set[str] = set()

    # -- public (kept for lancepy.sql) --------------------------------------------------

    def visit(self, node: Any) -> pc.Expression:
        """`node` as an Arrow expression (a value; top-level literal typing applies). A bare
        column keeps its type (a dictionary stays one, as in pylance's projections)."""
        from sqlglot import exp

        v = self.value(node, resolve=True)
        bare = node
        while isinstance(bare, exp.Paren):
            bare = bare.this
        if isinstance(bare, exp.Column) and v.kind == "column":
            parts = self.column_parts(bare)
            if pa.types.is_dictionary(self.column_type(parts)):
                return pc.field(*parts)
        return v.expr

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
        raise InvalidArgumentError(f"filters: {node.sql()} does not return a boolean (it is {v.type})")

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
        if isinstance(node, exp.Array):
            return self.array_literal(node)
        if isinstance(node, exp.Alias):
            # `str AN` parses as `str AS AN`: a name after an expression is a syntax error here.
            raise InvalidArgumentError(f"filters: unexpected {node.alias!r} after {node.this.sql(dialect=_dialect())}")
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
                    f"No field named {top}: the filter refers to a column the dataset does not have; columns are {self.schema.names}"
                )
            parts[0] = matches[0]
        self.columns.add(parts[0])
        return parts

    def field_value(self, parts: List[str]) -> _V:
        expr = pc.field(*parts)
        t = self.column_type(parts)
        if self.schema is not None and holds_json(self.schema.field(parts[0]).type):
            self.json_text_columns.add(parts[0])
        if pa.types.is_dictionary(t):
            # Compared, matched and computed on as its values.
            expr = expr.cast(t.value_type)
            t = t.value_type
        return _V(expr, t, "column")

    def subscript(self, node: Any) -> _V:
        """`st['field']`: a struct field (as `st.field`); `lst[i]`: a list's element, counted
        from 1 as in SQL (null when the list is shorter or null)."""
        from sqlglot import exp

        steps: List[Any] = []
        base = node
        while isinstance(base, exp.Bracket) and len(base.expressions) == 1 and isinstance(base.expressions[0], exp.Literal):
            lit = base.expressions[0]
            steps.insert(0, lit.this if lit.is_string else int(lit.this) if lit.is_int else None)
            base = base.this
        if not isinstance(base, exp.Column) or not steps or None in steps:
            raise NotSupportedError(f"filters: the subscript {node.sql(dialect=_dialect())} is not supported")
        fields: List[str] = []
        while steps and isinstance(steps[0], str):
            fields.append(steps.pop(0))
        value = self.field_value(self.column_parts(base) + fields)
        expr, t = value.expr, value.type
        for step in steps:
            if isinstance(step, str):
                if not pa.types.is_struct(t) or t.get_field_index(step) < 0:
                    raise InvalidArgumentError(f"filters: {node.sql(dialect=_dialect())}: no struct field {step!r}")
                expr = pc.Expression._call("struct_field", [expr], pc.StructFieldOptions([step]))
                t = t.field(step).type
                continue
            if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
                raise InvalidArgumentError(f"filters: {node.sql(dialect=_dialect())}: {t} is not a list")
            if step < 1:
                raise NotSupportedError(f"filters: list index {step} in {node.sql(dialect=_dialect())} (indices count from 1)")
            # A one-element fixed-size slice is null-padded when the list is shorter.
            one = pc.Expression._call("list_slice", [expr], pc.ListSliceOptions(step - 1, step, return_fixed_size_list=True))
            expr = pc.Expression._call("list_element", [one, pc.scalar(0)])
            t = t.value_type
        return _V(expr, t, "column")

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
            return _const(_null_scalar(), "literal")
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

    def array_literal(self, node: Any) -> _V:
        """``[1, 2]`` / ``ARRAY[1.5, NULL]``: a constant list. Its elements must be constants
        of one kind; integers and floats together make floats (DOUBLE). As a value it is cast
        to the column it is assigned to (a fixed-size list of floats, for a vector)."""
        values: List[_V] = [self.value(e) for e in node.expressions]
        if any(v.const is None for v in values):
            raise NotSupportedError(f"filters: array literals need constant elements: {node.sql(dialect=_dialect())}")
        typed = [v.type for v in values if not _is_null_type(v.type)]
        if not typed:
            element = pa.null()
        elif all(pa.types.is_integer(t) for t in typed):
            element = pa.int64()
        elif all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in typed):
            element = pa.float64()
        elif all(t == typed[0] for t in typed):
            element = typed[0]
        else:
            raise InvalidArgumentError(f"filters: the elements of {node.sql(dialect=_dialect())} have different types")
        items = [v.const.as_py() if v.const.is_valid else None for v in values]
        return _const(pa.scalar(items, pa.list_(element)), "literal")

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
