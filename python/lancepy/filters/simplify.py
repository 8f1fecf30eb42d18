"""The rewrites pylance's optimizer (DataFusion's simplifier) applies before a filter runs, on the
translator's condition trees: NOT pushed down, TRUE / FALSE absorbed, IN lists merged.

A tree is a tuple: ``("const", bool)``, ``("and" | "or", a, b)``, ``("not", a)``,
``("inlist", _InList)``, ``("eq", node, resolve, _InList)``, ``("leaf", node, _V)`` or
``("error", exception)``; ``_Translator.build`` makes them and ``_Translator.evaluate`` turns
them into expressions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Tuple

import pyarrow as pa

from lancepy.filters.parsing import _Sql
from lancepy.filters.typed import _V, _const

if TYPE_CHECKING:  # for an annotation only: at run time translate imports this module
    from lancepy.filters.translate import _Translator


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
