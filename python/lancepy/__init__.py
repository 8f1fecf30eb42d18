"""lancepy: an independent implementation of the Lance columnar format.

The Rust core (``lancepy._lancepy``) reads and writes Lance files, manifests, transactions and
deletion files; this package is the Python API on top: datasets (:func:`write_dataset`,
:func:`dataset`), versions, commits and schema evolution. Arrow data crosses the boundary zero-copy through the Arrow PyCapsule
interface.

The package is layered (``ARCHITECTURE.md`` next to this file; ``tests/test_layers.py``
enforces it): ``_core`` (URIs, schemas, input conversion, filters) <- ``_table`` (versions,
transactions, the commit loop) <- ``_ops`` (write, take, mutations, indices) <- the public
``dataset`` / ``scanner`` / ``fragment`` modules <- ``torch``, ``spark``, ``cli``.
"""

from __future__ import annotations

from lancepy import exceptions
from lancepy._lancepy import __version__
from lancepy.file import LanceFileReader, LanceFileWriter
from lancepy import fragment
from lancepy._core.storage import io_counts, reader_cache_info, set_reader_cache_limits
from lancepy._table.bases import DatasetBasePath
from lancepy.dataset import LanceDataset, LanceOperation, LanceScanner, Transaction, dataset, write_dataset
from lancepy.fragment import FragmentMetadata, LanceFragment
from lancepy.session import Session
from lancepy.blob import BlobColumn
from lancepy.progress import IndexProgress
from lancepy.schema import json_to_schema, schema_to_json
from lancepy.util import sanitize_ts
from lancepy.udf import batch_udf

__all__ = [
    "Session",
    "__version__",
    "exceptions",
    "LanceFileReader",
    "LanceFileWriter",
    "LanceDataset",
    "DatasetBasePath",
    "LanceOperation",
    "Transaction",
    "LanceScanner",
    "LanceFragment",
    "FragmentMetadata",
    "IndexProgress",
    "BlobColumn",
    "json_to_schema",
    "schema_to_json",
    "dataset",
    "write_dataset",
    "batch_udf",
    "fragment",
    "io_counts",
    "reader_cache_info",
    "set_reader_cache_limits",
]
