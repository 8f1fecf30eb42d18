"""Filters over indexed columns give the rows of a scan: a seeded differential test with
scalar indices (BTREE, BITMAP, LABEL_LIST) built by lancepy or by pylance, and one regression
test per bug it found.

Each dataset (``filter_grammar.write_indexed_dataset``) has every grammar column a lancepy
index can answer indexed, a fragment no index covers and rows deleted before and after the
build; pylance's also carries ZONEMAP, BLOOMFILTER and NGRAM indices, which lancepy scans past.
lancepy answers with its indices; the oracle is pylance's *scan* of the same directory
(``use_scalar_index=False``): pylance's own index plans give other rows than its scan for some
filters (``NOT (b IS TRUE)`` over a BITMAP leaves out the NULLs, ``s LIKE 'a\\b%'`` over a
BTREE adds rows), so they cannot be the reference.

``python benches/diff_filters.py --indexed lancepy|pylance`` runs the same comparison at any
count.
"""

from __future__ import annotations

import collections
import os
import sys

import pytest

import lancepy
from lancepy.exceptions import LanceError

sys.path.insert(0, os.path.dirname(__file__))
import filter_grammar as grammar  # noqa: E402
from test_differential_filters import check  # noqa: E402

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")
pytestmark = pytest.mark.interop

SEEDS = list(range(100, 106))
FILTERS_PER_SEED = 400  # 2 builders x 6 seeds x 400 = 4,800 filters per run


@pytest.fixture(scope="module", params=["lancepy", "pylance"])
def indexed(request, tmp_path_factory) -> str:
    return grammar.write_indexed_dataset(str(tmp_path_factory.mktemp("indexed") / "d.lance"), request.param)


@pytest.mark.parametrize("seed", SEEDS)
def test_indexed_filters_give_the_rows_of_a_scan(indexed, seed) -> None:
    ours = lancepy.dataset(indexed)
    filters = grammar.FilterGenerator(seed).filters(FILTERS_PER_SEED)
    counts, bad = grammar.compare_filters(ours, grammar.Unindexed(lance.dataset(indexed)), filters)
    check(counts, bad, f"indexed seed {seed}")
    # the run means something only if the indices answer a good share of the filters
    used = sum(planned_over_an_index(ours, f) for f in filters)
    print(f"  planned over an index: {used} of {len(filters)}")
    assert used >= 0.1 * len(filters), f"only {used} of {len(filters)} filters were planned over an index"


def planned_over_an_index(ds, flt: str) -> bool:
    try:
        return ds.scanner(filter=flt)._plan._index_prefilter() is not None
    except LanceError:  # (a filter lancepy refuses, as pylance does: not compared)
        return False


@pytest.fixture(scope="module")
def indexed_lancepy(tmp_path_factory) -> str:
    return grammar.write_indexed_dataset(str(tmp_path_factory.mktemp("indexed") / "r.lance"), "lancepy")


@pytest.mark.parametrize(
    "flt",
    [
        # an AND whose other side no index answers is a superset of its rows: its complement
        # is not the NOT's answer (lancepy dropped every row where i64 >= -1 and i32 * 2 <= 6)
        "NOT ((i64 >= -1) AND (i32 * 2 > 6))",
        "NOT ((i64 >= -1) AND (s ILIKE 'a%'))",
        "NOT ((li IS NOT NULL) AND (b = true))",
        "NOT ((i64 >= -1) AND NOT (upper(s) < s))",
        # an integer 0 in an IN list of a float column finds -0.0 too (lancepy missed it)
        "f64 IN (0)",
        "f64 IN (1.0, 0)",
        "f64 IN (-0, 3)",
    ],
)
def test_indexed_answers_found_wrong_before(indexed_lancepy, flt) -> None:
    ours = lancepy.dataset(indexed_lancepy)
    want = lance.dataset(indexed_lancepy).to_table(filter=flt, use_scalar_index=False)
    got = ours.to_table(filter=flt)
    assert sorted(got.column("id").to_pylist()) == sorted(want.column("id").to_pylist())
    assert ours.count_rows(flt) == want.num_rows
    assert collections.Counter(got.column("id").to_pylist()) == collections.Counter(want.column("id").to_pylist())
