"""Decimal columns in filters against pylance on generated comparisons (seeded): DECIMAL(p, s)
literals, integer literals, CAST to DECIMAL, IN and BETWEEN, and the errors pylance gives too."""

from __future__ import annotations

import decimal
import random

import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError


@pytest.fixture(scope="module")
def both(tmp_path_factory, pylance):
    rng = random.Random(3)
    n = 400

    def dec(scale, digits):
        if rng.random() < 0.08:
            return None
        return decimal.Decimal(rng.randint(-(10**digits) + 1, 10**digits - 1)).scaleb(-scale)

    t = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "d53": pa.array([dec(3, 5) for _ in range(n)], pa.decimal128(5, 3)),
        "d122": pa.array([dec(2, 12) for _ in range(n)], pa.decimal128(12, 2)),
        "i": pa.array([rng.randint(-50, 50) for _ in range(n)], pa.int32()),
    })
    path = str(tmp_path_factory.mktemp("decimals") / "d.lance")
    lancepy.write_dataset(t, path, max_rows_per_file=150)
    return lancepy.dataset(path), pylance.dataset(path)


def _ids(ds, f):
    return sorted(ds.to_table(columns=["id"], filter=f).column("id").to_pylist())


def _literal(rng):
    p = rng.randint(1, 12)
    s = rng.randint(0, min(p, 4))
    digits = rng.randint(0, p)
    value = decimal.Decimal(rng.randint(-(10**digits) + 1, max(10**digits - 1, 1))).scaleb(-s) if digits else decimal.Decimal(0)
    kind = rng.random()
    if kind < 0.5:
        return f"DECIMAL({p},{s}) '{value:f}'"
    if kind < 0.8:
        return str(rng.randint(-100, 100))
    return f"CAST('{value:f}' AS DECIMAL({p},{s}))"


def test_generated_comparisons_match_pylance(both):
    ours, theirs = both
    rng = random.Random(5)
    compared = 0
    for _ in range(400):
        col = rng.choice(["d53", "d122", "d53", "i"])
        op = rng.choice(["=", "<>", "<", "<=", ">", ">=", "IN", "BETWEEN"])
        if op == "IN":
            f = f"{col} IN ({', '.join(_literal(rng) for _ in range(rng.randint(1, 3)))})"
        elif op == "BETWEEN":
            f = f"{col} BETWEEN {_literal(rng)} AND {_literal(rng)}"
        else:
            f = f"{col} {op} {_literal(rng)}"
        if col == "i" and "DECIMAL" not in f:
            continue
        f = rng.choice([f, f"NOT ({f})", f"({f}) IS NULL", f"{f} OR d53 > d122"])
        try:
            want = _ids(theirs, f)
        except Exception:  # noqa: BLE001  (pylance refuses it: lancepy must refuse it too)
            with pytest.raises(InvalidArgumentError):
                _ids(ours, f)
            continue
        assert _ids(ours, f) == want, f
        compared += 1
    assert compared > 250


def test_decimal_errors(both):
    ours, _ = both
    with pytest.raises(InvalidArgumentError, match="precision and a scale"):
        ours.to_table(filter="d53 = DECIMAL '12'")
    with pytest.raises(InvalidArgumentError):
        ours.to_table(filter="d53 = 12.0")  # a float literal (pylance refuses it as well)
