"""Index names kept under pylance's module path ``lance.indices``."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
import os
from typing import Any, Dict, Union

__all__ = ["IndexConfig", "IndexFileVersion", "build_lindera_dictionary"]


@dataclass
class IndexConfig:
    """An index type with its parameters, for ``create_scalar_index(column, IndexConfig(...))``
    (pylance's ``lance.indices.IndexConfig``). lancepy takes ``IndexConfig("json",
    {"target_index_type": "btree" | "bitmap", "path": "<JSONPath>"})``: an index over the value
    at one path of a JSON column (optional ``target_data_type``: ``"Boolean"``, ``"Int64"``,
    ``"Float64"`` or ``"Utf8"``, else the first non-null value's type); and the built-in types
    by name with empty parameters (``IndexConfig("btree", {})``)."""

    index_type: str
    parameters: Dict[str, Any]


class IndexFileVersion(str, Enum):
    """The layout of a vector index's files: ``V3`` (what lancepy writes and reads) or
    ``LEGACY`` (pylance's older one: neither written nor read by lancepy)."""

    LEGACY = "Legacy"
    V3 = "V3"


def build_lindera_dictionary(source: Union[str, "os.PathLike[str]"], output: Union[str, "os.PathLike[str]"]) -> None:
    """Compiles a lindera dictionary for the ``lindera/<model>`` tokenizers of an INVERTED
    index (``create_scalar_index(column, "INVERTED", base_tokenizer="lindera/<model>")``).

    `source` holds a dictionary in MeCab's format (``*.csv`` entries, ``matrix.def``,
    ``char.def``, ``unk.def``) and lindera's ``metadata.json`` describing it; the compiled
    files are written to `output`. A model is a directory
    ``$LANCE_LANGUAGE_MODEL_HOME/lindera/<model>`` whose ``config.yml`` names the compiled
    dictionary (``segmenter: {mode: normal, dictionary: <output>}``), as pylance 14 reads it;
    both libraries read the same dictionary. Raises
    :class:`~lancepy.exceptions.InvalidArgumentError` for sources lindera cannot build."""
    from lancepy import _lancepy

    _lancepy.build_lindera_dictionary(os.fspath(source), os.fspath(output))
