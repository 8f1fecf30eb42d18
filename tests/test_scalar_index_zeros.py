"""-0.0 = 0.0 in filters answered by a scalar index, as in SQL and pylance: an index keeps the
two zeros as two keys, and an IN list must find both (a point query's range already did)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lance
import lancepy

FILTERS = [
    "f IN (0.0, 1.0)", "f IN (-0.0, 2.0)", "f IN (0.0)", "f IN (0.0, -0.0)", "f NOT IN (0.0, 1.0)", "f = -0.0",
    "f IN (1.0, 2.0) OR f = 0.0", "g IN (0.0, 1.0)", "g IN (-0.0)", "g NOT IN (-0.0)",
]


@pytest.mark.parametrize("kind", ["BTREE", "BITMAP"])
@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
def test_in_lists_find_both_zeros_with_an_index(tmp_path, kind, builder):
    values = [0.0, -0.0, 1.0, -0.0, None, float("nan"), 2.0, -1.5] * 4
    uri = str(tmp_path / "d")
    lancepy.write_dataset(pa.table({"f": pa.array(values, pa.float64()), "g": pa.array(values, pa.float32()),
                                    "i": range(len(values))}), uri, max_rows_per_file=13)
    lib = lancepy if builder == "lancepy" else lance
    for col in ("f", "g"):
        lib.dataset(uri).create_scalar_index(col, kind)
    for flt in FILTERS:
        ours = sorted(lancepy.dataset(uri).to_table(filter=flt).column("i").to_pylist())
        theirs = sorted(lance.dataset(uri).to_table(filter=flt).column("i").to_pylist())
        unindexed = sorted(lancepy.dataset(uri).scanner(filter=flt, use_scalar_index=False).to_table()
                           .column("i").to_pylist())
        assert ours == theirs == unindexed, flt
