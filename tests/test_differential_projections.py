"""Computed columns on generated expressions, pylance 14 the oracle: the value expressions of
the filter grammar (arithmetic on 32- and 64-bit, unsigned and float columns with literals
and other columns, negation, CASTs, ``lower`` / ``upper``, ``||``, dates and timestamps) as
``to_table(columns={"e": expr})``. Where pylance answers, lancepy's column has the same type
and the same values (floats by bit pattern); where pylance refuses (a literal that does not
fit its column), nothing is compared."""

from __future__ import annotations

import collections
import os
import sys

import pyarrow as pa
import pytest

import lancepy

sys.path.insert(0, os.path.dirname(__file__))
import filter_grammar as grammar  # noqa: E402
from test_differential_filters import write_dataset  # noqa: E402

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")
pytestmark = pytest.mark.interop

EXPRESSIONS_PER_SEED = 500

# pylance's `lower` / `upper` of a dictionary column is a `string_view` column; lancepy's is
# a `string` one with the same values.
_VIEW_TYPED = ("lower(cat)", "upper(cat)")


@pytest.fixture(scope="module")
def uri(tmp_path_factory) -> str:
    return write_dataset(str(tmp_path_factory.mktemp("diffproj") / "lancepy.lance"), "lancepy")


def _as_string(table: pa.Table) -> pa.Table:
    cols = [c.cast(pa.string()) if c.type == pa.string_view() else c for c in table.columns]
    return pa.table(cols, names=table.column_names)


@pytest.mark.parametrize("seed", range(4))
def test_generated_expressions_equal_pylance(uri, seed) -> None:
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    gen = grammar.FilterGenerator(9000 + seed)
    counts: collections.Counter = collections.Counter()
    wrong = []
    for _ in range(EXPRESSIONS_PER_SEED):
        expr, _ = gen.value(gen.family())
        columns = {"id": "id", "e": expr}
        try:
            want = theirs.to_table(columns=columns)
        except Exception:  # noqa: BLE001 - pylance refuses: nothing to compare
            counts["pylance refused"] += 1
            continue
        got = ours.to_table(columns=columns)
        got_type, want_type = got.schema.field("e").type, want.schema.field("e").type
        if expr in _VIEW_TYPED and want_type == pa.string_view():
            want_type = pa.string()
        same_type = got_type == want_type
        if same_type and grammar.canonical(_as_string(got)).equals(grammar.canonical(_as_string(want))):
            counts["same"] += 1
            continue
        counts["wrong"] += 1
        diff = [(i, a, b) for i, a, b in zip(want["id"].to_pylist(), got["e"].to_pylist(), want["e"].to_pylist())
                if a != b][:3]
        wrong.append(f"{expr!r}: {got_type} vs {want_type}; (id, lancepy, pylance) {diff}")
    print(dict(counts))
    assert not wrong, f"{len(wrong)} expressions differ from pylance, e.g.\n" + "\n".join(wrong[:10])
    assert counts["same"] >= 0.9 * EXPRESSIONS_PER_SEED, dict(counts)


@pytest.mark.parametrize(
    "expr, type_, values",
    [
        ("i32 * 2", pa.int32(), [-2, 10]),  # a literal facing a column takes its type, and wraps
        ("2 * i32", pa.int32(), [-2, 10]),
        ("(i32 + 1)", pa.int32(), [-(2**31), 6]),
        ("i32 * 2 + 1", pa.int64(), [2**32 - 1, 11]),  # only at the top of the expression
        ("i32 + CAST(1 AS BIGINT)", pa.int64(), [2**31, 6]),  # a CAST keeps its type
        ("u32 - 6", pa.uint32(), [2**32 - 7, 2**32 - 1]),
        ("cat", pa.dictionary(pa.int32(), pa.string()), ["a", "b"]),  # a bare column keeps its type
    ],
)
def test_top_level_literal_typing(tmp_path, expr, type_, values) -> None:
    table = pa.table({
        "i32": pa.array([2**31 - 1, 5], pa.int32()),
        "u32": pa.array([2**32 - 1, 5], pa.uint32()),
        "cat": pa.array(["a", "b"]).dictionary_encode(),
    })
    uri = str(tmp_path / "d")
    lancepy.write_dataset(table, uri)
    for impl in (lancepy, lance):
        got = impl.dataset(uri).to_table(columns={"e": expr}).column("e")
        assert got.type == type_ and got.to_pylist() == values, (impl.__name__, expr)
