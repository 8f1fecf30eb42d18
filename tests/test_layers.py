"""The Python package's layers (python/lancepy/ARCHITECTURE.md): every import, including one
inside a function, goes to the same layer or a lower one, and no two modules import each
other, directly or through others. Imports under ``if TYPE_CHECKING:`` are for annotations
only and are not counted. This reads the sources; it imports nothing."""

from __future__ import annotations

import ast
import pathlib
from typing import Dict, List, Set, Tuple

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "python" / "lancepy"

#: Layer of each module, by the longest matching prefix (bottom = 0).
LAYERS: List[Tuple[str, int]] = [
    ("lancepy.exceptions", 0),
    ("lancepy._lancepy", 0),
    ("lancepy._core", 1),
    ("lancepy.filters", 1),
    ("lancepy.file", 1),
    ("lancepy._table", 2),
    ("lancepy._ops", 3),
    ("lancepy.blob", 3),
    ("lancepy.vector", 3),
    ("lancepy.query", 3),
    ("lancepy.sql", 4),
    ("lancepy.progress", 3),
    ("lancepy.schema", 3),
    ("lancepy.util", 4),
    ("lancepy.indices", 3),
    ("lancepy.udf", 3),
    ("lancepy.commit", 3),
    ("lancepy.arrow_dataset", 4),
    ("lancepy.fragment", 4),
    ("lancepy.scanner", 4),
    ("lancepy.stats", 4),
    ("lancepy.debug", 4),
    ("lancepy.merge_insert", 4),
    ("lancepy.optimize", 4),
    ("lancepy.session", 4),
    ("lancepy.dataset", 4),
    ("lancepy.torch", 5),
    ("lancepy.sampler", 5),
    ("lancepy._dataset", 5),
    ("lancepy.spark", 5),
    ("lancepy.cli", 5),
    ("lancepy.lance", 5),
    ("lancepy.__main__", 5),
    ("lancepy", 5),
]
NAMES = {0: "base", 1: "core", 2: "table", 3: "operations", 4: "public", 5: "integrations"}


def layer_of(module: str) -> int:
    best = max((p for p, _ in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return dict(LAYERS)[best]


def module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def runtime_imports(path: pathlib.Path, known: Set[str], me: str = "") -> Dict[str, int]:
    """Modules of the package that `path` (module `me`) imports when it runs → first line."""
    me = me or module_name(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    found: Dict[str, int] = {}

    def resolve(name: str) -> str:
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    def add(name: str, line: int) -> None:
        if name.startswith("lancepy"):
            target = resolve(name)
            if target != me:
                found.setdefault(target, line)

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(alias.name, child.lineno)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    module = ".".join(base + ([child.module] if child.module else []))
                else:
                    module = child.module or ""
                for alias in child.names:
                    # `from lancepy import blob` imports the module lancepy.blob.
                    full = f"{module}.{alias.name}"
                    add(full if resolve(full) == full else module, child.lineno)
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return found


def graph() -> Dict[str, Dict[str, int]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    known = {module_name(p) for p in paths} | {"lancepy._lancepy"}
    return {module_name(p): runtime_imports(p, known) for p in paths}


def test_imports_go_down_the_layers() -> None:
    wrong = []
    for module, imports in sorted(graph().items()):
        for target, line in sorted(imports.items()):
            if layer_of(target) > layer_of(module):
                wrong.append(
                    f"{module} ({NAMES[layer_of(module)]}) imports {target} ({NAMES[layer_of(target)]}) at line {line}"
                )
    assert not wrong, "imports going up the layers:\n" + "\n".join(wrong)


def test_no_import_cycles() -> None:
    g = {m: set(deps) for m, deps in graph().items()}
    # The package's __init__ re-exports everything: only cycles that do not pass through it.
    g.pop("lancepy", None)
    for deps in g.values():
        deps.discard("lancepy")
    state: Dict[str, int] = {}
    stack: List[str] = []
    cycles: List[List[str]] = []

    def dfs(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(g.get(m, ())):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                dfs(d)
        stack.pop()
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            dfs(m)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


#: Most modules stay under 1,000 lines. ``lancepy.dataset`` is the public API in pylance's
#: shape: ~90 methods whose signatures and docstrings are the API; their logic lives below.
LIMITS = {"lancepy.dataset": 1175}


def test_no_module_is_huge() -> None:
    big = {
        module_name(p): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > LIMITS.get(module_name(p), 1000)
    }
    assert not big, f"modules over their size limit: {big}"


def test_every_module_has_a_layer() -> None:
    for module in graph():
        assert layer_of(module) in NAMES, module


def test_the_checker_sees_an_upward_import(tmp_path: pathlib.Path) -> None:
    """The analysis itself: a function-level import counts, a TYPE_CHECKING one does not."""
    src = tmp_path / "m.py"
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from lancepy.dataset import LanceDataset\n"
        "def f():\n    from lancepy import dataset\n    from lancepy._table import commit as c\n"
    )
    got = runtime_imports(src, {"lancepy.dataset", "lancepy._table.commit", "lancepy._table"}, "lancepy._table.m")
    assert set(got) == {"lancepy.dataset", "lancepy._table.commit"}
    assert layer_of("lancepy._table.commit") == 2 and layer_of("lancepy.torch.loader") == 5


#: A dataset's private state and the private methods of ``LanceDataset``: the table and
#: operations layers take a ``DatasetView`` (``lancepy._table.snapshot``) instead, and never
#: read these from another object (``self._x`` of their own classes is theirs).
DATASET_PRIVATE = {
    "_loaded", "_per_version", "_snapshot", "_view", "_commit", "_schema", "_store", "_uri", "_storage_options",
    "_base_store_params", "_session", "_commit_lock", "_io", "_set_loaded", "_refresh_latest", "_take_rows",
    "_index_entries", "_fragment_metadata", "_snapshot_rows", "_field_ids_by_path", "_fragment_id_set", "_pinned",
}
#: The public layer's classes, which the lower layers never take as an argument.
PUBLIC_CLASSES = ("LanceDataset", "LanceFragment", "LanceScanner")


def dataset_uses(path: pathlib.Path) -> List[Tuple[int, str]]:
    """Where `path` reads a dataset's private state or takes a public-layer object: an
    attribute of :data:`DATASET_PRIVATE` read from anything but ``self`` / ``cls``, a
    parameter annotated with a class of :data:`PUBLIC_CLASSES` or named ``ds``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in DATASET_PRIVATE:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append((node.lineno, f"reads .{node.attr}"))
        elif isinstance(node, ast.arg):
            text = ast.unparse(node.annotation) if node.annotation is not None else ""
            if node.arg == "ds" or any(c in text for c in PUBLIC_CLASSES):
                found.append((node.lineno, f"takes {node.arg}: {text or '?'}"))
    return found


def lower_modules() -> Dict[str, pathlib.Path]:
    return {
        module_name(p): p
        for p in PACKAGE.rglob("*.py")
        if module_name(p).startswith(("lancepy._ops.", "lancepy._table."))
    }


def test_operations_and_table_layers_take_a_view_not_a_dataset() -> None:
    modules = lower_modules()
    assert "lancepy._ops.take" in modules and "lancepy._table.commit" in modules
    bad = {m: uses for m, p in modules.items() if (uses := dataset_uses(p))}
    assert not bad, "modules reading a dataset instead of a DatasetView:\n" + "\n".join(
        f"{m}:{line}: {what}" for m, uses in sorted(bad.items()) for line, what in uses
    )


def test_the_view_checker_sees_a_dataset_read(tmp_path: pathlib.Path) -> None:
    """The analysis itself, on planted violations and on what is allowed."""
    src = tmp_path / "m.py"
    src.write_text(
        "def f(view, other: 'LanceDataset', ds):\n"
        "    a = view.loaded\n"
        "    b = other._loaded.manifest\n"
        "    return getattr(view, 'x'), view.state.snapshot, other._per_version\n"
        "class C:\n"
        "    def g(self):\n"
        "        return self._store\n"
    )
    assert sorted(dataset_uses(src)) == [
        (1, "takes ds: ?"), (1, "takes other: 'LanceDataset'"), (3, "reads ._loaded"), (4, "reads ._per_version")
    ]


def hand_coded_protobuf(path: pathlib.Path) -> List[str]:
    """Where a module encodes or decodes protobuf wire format by hand (issue 23: every index
    message goes through prost in Rust). Per function (and the module's top level): a
    function named like a varint helper; a field key built as ``field << 3 | wire``; a key
    split by ``>> 3`` and ``& 7`` together; varint bytes built or read with ``& 0x7F`` and
    ``0x80`` together."""

    def const(node: ast.AST, *values: int) -> bool:
        return isinstance(node, ast.Constant) and type(node.value) is int and node.value in values

    found: List[str] = []

    def scan(scope: ast.AST, name: str) -> None:
        seen: Set[str] = set()
        todo = list(ast.iter_child_nodes(scope))
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if "varint" in node.name.lower() and not isinstance(node, ast.ClassDef):
                    found.append(f"{path.name}:{node.lineno}: a varint helper {node.name}()")
                scan(node, node.name)
                continue
            if isinstance(node, ast.BinOp):
                op, left, right = node.op, node.left, node.right
                if isinstance(op, ast.BitOr) and isinstance(left, ast.BinOp) and isinstance(left.op, ast.LShift):
                    if const(left.right, 3):
                        found.append(f"{path.name}:{node.lineno}: a field key built by hand in {name}")
                if isinstance(op, ast.RShift) and const(right, 3):
                    seen.add("split")
                if isinstance(op, ast.BitAnd) and const(right, 7):
                    seen.add("wire")
                if isinstance(op, ast.BitAnd) and const(right, 0x7F):
                    seen.add("7 bits")
                if isinstance(op, (ast.BitAnd, ast.BitOr)) and (const(right, 0x80) or const(left, 0x80)):
                    seen.add("continuation")
            todo.extend(ast.iter_child_nodes(node))
        if {"split", "wire"} <= seen:
            found.append(f"{path.name}: a field key split by hand (>> 3, & 7) in {name}")
        if {"7 bits", "continuation"} <= seen:
            found.append(f"{path.name}: varint bytes coded by hand (& 0x7F, 0x80) in {name}")

    scan(ast.parse(path.read_text()), "<module>")
    return found


def test_no_protobuf_is_coded_by_hand() -> None:
    found = [f for p in sorted(PACKAGE.rglob("*.py")) for f in hand_coded_protobuf(p)]
    assert not found, "protobuf wire format coded in Python (use the prost bindings in _lancepy):\n" + "\n".join(found)


def test_the_protobuf_checker_sees_hand_coding(tmp_path: pathlib.Path) -> None:
    """The scan itself: the helpers lancepy had before the prost bindings are each caught;
    shifts and masks for other purposes are not."""
    planted = {
        "helper.py": "def _uvarint(v):\n    return bytes([v])\n",
        "key.py": "def key(field, wire):\n    return bytes([field << 3 | wire])\n",
        "walk.py": "def walk(buf, i):\n    k = buf[i]\n    return k >> 3, k & 7\n",
        "bytes.py": (
            "def enc(v):\n    out = bytearray()\n    while v >= 0x80:\n"
            "        out.append((v & 0x7F) | 0x80)\n        v >>= 7\n    out.append(v)\n    return bytes(out)\n"
        ),
    }
    for name, text in planted.items():
        (tmp_path / name).write_text(text)
        assert hand_coded_protobuf(tmp_path / name), name
    clean = tmp_path / "clean.py"
    clean.write_text(
        "def f(frag, off, nbits, flags):\n"
        "    addr = frag << 32 | off\n    nbytes = (nbits + 7) >> 3\n    return addr, nbytes, flags & 0x80\n"
        "codec = 'varint_delta_v1'\n"
    )
    assert hand_coded_protobuf(clean) == []
