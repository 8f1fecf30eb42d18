"""Differential run of lancepy's SQL filters against pylance's, at any size.

    python benches/diff_filters.py --filters 100000 --seed 7

Writes the rows of ``tests/filter_grammar.py`` with lancepy (four appends, some rows deleted)
into a temporary directory, generates ``--filters`` random filters from ``--seed`` with the
grammar the differential test uses, and compares ``to_table(filter=f)`` of both
implementations on that directory, and lancepy's ``count_rows(f)`` with pylance's row count (pylance answering on a second thread). Prints one
line of counts:

    filters=N compared=C wrong=W refused_by_lancepy=R refused_by_pylance=P seconds=S

and, with ``--show K``, the first K wrong and refused filters. Exits 1 if any answer was wrong.

``--indexed lancepy`` (or ``pylance``) writes the rows with that library and builds scalar
indices on them first (``filter_grammar.write_indexed_dataset``); lancepy then answers with the
indices and pylance by scanning (``use_scalar_index=False``: its own index plans are not an
oracle, see ``tests/test_differential_indexed_filters.py``).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import filter_grammar as grammar  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filters", type=int, default=10000, help="how many random filters (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the filter generator (default 0)")
    parser.add_argument("--data-seed", type=int, default=0, help="seed of the rows (default 0)")
    parser.add_argument("--show", type=int, default=10, help="print this many wrong / refused filters (default 10)")
    parser.add_argument("--indexed", choices=["lancepy", "pylance"], default=None,
                        help="build scalar indices with this library; pylance answers by scanning")
    parser.add_argument("--chunk", type=int, default=1000, help="filters generated and compared at a time")
    args = parser.parse_args()

    # pylance logs a warning per regexp_match filter; keep the output to the counts.
    os.environ.setdefault("LANCE_LOG", "error")
    import lance

    import lancepy

    counts: collections.Counter = collections.Counter()
    bad = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="diff_filters_") as tmp:
        uri = os.path.join(tmp, "d.lance")
        if args.indexed:
            grammar.write_indexed_dataset(uri, args.indexed, args.data_seed)
            ours, theirs = lancepy.dataset(uri), grammar.Unindexed(lance.dataset(uri))
        else:
            for k, table in enumerate(grammar.make_fragments(args.data_seed)):
                lancepy.write_dataset(table, uri, mode="create" if k == 0 else "append")
            lancepy.dataset(uri).delete(grammar.DELETE_PREDICATE)
            ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
        gen = grammar.FilterGenerator(args.seed)
        done = 0
        while done < args.filters:
            part, part_bad = grammar.compare_filters(ours, theirs, gen.filters(min(args.chunk, args.filters - done)))
            counts.update(part)
            bad.extend(part_bad)
            done += sum(part.values())
    seconds = time.perf_counter() - start
    print(
        f"filters={sum(counts.values())} compared={counts[grammar.Outcome.COMPARED]} "
        f"wrong={counts[grammar.Outcome.WRONG]} refused_by_lancepy={counts[grammar.Outcome.REFUSED]} "
        f"refused_by_pylance={counts[grammar.Outcome.THEIRS_REFUSED]} seed={args.seed} seconds={seconds:.0f}"
    )
    for outcome, flt, detail in bad[: args.show]:
        print(f"{outcome}: {flt!r}\n    {detail[:300]}")
    return 1 if counts[grammar.Outcome.WRONG] else 0


if __name__ == "__main__":
    sys.exit(main())
