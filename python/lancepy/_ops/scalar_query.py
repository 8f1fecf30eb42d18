"""Scalar indices as a scan's prefilter: which rows of the fragments a BTREE or BITMAP index
covers can satisfy a filter (and LABEL_LIST indices: ``array_has_any`` / ``array_has_all`` of
a list column and a constant array).

The filter's SQL is walked for the parts an index answers: ``col = v``, ``col IN (...)``,
``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``, ``IS NULL`` and ``LIKE 'prefix%'`` (as the range
of strings starting with the prefix) on a column with a BTREE or BITMAP index
(lancepy's or pylance's), combined with ``AND`` (intersection; parts no index answers are
left out, which only widens the set) and ``OR`` (union, when every side is answered);
``NOT`` and ``!=`` complement a part answered exactly (no float column, no NaN candidates)
within the rows of its index. The
answer is a set of *candidate* row addresses, a superset of the matching live rows of the
covered fragments: the scan reads those rows and still applies the whole filter to them, so
literal coercions, NaN and three-valued logic stay the filter's business. Where the whole
filter is answered exactly (comparisons, ``IN``, ``IS NULL`` of BTREE or BITMAP columns with
literals of the column's own type, no float column, joined by ``AND`` / ``OR``, nothing left
out), the candidates are the matching live rows themselves and the filter is not applied to
them again (:attr:`IndexPrefilter.exact`). Fragments the index does not cover are scanned as
usual. A BTREE index holds row addresses, also where the
dataset has stable row ids (pylance 14 writes and remaps it so, marked ``index_version`` 1
there; an index of such a dataset at version 0 holds row ids and is not used).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Set

import pyarrow as pa

from lancepy._ops import bitmap as _bitmap
from lancepy._ops import btree as _btree
from lancepy._ops import json_index as _json_index
from lancepy.exceptions import LanceError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from lancepy._table.snapshot import DatasetView
    from lancepy.filters import Filter


#: A range whose pages hold more than this share of an index's rows is not answered from the
#: index (measured on 2M rows: taking 10% by address cost twice a scan, 4.5% about 1.3
#: scans, 1% half of one)...
WIDE_RANGE = 0.03
#: ... unless they are this few rows
WIDE_RANGE_MIN_ROWS = 2 * _btree.BATCH_SIZE
#: The same share for a JSON-path index: a scan parses every document to evaluate the
#: filter, so taking rows by address pays off much further (measured on 200k documents: a
#: third of the rows 2.8× faster by address, three quarters even, all but one 1.8× slower)
WIDE_RANGE_JSON = 0.5


@dataclass
class IndexPrefilter:
    """The candidate rows of the covered fragments, and how they were found."""

    #: fragment id -> ascending row addresses (live rows only) that may match
    candidates: Dict[int, "np.ndarray"]
    #: pylance-style description of the index query, e.g. ``[i = 7]@i_idx(BTree)``
    query: str
    indices: List[str] = field(default_factory=list)
    #: whether the candidates are exactly the rows where the whole filter is true (no part
    #: of it left out, every part exact): then the scan takes them without filtering again
    exact: bool = False


class _StaleIndex(LanceError):
    """An index that no longer describes its column (the plain scan answers instead)."""


def _other_zeros(dtype: pa.DataType, values: Sequence[Any]) -> List[float]:
    """For a float column, the zero of the other sign of each zero in `values`: SQL (and
    pylance) has -0.0 = 0.0, so an IN list finds both (an index keeps them as two keys)."""
    import math

    if not pa.types.is_floating(dtype):
        return []
    zeros = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0]
    return [math.copysign(0.0, -math.copysign(1.0, z)) for z in zeros]  # (an integer 0 is +0.0)


@dataclass
class _Index:
    name: str
    column: str
    #: the type of its keys (of a JSON-path index: ``None`` until its segments are opened)
    dtype: Optional[pa.DataType]
    segments: List[str]
    fragments: Set[int]
    #: ``BTree`` or ``Bitmap`` (as pylance's plan names it)
    kind: str = "BTree"
    #: a JSON-path index's path (its keys: the values at the path of JSON column `column`)
    json_path: Optional[str] = None

    def too_wide(self, rows: int, total: int) -> bool:
        """Whether taking `rows` of the index's `total` by address is slower than a scan."""
        share = WIDE_RANGE if self.json_path is None else WIDE_RANGE_JSON
        return rows > share * total and rows > WIDE_RANGE_MIN_ROWS

    def query(self, text: str) -> str:
        """An index query's description as pylance's plan prints it (`text`: the predicate)."""
        if self.json_path is not None:
            text = f"Json({text}->{self.json_path})"
        return f"[{text}]@{self.name}({self.kind})"


_KINDS = {"BTreeIndexDetails": "BTree", "BitmapIndexDetails": "Bitmap", "LabelListIndexDetails": "LabelList"}


def _btree_indices(view: "DatasetView") -> Dict[str, _Index]:
    """The BTREE or BITMAP index of each column that has one (the first by name when several)."""
    out: Dict[Any, _Index] = {}
    paths = view.loaded.field_paths
    for e in view.index_entries():
        kind = _KINDS.get(str(e.get("details_type") or "").rsplit(".", 1)[-1])
        json_details = _json_index.details_of(e) if kind is None else None
        if json_details is not None:
            _add_json_index(view, out, e, json_details, paths)
            continue
        if kind is None or len(e["fields"]) != 1:
            continue
        if kind in ("Bitmap", "LabelList") and view.stable_row_ids:
            continue  # (pylance 14 keys it by stable row id: not used)
        if kind == "BTree" and not _btree.holds_addresses(view, e):
            continue  # (stable row ids, as older pylance indexed them: not used)
        column = paths.get(e["fields"][0])
        if column is None or "." in column or column not in view.schema.names:
            continue
        idx = out.get(column)
        if idx is None:
            dtype = view.schema.field(column).type
            if kind == "LabelList":
                if not _bitmap.is_list(dtype):
                    continue
                dtype = dtype.value_type  # (its keys: the lists' elements)
            idx = out[column] = _Index(e["name"], column, dtype, [], set(), kind)
        elif idx.name != e["name"]:
            continue
        idx.segments.append(e["uuid"])
        idx.fragments.update(int(f) for f in e["fragment_ids"])
    return out


def _add_json_index(
    view: "DatasetView", out: Dict[Any, _Index], e: Dict[str, Any], details: "_json_index.JsonDetails",
    paths: Dict[int, str],
) -> None:
    """Adds the segment `e` of a JSON-path index to `out` (under ``(column, path)``) when a
    filter can use it: a BTREE or BITMAP target, a plain path (see
    :mod:`lancepy._ops.json_index`), a top-level JSON column, row addresses."""
    from lancepy._core.schema import is_json_field

    if details.target_kind is None or not _json_index.is_plain_path(details.path) or view.stable_row_ids:
        return
    column = paths.get(e["fields"][0]) if len(e["fields"]) == 1 else None
    if column is None or "." in column or column not in view.schema.names or not is_json_field(view.schema.field(column)):
        return
    idx = out.get((column, details.path))
    if idx is None:
        idx = out[(column, details.path)] = _Index(e["name"], column, None, [], set(), details.target_kind, details.path)
    elif idx.name != e["name"]:
        return
    idx.segments.append(e["uuid"])
    idx.fragments.update(int(f) for f in e["fragment_ids"])


def _supported(dtype: pa.DataType) -> bool:
    return any(
        check(dtype)
        for check in (pa.types.is_integer, pa.types.is_floating, pa.types.is_string, pa.types.is_large_string, pa.types.is_boolean)
    )


_NO_VALUE = object()


def _literal(node: Any, dtype: pa.DataType) -> Any:
    """The Python value of a literal compared with a column of `dtype`, or ``_NO_VALUE``
    when it is not a literal of a kind this prefilter compares safely with that column."""
    from sqlglot import exp

    negative = False
    if isinstance(node, exp.Neg):
        negative, node = True, node.this
    if isinstance(node, exp.Boolean) and not negative:
        return bool(node.this) if pa.types.is_boolean(dtype) else _NO_VALUE
    if not isinstance(node, exp.Literal):
        return _NO_VALUE
    if node.is_string:
        if negative or not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
            return _NO_VALUE
        return str(node.this)
    if not (pa.types.is_integer(dtype) or pa.types.is_floating(dtype)):
        return _NO_VALUE
    text = str(node.this)
    try:
        value: Any = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return _NO_VALUE
    value = -value if negative else value
    if isinstance(value, int) and not -(2**63) <= value < 2**64:
        return _NO_VALUE  # (no Arrow integer holds it: the filter alone decides)
    return value


@dataclass
class _Answer:
    """A part of the filter answered: candidate row addresses (a superset of its matches in
    the fragments every index in `used` covers), its description, the indices it read."""

    addresses: "np.ndarray"
    text: str
    used: Dict[str, _Index]
    #: whether `addresses` are exactly the indexed rows where the part is true (not a
    #: superset): only such a part can be complemented for ``NOT``
    exact: bool = False
    #: whether every part of the filter below this node was answered (none left out)
    complete: bool = True


class _Planner:
    """Walks a parsed filter; each answered node becomes ``(addresses, description)``."""

    _FLIP = {"GT": "LT", "GTE": "LTE", "LT": "GT", "LTE": "GTE", "EQ": "EQ"}

    def __init__(self, view: "DatasetView", indices: Dict[str, _Index]) -> None:
        self.view = view
        self.indices = indices
        self._open: Dict[str, List[Any]] = {}

    def _segments(self, idx: _Index) -> List[Any]:
        if idx.name not in self._open:
            # (segments never change: kept with the version, lookup tables loaded once)
            opened = self.view.state.setdefault("btree_segments", {})
            module = _btree if idx.kind == "BTree" else _bitmap
            for u in idx.segments:
                if u not in opened:
                    opened[u] = module.open_segment(self.view.uri, u, self.view.storage_options)
            segments = [opened[u] for u in idx.segments]
            if idx.dtype is None:  # (a JSON-path index: the type its target was trained on)
                idx.dtype = segments[0].dtype
            if any(seg.dtype != idx.dtype for seg in segments):
                # built before the column's type changed: its values are not the column's
                raise _StaleIndex(idx.name)
            self._open[idx.name] = segments
        return self._open[idx.name]

    def _column(self, node: Any) -> Optional[_Index]:
        from sqlglot import exp

        if isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Anonymous):
            return self._json_key(node)
        if not isinstance(node, exp.Column) or node.table:
            return None
        idx = self.indices.get(node.name)
        return idx if idx is not None and idx.kind != "LabelList" and _supported(idx.dtype) else None

    def _json_key(self, node: Any) -> Optional[_Index]:
        """The JSON-path index answering ``json_get_<type>(column, 'path')``: one over that
        column and path, trained on the function's type."""
        from sqlglot import exp

        args = node.expressions
        if len(args) != 2 or not isinstance(args[0], exp.Column) or args[0].table:
            return None
        if not isinstance(args[1], exp.Literal) or not args[1].is_string:
            return None
        idx = self.indices.get((args[0].name, str(args[1].this)))
        if idx is None:
            return None
        self._segments(idx)  # (its type)
        return idx if _json_index.FUNCTIONS.get(idx.dtype) == str(node.this).lower() else None

    def _labels(self, node: Any) -> Optional[_Answer]:
        """``array_has_any`` / ``array_has_all`` of a column with a LABEL_LIST index and a
        constant array: the union / intersection of the elements' bitmaps (exact but for
        floats; its ``NOT`` complements it within every row of the covered fragments)."""
        import numpy as np
        from sqlglot import exp

        if isinstance(node, exp.ArrayContainsAll):
            args, every, name = [node.this, node.expression], True, "array_has_all"
        else:
            args = list(node.expressions)
            name = str(node.this).lower()
            every = name == "array_has_all"
        if len(args) != 2 or not isinstance(args[0], exp.Column) or args[0].table or not isinstance(args[1], exp.Array):
            return None
        idx = self.indices.get(args[0].name)
        if idx is None or idx.kind != "LabelList" or not _supported(idx.dtype) or not args[1].expressions:
            return None
        values = [_literal(e, idx.dtype) for e in args[1].expressions]
        if any(v is _NO_VALUE for v in values):
            return None
        sets = [np.unique(np.concatenate([seg.search_in([v]) for seg in self._segments(idx)])) for v in values]
        found = sets[0]
        for other in sets[1:]:
            found = np.intersect1d(found, other) if every else np.union1d(found, other)
        text = f"[{name}({idx.column}, List([{', '.join(_sql_value(v) for v in values)}]))]@{idx.name}(LabelList)"
        return _Answer(found, text, {idx.name: idx}, all(_exact(idx.dtype, v) for v in values))

    def _range(
        self, idx: _Index, low: Any, low_inc: bool, high: Any, high_inc: bool, text: str
    ) -> Optional[_Answer]:
        """The rows of a range, or ``None`` when its pages hold more than :data:`WIDE_RANGE`
        (:data:`WIDE_RANGE_JSON`) of the index's rows (taking that many rows by address is slower than scanning)."""
        import numpy as np

        segments = self._segments(idx)
        exact = _exact(idx.dtype, low, high)
        if idx.kind == "Bitmap":
            found_b = np.concatenate([seg.search_range(low, low_inc, high, high_inc) for seg in segments])
            total_b = self._covered_rows(idx)  # (no bitmap decoded to count them)
            if idx.too_wide(len(found_b), total_b):
                return None
            return _Answer(found_b, idx.query(text), {idx.name: idx}, exact)
        pages = [seg.pages_overlapping(low, low_inc, high, high_inc) for seg in segments]
        reach = sum(len(p) * seg.batch_size for p, seg in zip(pages, segments))
        total = sum(seg.num_rows for seg in segments)
        if idx.too_wide(reach, total):
            return None
        found = [seg.search_range(low, low_inc, high, high_inc, p) for seg, p in zip(segments, pages)]
        return _Answer(np.concatenate(found), idx.query(text), {idx.name: idx}, exact)

    def compare(self, idx: _Index, op: str, v: Any) -> Optional[_Answer]:
        """``column <op> v`` (`op`: ``EQ``, ``GT``, ``GTE``, ``LT``, ``LTE``; `v` a literal's
        value as :func:`_literal` gives it)."""
        text = f"{idx.column} {_SYMBOLS[op]} {_sql_value(v)}"
        if op == "EQ":
            return self._range(idx, v, True, v, True, text)
        if op in ("GT", "GTE"):
            return self._range(idx, v, op == "GTE", None, False, text)
        return self._range(idx, None, False, v, op == "LTE", text)

    def between(self, idx: _Index, lop: str, low: Any, hop: str, high: Any) -> Optional[_Answer]:
        """``column <lop> low AND column <hop> high`` (`lop`: ``GT`` / ``GTE``, `hop`:
        ``LT`` / ``LTE``) as one range (as pylance plans it)."""
        text = f"{idx.column} {_SYMBOLS[lop]} {_sql_value(low)} && {idx.column} {_SYMBOLS[hop]} {_sql_value(high)}"
        return self._range(idx, low, lop == "GTE", high, hop == "LTE", text)

    def visit(self, node: Any) -> Optional[_Answer]:
        import numpy as np
        from sqlglot import exp

        if isinstance(node, exp.Paren):
            return self.visit(node.this)
        if isinstance(node, exp.And):
            bounded = self._bounded(node)
            if bounded is not None:
                return bounded
            difference = self._difference(node)
            if difference is not None:
                return difference
            parts = [p for p in (self.visit(node.this), self.visit(node.expression)) if p is not None]
            if not parts:
                return None
            if len(parts) == 1:
                # (the other side left to the filter: a superset, which holds rows where
                # the AND is false, so it cannot be complemented)
                return replace(parts[0], exact=False, complete=False)
            a, b = parts
            return _Answer(
                np.intersect1d(a.addresses, b.addresses),
                f"AND({a.text},{b.text})",
                {**a.used, **b.used},
                a.exact and b.exact,
                a.complete and b.complete,
            )
        if isinstance(node, exp.Or):
            left, right = self.visit(node.this), self.visit(node.expression)
            if left is None or right is None:
                return None
            return _Answer(
                np.union1d(left.addresses, right.addresses),
                f"OR({left.text},{right.text})",
                {**left.used, **right.used},
                left.exact and right.exact,
                left.complete and right.complete,
            )
        if isinstance(node, exp.Not):
            return self._complement(self.visit(node.this))
        if isinstance(node, exp.NEQ):
            return self._complement(self.visit(exp.EQ(this=node.this, expression=node.expression)))
        if isinstance(node, exp.ArrayContainsAll) or (
            isinstance(node, exp.Anonymous) and str(node.this).lower() in ("array_has_any", "array_has_all")
        ):
            return self._labels(node)
        kind = type(node).__name__
        if kind in self._FLIP:
            idx, other, op = self._column(node.this), node.expression, kind
            if idx is None:
                idx, other, op = self._column(node.expression), node.this, self._FLIP[kind]
            if idx is None:
                return None
            v = _literal(other, idx.dtype)
            if v is _NO_VALUE:
                return None
            return self.compare(idx, op, v)
        if isinstance(node, exp.Between):
            idx = self._column(node.this)
            if idx is None:
                return None
            low, high = _literal(node.args.get("low"), idx.dtype), _literal(node.args.get("high"), idx.dtype)
            if low is _NO_VALUE or high is _NO_VALUE:
                return None
            return self._range(
                idx, low, True, high, True, f"{idx.column} >= {_sql_value(low)} && {idx.column} <= {_sql_value(high)}"
            )
        if isinstance(node, exp.In):
            idx = self._column(node.this)
            if idx is None or node.args.get("query") is not None or not node.expressions:
                return None
            values = [_literal(e, idx.dtype) for e in node.expressions]
            if any(v is _NO_VALUE for v in values):
                return None
            lookups = list(values) + _other_zeros(idx.dtype, values)
            addresses = np.concatenate([seg.search_in(lookups) for seg in self._segments(idx)])
            if len(lookups) > len(values):
                addresses = np.unique(addresses)  # (the index may hold both zeros as one key)
            if idx.json_path is not None:  # (pylance's plan: one query of the list)
                text = idx.query(f"{idx.column} IN [{','.join(_sql_value(v) for v in values)}]")
            else:
                text = idx.query(f"{idx.column} = {_sql_value(values[0])}")
                for v in values[1:]:  # (pylance's plan: IN as ORed equalities)
                    text = f"OR({text},{idx.query(f'{idx.column} = {_sql_value(v)}')})"
            exact = all(_exact(idx.dtype, v, None) for v in values)
            return _Answer(addresses, text, {idx.name: idx}, exact)
        if isinstance(node, exp.Like) and not node.args.get("negate"):
            idx = self._column(node.this)
            pattern = _literal(node.expression, idx.dtype) if idx is not None else _NO_VALUE
            if idx is None or not isinstance(pattern, str):
                return None
            prefix = _like_prefix(pattern)
            if not prefix:
                return None
            high = _successor(prefix)
            answer = self._range(idx, prefix, True, high, False, f"{idx.column} LIKE {_sql_value(pattern)}")
            if answer is not None:
                answer.exact = False  # (the pattern may go on after the prefix)
            return answer
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            idx = self._column(node.this)
            if idx is None:
                return None
            found = [seg.search_null() for seg in self._segments(idx)]
            return _Answer(np.concatenate(found), idx.query(f"{idx.column} IS NULL"), {idx.name: idx}, True)
        if isinstance(node, (exp.Column, exp.Anonymous)):  # (a boolean alone: = true)
            idx = self._column(node)
            if idx is not None and pa.types.is_boolean(idx.dtype):
                return self.compare(idx, "EQ", True)
        return None

    def _bound(self, node: Any) -> Optional[tuple]:
        """``(index, op, value)`` of a one-sided comparison of an indexed column with a
        literal (column on the left), else ``None``."""
        from sqlglot import exp

        while isinstance(node, exp.Paren):
            node = node.this
        kind = type(node).__name__
        if kind not in ("GT", "GTE", "LT", "LTE"):
            return None
        idx, other, op = self._column(node.this), node.expression, kind
        if idx is None:
            idx, other, op = self._column(node.expression), node.this, self._FLIP[kind]
        if idx is None:
            return None
        v = _literal(other, idx.dtype)
        return None if v is _NO_VALUE else (idx, op, v)

    def _bounded(self, node: Any) -> Optional[_Answer]:
        """``col >(=) a AND col <(=) b`` on one indexed column: one range (as pylance plans
        it), which is narrow where each side alone is not."""
        a, b = self._bound(node.this), self._bound(node.expression)
        if a is None or b is None or a[0] is not b[0]:
            return None
        lows = [x for x in (a, b) if x[1] in ("GT", "GTE")]
        highs = [x for x in (a, b) if x[1] in ("LT", "LTE")]
        if len(lows) != 1 or len(highs) != 1:
            return None
        (idx, lop, low), (_, hop, high) = lows[0], highs[0]
        return self.between(idx, lop, low, hop, high)

    def _covered_rows(self, idx: _Index) -> int:
        """The rows (deleted ones too) of the fragments `idx` covers."""
        return sum(phys for fid, (phys, _) in self.view.fragment_rows().items() if fid in idx.fragments)

    def _difference(self, node: Any) -> Optional[_Answer]:
        """``a AND NOT b`` (``b``: a ``NOT`` or ``!=`` part answered exactly, ``a`` answered):
        the rows of ``a`` not in ``b``, with no complement taken."""
        import numpy as np
        from sqlglot import exp

        def negated(n: Any) -> Any:
            while isinstance(n, exp.Paren):
                n = n.this
            if isinstance(n, exp.Not):
                return n.this
            if isinstance(n, exp.NEQ):
                return exp.EQ(this=n.this, expression=n.expression)
            return None

        sides = [node.this, node.expression]
        for i in (0, 1):
            inner_node = negated(sides[i])
            if inner_node is None:
                continue
            other = self.visit(sides[1 - i])
            if other is None:
                return None
            inner = self.visit(inner_node)
            if inner is None or not inner.exact:
                # (the NOT part left to the filter: a superset still, not complementable)
                return replace(other, exact=False, complete=False)
            texts = [other.text, other.text]
            texts[i] = f"NOT({inner.text})"
            return _Answer(
                np.setdiff1d(other.addresses.astype(np.uint64), inner.addresses.astype(np.uint64)),
                f"AND({texts[0]},{texts[1]})",
                {**other.used, **inner.used},
                other.exact,
                False,  # (rows where the negated part is NULL are in it: the filter drops them)
            )
        return None

    def _complement(self, inner: Optional[_Answer]) -> Optional[_Answer]:
        """``NOT`` of an exactly answered part: the rows of the first index it used that are
        not in it (rows where the part is false or NULL: the filter, applied to the
        candidates, leaves out the NULL ones, as SQL does). ``None`` when the part is not
        answered exactly."""
        import numpy as np

        if inner is None or not inner.exact:
            return None
        first = next(iter(inner.used.values()))
        total = self._covered_rows(first)
        rest = total - len(np.unique(inner.addresses))
        if first.too_wide(rest, total):
            return None  # (taking most rows by address is slower than the scan)
        if first.kind == "LabelList":  # (null and empty lists are in no bitmap: every row)
            universe = np.concatenate([np.empty(0, np.uint64)] + [
                (np.uint64(fid) << np.uint64(32)) + np.arange(phys, dtype=np.uint64)
                for fid, (phys, _) in self.view.fragment_rows().items()
                if fid in first.fragments
            ])
        else:
            universe = np.concatenate([seg.all_rows() for seg in self._segments(first)])
        rest = np.setdiff1d(universe.astype(np.uint64), inner.addresses.astype(np.uint64))
        return _Answer(rest, f"NOT({inner.text})", {first.name: first, **inner.used}, False)


_SYMBOLS = {"EQ": "=", "GT": ">", "GTE": ">=", "LT": "<", "LTE": "<="}
_OPS = {"=": "EQ", ">": "GT", ">=": "GTE", "<": "LT", "<=": "LTE"}
#: ``column <op> literal``: an unquoted name, a comparison, an integer, a decimal number or a
#: quoted string without quotes or backslashes in it
_COMPARISON = r"([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|=|<|>)\s*(-?)(\d+(?:\.\d+)?|'[^'\\]*')"
_SIMPLE = None


def _simple_parts(text: str) -> Optional[List[tuple]]:
    """The comparisons of a filter that is one ``column <op> literal`` or two joined by
    ``AND``, as ``(column, op, sign, literal text)``; ``None`` for any other filter (and for
    a column named like an SQL keyword), which the SQL parser reads. What this returns is
    what parsing would give the planner (see :meth:`_Planner.visit`): it only spares the
    parse of the commonest indexed filters."""
    global _SIMPLE
    import re

    if _SIMPLE is None:
        from lancepy.filters.parsing import _dialect

        keywords = frozenset(k.upper() for k in _dialect().tokenizer_class.KEYWORDS)
        _SIMPLE = (re.compile(rf"\s*{_COMPARISON}(?:\s+(?i:AND)\s+{_COMPARISON})?\s*", re.ASCII), keywords)
    pattern, keywords = _SIMPLE
    m = pattern.fullmatch(text)
    if m is None:
        return None
    g = m.groups()
    parts = [g[0:4]] + ([g[4:8]] if g[4] is not None else [])
    if any(p[0].upper() in keywords for p in parts):
        return None
    return parts


def _simple_literal(sign: str, text: str, dtype: pa.DataType) -> Any:
    """A literal of :func:`_simple_parts` as :func:`_literal` reads the parsed one."""
    if text.startswith("'"):
        if sign or not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
            return _NO_VALUE
        return text[1:-1]
    if not (pa.types.is_integer(dtype) or pa.types.is_floating(dtype)):
        return _NO_VALUE
    value: Any = float(text) if "." in text else int(text)
    value = -value if sign else value
    if isinstance(value, int) and not -(2**63) <= value < 2**64:
        return _NO_VALUE
    return value


def _plan_simple(planner: "_Planner", parts: List[tuple]) -> Any:
    """The answer for :func:`_simple_parts`' comparisons, as :meth:`_Planner.visit` gives it
    for the parsed filter; ``_NO_VALUE`` when that shape is not one handled here (the
    parser's path decides)."""
    found = []
    for column, sym, sign, text in parts:
        idx = planner.indices.get(column)
        if idx is None or idx.kind == "LabelList" or not _supported(idx.dtype):
            return _NO_VALUE if len(parts) > 1 else None
        v = _simple_literal(sign, text, idx.dtype)
        if v is _NO_VALUE:
            return _NO_VALUE if len(parts) > 1 else None
        found.append((idx, _OPS[sym], v))
    if len(found) == 1:
        return planner.compare(*found[0])
    a = found[0][0]
    if found[1][0] is not a:
        return _NO_VALUE
    lows = [(op, v) for _, op, v in found if op in ("GT", "GTE")]
    highs = [(op, v) for _, op, v in found if op in ("LT", "LTE")]
    if len(lows) != 1 or len(highs) != 1:
        return _NO_VALUE
    return planner.between(a, lows[0][0], lows[0][1], highs[0][0], highs[0][1])


def _sorted_unique(a: "np.ndarray") -> "np.ndarray":
    """The distinct values of `a` (uint64) ascending, without a sort when already so."""
    import numpy as np

    a = a.astype(np.uint64, copy=False)
    if len(a) < 2:
        return a
    if bool(np.all(a[1:] > a[:-1])):
        return a
    a = np.sort(a)
    keep = np.empty(len(a), dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def _exact(dtype: pa.DataType, *bounds: Any) -> bool:
    """Whether an index's answer for a comparison of a `dtype` column with `bounds` is
    exactly its rows (no NaN candidates, no comparison in another type: an integer bound
    fits the column's type, else the filter compares in a wider one, or as doubles)."""
    if pa.types.is_floating(dtype):
        return False
    for v in bounds:
        if v is None:
            continue
        if isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool) and not pa.types.is_integer(dtype)):
            return False
        if isinstance(v, int) and not isinstance(v, bool) and not _fits(v, dtype):
            return False
    return True


def _fits(v: int, dtype: pa.DataType) -> bool:
    """Whether integer `v` is a value of integer type `dtype`."""
    bits = dtype.bit_width
    if pa.types.is_signed_integer(dtype):
        return -(1 << (bits - 1)) <= v < (1 << (bits - 1))
    return 0 <= v < (1 << bits)


def _like_prefix(pattern: str) -> str:
    """The literal text a LIKE pattern starts with: up to its first wildcard (or escape)."""
    for i, ch in enumerate(pattern):
        if ch in "%_\\":
            return pattern[:i]
    return pattern


def _successor(prefix: str) -> Optional[str]:
    """The least string greater than every string starting with `prefix` (code point order,
    which is UTF-8 byte order), or ``None`` when there is none to give."""
    last = ord(prefix[-1])
    if last >= 0x10FFFF or 0xD7FF <= last < 0xDFFF:
        return None
    return prefix[:-1] + chr(last + 1)


def _sql_value(v: Any) -> str:
    """A literal as pylance's index query prints it (strings without quotes)."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v)


def fragment_order(view: "DatasetView") -> List[int]:
    """The ids of the version's fragments in manifest (scan) order (kept with the version)."""
    return view.state.cached("fragment_order", lambda: list(view.loaded.fragment_ids))


def plan(view: "DatasetView", flt: Optional["Filter"], fragment_ids: Optional[Sequence[int]]) -> Optional[IndexPrefilter]:
    """The index prefilter for `flt` over the scan's fragments, or ``None`` when no BTREE
    index answers any part of it (then the scan reads every row)."""
    import numpy as np

    if flt is None or flt.columns is None:
        return None
    indices = view.state.get("btree_indices")
    if indices is None:
        indices = view.state["btree_indices"] = _btree_indices(view)
    if not indices or not any(idx.column in flt.columns for idx in indices.values()):
        return None
    from lancepy.filters.parsing import parse_sql

    try:
        planner = _Planner(view, indices)
        parts = _simple_parts(flt.text)
        answer = _plan_simple(planner, parts) if parts is not None else _NO_VALUE
        if answer is _NO_VALUE:
            answer = planner.visit(parse_sql(flt.text))
    except (LanceError, pa.ArrowException, OverflowError):
        return None  # an index that cannot be read, or a stale one: the plain scan answers
    if answer is None:
        return None
    scanned = set(int(f) for f in fragment_ids) if fragment_ids is not None else None
    covered = set.intersection(*(idx.fragments for idx in answer.used.values()))
    live = fragment_order(view)
    covered = {f for f in live if f in covered and (scanned is None or f in scanned)}
    if not covered:
        return None  # (the index covers none of the fragments scanned)
    addresses = _sorted_unique(answer.addresses)
    frags = (addresses >> np.uint64(32)).astype(np.int64)
    # (the fragments holding candidates, each with its run of addresses)
    starts = np.flatnonzero(np.concatenate([[True], frags[1:] != frags[:-1]])) if len(frags) else np.empty(0, np.int64)
    ends = np.append(starts[1:], len(frags))
    runs = {int(frags[s]): (int(s), int(e)) for s, e in zip(starts, ends)}
    none = addresses[:0]
    with_deletions = view.state.cached("fragments_with_deletions", lambda: frozenset(
        fid for fid, (phys, live) in view.fragment_rows().items() if live < phys
    ))
    candidates: Dict[int, "np.ndarray"] = {}
    for fid in covered:
        run = runs.get(fid)
        mine = candidates[fid] = none if run is None else addresses[run[0]:run[1]]
        if not len(mine) or fid not in with_deletions:
            continue
        deleted = pa.table(view.snapshot.deleted_rows(fid)).column("row_offset").to_numpy()
        if len(deleted) and len(mine):
            offsets = (mine & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            mine = mine[~np.isin(offsets, deleted)]
        candidates[fid] = mine
    exact = answer.exact and answer.complete and all(idx.kind in ("BTree", "Bitmap") for idx in answer.used.values())
    return IndexPrefilter(candidates=candidates, query=answer.text, indices=sorted(answer.used), exact=exact)

