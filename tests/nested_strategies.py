"""Hypothesis strategies for random nested Arrow schemas and data, shared by the nested tests
of file versions 2.0 (test_file_v2_0_nested.py) and 2.1/2.2 (test_nested.py)."""

from __future__ import annotations

from typing import Any, List

import pyarrow as pa
from hypothesis import strategies as st


def nested_types(leaf_types: List[pa.DataType], depth: int) -> Any:
    """Types of depth <= `depth`: leaves, lists, large lists and structs of them."""
    leaves = st.sampled_from(leaf_types)
    if depth == 0:
        return leaves
    inner = nested_types(leaf_types, depth - 1)
    return st.one_of(
        leaves,
        inner.map(pa.list_),
        inner.map(pa.large_list),
        st.lists(inner, min_size=1, max_size=3).map(lambda ts: pa.struct([(f"f{i}", t) for i, t in enumerate(ts)])),
    )


def nested_value(draw: Any, t: pa.DataType, null_structs: bool, null_vector_items: bool, null_p: float = 0.2) -> Any:
    """One Python value of type `t`, null with probability `null_p` at every level (structs
    only if `null_structs`; fixed-size-list items only if `null_vector_items`)."""
    if (null_structs or not pa.types.is_struct(t)) and draw(st.floats(0, 1)) < null_p:
        return None

    def value(child: pa.DataType) -> Any:
        return nested_value(draw, child, null_structs, null_vector_items, null_p)

    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [value(t.value_type) for _ in range(draw(st.integers(0, 4)))]
    if pa.types.is_fixed_size_list(t):
        item = st.floats(-1e6, 1e6, width=32)
        if null_vector_items:
            item = st.one_of(st.none(), item)
        return [draw(item) for _ in range(t.list_size)]
    if pa.types.is_struct(t):
        return {t.field(i).name: value(t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_boolean(t):
        return draw(st.booleans())
    if pa.types.is_integer(t):
        bits = t.bit_width
        return draw(st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1))
    if pa.types.is_floating(t):
        return draw(st.floats(allow_nan=False))
    if pa.types.is_string(t):
        return draw(st.text(max_size=8))
    return draw(st.binary(max_size=8))


def nested_table(draw: Any, leaf_types: List[pa.DataType], null_structs: bool, null_vector_items: bool) -> pa.Table:
    """A table of 1-3 random nested columns and 0-40 rows."""
    types = draw(st.lists(nested_types(leaf_types, 3), min_size=1, max_size=3))
    n = draw(st.integers(0, 40))
    cols = {
        f"c{i}": pa.array([nested_value(draw, t, null_structs, null_vector_items) for _ in range(n)], t)
        for i, t in enumerate(types)
    }
    return pa.table(cols)
