"""lancepy's datasets as ``pyarrow.dataset`` objects, as pylance's are.

:class:`~lancepy.LanceDataset`, :class:`~lancepy.LanceFragment` and
:class:`~lancepy.LanceScanner` subclass ``pyarrow.dataset.Dataset``, ``Fragment`` and
``Scanner`` so that consumers that dispatch on those types (DuckDB's replacement scans,
Polars' ``scan_pyarrow_dataset``, ...) take them; those consumers then call the lancepy
methods (``scanner(columns=, filter=<pyarrow.compute.Expression>)``, ``to_reader``, ...),
and nothing of pyarrow's C++ dataset machinery reads a Lance file.

pyarrow's classes are Cython classes whose methods read a C++ object that a lancepy
instance never has: an inherited method that lancepy did not override would dereference a
null pointer. The mixins here override every public member of pyarrow's three classes that
the lancepy classes do not build otherwise: ``sort_by``, ``join`` and ``join_asof`` return
pyarrow's ``InMemoryDataset`` (as pyarrow's do), the others raise
:class:`~lancepy.exceptions.NotSupportedError`;
``tests/test_arrow_dataset.py`` calls every public member in a subprocess.
"""

from __future__ import annotations

import copy
import copyreg
from typing import Any, List, NoReturn, Optional

import pyarrow as pa
import pyarrow.dataset as pads

from lancepy._core.iostats import dataset_tracker, owner_tracker, track_io
from lancepy.exceptions import InvalidArgumentError, UnsupportedError

#: The pyarrow classes lancepy's dataset, fragment and scanner are instances of.
ArrowDataset = pads.Dataset
ArrowFragment = pads.Fragment
ArrowScanner = pads.Scanner


def _refused(what: str, instead: str) -> NoReturn:
    raise UnsupportedError(f"{what} is not supported by lancepy: {instead}")


def _table_of(dataset: Any, what: str) -> pa.Table:
    """The rows of the right side of a join: a dataset (pyarrow's or Lance's) or a table."""
    if isinstance(dataset, pa.Table):
        return dataset
    if isinstance(dataset, pads.Dataset):
        return dataset.to_table()
    raise TypeError(f"{what}: right_dataset must be a pyarrow.dataset.Dataset, got {type(dataset).__name__}")


@track_io(dataset_tracker)
class DatasetArrowMembers:
    """The members of ``pyarrow.dataset.Dataset`` that a Lance dataset does not build, and
    its copy (pyarrow's base would go through pickling, which reopens the version)."""

    def __copy__(self) -> Any:
        # The same version's snapshot and caches, shared (``LanceDataset._pinned`` views);
        # pickling (``__reduce__``) still reopens the version from storage, for other processes.
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    @property
    def partition_expression(self) -> Any:
        """Lance datasets are not partitioned: raises ``NotSupportedError``."""
        _refused("partition_expression", "a Lance dataset has no partitioning")

    def filter(self, expression: Any) -> "FilteredDataset":
        """The rows matching `expression` (a ``pyarrow.compute.Expression``), lazily, as
        pyarrow's ``Dataset.filter``: nothing is read until the result is scanned, and every
        read of it (``scanner``, ``to_table``, ``to_batches``, ``count_rows``, ``head``,
        ``take``, further ``filter`` calls) applies the expression. The view is read-only and
        pinned to this dataset's version."""
        return FilteredDataset(self, expression)

    def sort_by(self, sorting: Any, *, null_placement: Optional[str] = None) -> pads.InMemoryDataset:
        """The dataset's rows sorted (pyarrow's ``Dataset.sort_by``: `sorting` is a column
        name or ``[(name, "ascending" | "descending"[, null placement]), ...]``;
        `null_placement`, ``pyarrow.compute.SortOptions``' one option, is passed on when
        given), as pyarrow returns it: an ``InMemoryDataset`` holding every row. For a sorted
        read of part of the data, pass ``order_by=`` (with ``columns=`` / ``filter=``) to
        ``scanner`` or ``to_table``."""
        table = self.to_table()  # type: ignore[attr-defined]
        if null_placement is None:
            return pads.InMemoryDataset(table.sort_by(sorting))
        return pads.InMemoryDataset(table.sort_by(sorting, null_placement=null_placement))

    def join(self, right_dataset: Any, keys: Any, right_keys: Any = None, join_type: str = "left outer",
             left_suffix: Any = None, right_suffix: Any = None, coalesce_keys: bool = True,
             use_threads: bool = True) -> pads.InMemoryDataset:
        """This dataset joined with `right_dataset` (any ``pyarrow.dataset.Dataset``, a Lance
        one too), by pyarrow's hash join, with pyarrow's arguments and defaults; the result
        is an ``InMemoryDataset``, as pyarrow's ``Dataset.join`` returns (pylance has none)."""
        return pads.InMemoryDataset(
            self.to_table().join(  # type: ignore[attr-defined]
                _table_of(right_dataset, "join"), keys, right_keys=right_keys, join_type=join_type,
                left_suffix=left_suffix, right_suffix=right_suffix, coalesce_keys=coalesce_keys,
                use_threads=use_threads,
            )
        )

    def join_asof(self, right_dataset: Any, on: Any, by: Any, tolerance: Any, right_on: Any = None,
                  right_by: Any = None) -> pads.InMemoryDataset:
        """pyarrow's as-of join with `right_dataset` (see ``pyarrow.Table.join_asof``), as an
        ``InMemoryDataset``."""
        return pads.InMemoryDataset(
            self.to_table().join_asof(  # type: ignore[attr-defined]
                _table_of(right_dataset, "join_asof"), on, by, tolerance, right_on=right_on, right_by=right_by
            )
        )

    def _get_fragments(self, filter: Any) -> Any:
        """pyarrow's internal fragment listing: use ``get_fragments``."""
        _refused("LanceDataset._get_fragments", "use get_fragments()")

    def _scanner_options(self, options: Any) -> Any:
        """pyarrow's internal scanner defaults: use ``scanner``."""
        _refused("LanceDataset._scanner_options", "use scanner()")


class FilteredDataset(DatasetArrowMembers, ArrowDataset):
    """A Lance dataset seen through a row filter (what :meth:`LanceDataset.filter` returns,
    as pyarrow's ``Dataset.filter`` does): a read-only ``pyarrow.dataset.Dataset`` whose
    reads all apply the expression, ANDed with the filter each read passes. Pinned to the
    dataset's version; it pickles as that version and the expression."""

    def __init__(self, dataset: Any, expression: Any) -> None:
        if not isinstance(expression, pads.Expression):
            raise TypeError(
                f"filter() takes a pyarrow.compute.Expression (as pyarrow's Dataset.filter), got {type(expression).__name__}"
            )
        self._dataset = copy.copy(dataset)  # this version, whatever the original object does next
        self._expression = expression

    def __reduce__(self) -> Any:
        return FilteredDataset, (self._dataset, self._expression)

    def __setstate__(self, state: Any) -> None:
        _refused("FilteredDataset.__setstate__", "pickle the view itself")

    def __repr__(self) -> str:
        return f"FilteredDataset({self._dataset!r}, filter={self._expression})"

    @property
    def schema(self) -> pa.Schema:
        return self._dataset.schema

    @property
    def expression(self) -> Any:
        """The view's filter."""
        return self._expression

    def _and(self, filter: Any) -> Any:
        if filter is None:
            return self._expression
        if isinstance(filter, pads.Expression):
            return self._expression & filter
        raise InvalidArgumentError(
            "a filtered dataset (Dataset.filter) takes pyarrow.compute.Expression filters, "
            f"got {type(filter).__name__}: filter the LanceDataset itself to use SQL"
        )

    @staticmethod
    def _plain(kwargs: Any) -> Any:
        for name in ("nearest", "full_text_query"):
            if kwargs.get(name) is not None:
                _refused(f"FilteredDataset.scanner({name}=)", "search the LanceDataset with filter= (and prefilter=True)")
        return kwargs

    def filter(self, expression: Any) -> "FilteredDataset":
        """The rows of this view that also match `expression`."""
        return FilteredDataset(self._dataset, self._and(expression))

    def scanner(self, columns: Any = None, filter: Any = None, **kwargs: Any) -> Any:
        """``LanceDataset.scanner`` with this view's filter (ANDed with `filter`)."""
        return self._dataset.scanner(columns=columns, filter=self._and(filter), **self._plain(kwargs))

    def to_table(self, columns: Any = None, filter: Any = None, **kwargs: Any) -> pa.Table:
        return self.scanner(columns, filter, **kwargs).to_table()

    def to_batches(self, columns: Any = None, filter: Any = None, **kwargs: Any) -> Any:
        return self.scanner(columns, filter, **kwargs).to_batches()

    def count_rows(self, filter: Any = None, **kwargs: Any) -> int:
        return self._dataset.count_rows(filter=self._and(filter), **self._plain(kwargs))

    def head(self, num_rows: int, columns: Any = None, filter: Any = None, **kwargs: Any) -> pa.Table:
        return self._dataset.head(num_rows, columns=columns, filter=self._and(filter), **self._plain(kwargs))

    def take(self, indices: Any, columns: Any = None, filter: Any = None, **kwargs: Any) -> pa.Table:
        """Rows at `indices`: positions among the rows this view (and `filter`) keeps."""
        return self.scanner(columns, filter, **kwargs).take(indices)

    def get_fragments(self, filter: Optional[Any] = None) -> Any:
        """Not built: a fragment would read its rows unfiltered."""
        _refused("FilteredDataset.get_fragments", "scan the view, or filter the fragments of the LanceDataset")

    def replace_schema(self, schema: Any) -> Any:
        """A view's schema is its dataset's: raises ``NotSupportedError``."""
        _refused("FilteredDataset.replace_schema", "a filtered view has its dataset's schema")


@track_io(owner_tracker)
class FragmentArrowMembers:
    """The members of ``pyarrow.dataset.Fragment`` that a Lance fragment does not build."""

    @property
    def physical_schema(self) -> pa.Schema:
        """Not built (nor in pylance): use ``schema`` (every fragment has the dataset's)."""
        _refused("LanceFragment.physical_schema", "use LanceFragment.schema")

    @property
    def partition_expression(self) -> Any:
        """Lance fragments are not partitioned: raises ``NotSupportedError``."""
        _refused("LanceFragment.partition_expression", "a Lance dataset has no partitioning")


@track_io(owner_tracker)
class ScannerArrowMembers:
    """The members of ``pyarrow.dataset.Scanner`` that a Lance scanner builds or refuses
    beyond its own: pyarrow's constructors are refused (use ``LanceDataset.scanner``)."""

    # pyarrow's Scanner pickles (and so copies) its C++ state, which a Lance scanner has not:
    # a Lance scanner copies and pickles its own attributes (the dataset pickles as its URI
    # and version).
    def __copy__(self) -> Any:
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __reduce__(self) -> Any:
        return copyreg.__newobj__, (type(self),), dict(self.__dict__)

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, dict):
            raise UnsupportedError("a LanceScanner's state is a dict of its attributes")
        self.__dict__.update(state)

    @staticmethod
    def from_dataset(*args: Any, columns: Any = None, filter: Any = None, batch_size: Any = None,
                     batch_readahead: Any = None, fragment_readahead: Any = None, fragment_scan_options: Any = None,
                     use_threads: bool = True, cache_metadata: bool = True, memory_pool: Any = None) -> Any:
        """Not built: use ``LanceDataset.scanner``."""
        _refused("LanceScanner.from_dataset", "use LanceDataset.scanner()")

    @staticmethod
    def from_fragment(*args: Any, schema: Any = None, columns: Any = None, filter: Any = None, batch_size: Any = None,
                     batch_readahead: Any = None, fragment_readahead: Any = None, fragment_scan_options: Any = None,
                     use_threads: bool = True, cache_metadata: bool = True, memory_pool: Any = None) -> Any:
        """Not built: use ``LanceFragment.scanner``."""
        _refused("LanceScanner.from_fragment", "use LanceFragment.scanner()")

    @staticmethod
    def from_batches(*args: Any, schema: Any = None, columns: Any = None, filter: Any = None, batch_size: Any = None,
                     batch_readahead: Any = None, fragment_readahead: Any = None, fragment_scan_options: Any = None,
                     use_threads: bool = True, cache_metadata: bool = True, memory_pool: Any = None) -> Any:
        """Not built: a Lance scanner reads a Lance dataset; use ``pyarrow.dataset.Scanner``."""
        _refused("LanceScanner.from_batches", "use pyarrow.dataset.Scanner.from_batches")

    def scan_batches(self) -> List[pa.RecordBatch]:
        """The scan's record batches (a list, as pylance returns; not pyarrow's tagged
        batches, which carry pyarrow fragments)."""
        return list(self.to_batches())  # type: ignore[attr-defined]

    def take(self, indices: Any) -> pa.Table:
        """Rows at `indices` (positions in the scan's output), in the order given."""
        return self.to_table().take(indices)  # type: ignore[attr-defined]
