"""pylance's own test suite as the yardstick: runs pylance's test files against pylance and
against lancepy, and prints how many of the tests that pass on pylance pass on lancepy.

    python scripts/pylance_suite.py PATH/TO/pylance/python/python/tests [--files a.py b.py]
        [--timeout 900] [--json out.json] [--skip NODEID_PREFIX=REASON ...]

pylance's tests are not part of this repository: PATH is a checkout of them (for example
``git --git-dir=<mirror of lancedb/lance> archive HEAD python/python/tests | tar -x``). For
the lancepy run, an import hook makes ``import lance`` / ``import lance.X`` / ``from lance.X
import Y`` resolve to ``lancepy`` / ``lancepy.X``: aliasing only, nothing re-implemented, so a
name lancepy lacks fails as it would for a user. The pylance run does not see the hook. Each
file runs in its own pytest process per library (a file that hangs or crashes costs only its
own tests). Every test that fails on lancepy but passes on pylance is listed, grouped by the
first line of its error, most frequent first.

Only the tests that pass on pylance are counted. Tests that need object storage or network
(``integration``), large CPU or RAM (``slow``) or a GPU (``cuda`` / ``gpu``) are skipped by
pylance's own conftest unless its ``--run-*`` options are given, on both sides; ``--skip`` skips
more (the tests whose node id starts with that prefix, on both sides, through a small pytest
plugin that marks them skipped with the reason). The table's last column counts what was not
counted: skipped (by pylance's markers or ``--skip``) and failing on pylance itself.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The files of issue 24 (those that exist in the checkout are run).
DEFAULT_FILES = [
    "test_dataset.py",
    "test_fragment.py",
    "test_file.py",
    "test_schema_evolution.py",
    "test_optimize.py",
    "test_blob.py",
    "test_filter.py",
    "test_vector_index.py",
    "test_migration.py",
    "test_torch.py",
    "torch_tests",
]

#: Installed as ``sitecustomize`` for the lancepy run: `lance` and its submodules are
#: lancepy's modules under pylance's names.
ALIAS_HOOK = r'''
import importlib, importlib.abc, importlib.util, sys

class _LanceAsLancepy(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`lance[.X]` -> `lancepy[.X]` (the same module object under both names)."""

    def find_spec(self, name, path=None, target=None):
        if name != "lance" and not name.startswith("lance."):
            return None
        real = "lancepy" + name[len("lance"):]
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as e:
            if e.name == real:
                return None  # lancepy lacks it: "No module named 'lance.X'", as for a user
            raise
        spec = importlib.util.spec_from_loader(name, self, is_package=hasattr(module, "__path__"))
        spec.loader_state = module
        return spec

    def create_module(self, spec):
        return spec.loader_state

    def exec_module(self, module):
        pass

sys.meta_path.insert(0, _LanceAsLancepy())
'''

#: A pytest plugin (``-p pylance_suite_skips``, both sides): the tests named by ``--skip`` are
#: skipped with their reason.
SKIP_PLUGIN = r'''
import json, os
import pytest

def pytest_collection_modifyitems(config, items):
    skips = json.loads(os.environ.get("PYLANCE_SUITE_SKIPS", "{}"))
    for item in items:
        for prefix, reason in skips.items():
            if item.nodeid.startswith(prefix):
                item.add_marker(pytest.mark.skip(reason=f"{reason} (--skip)"))
                break
'''


def _collect(paths: List[str], tests_dir: str) -> List[str]:
    out = []
    for p in paths:
        full = os.path.join(tests_dir, p)
        if os.path.isdir(full):
            out += sorted(os.path.join(p, f) for f in os.listdir(full) if f.startswith("test_") and f.endswith(".py"))
        elif os.path.exists(full):
            out.append(p)
    return out


def _head(text: str) -> str:
    """The first line of an error, without this checkout's path (so groups do not depend on it)."""
    return text.strip().splitlines()[0].replace(ROOT + os.sep, "")[:160] if text.strip() else ""


def _outcomes(xml_path: str, rel: str) -> Tuple[Dict[str, Tuple[str, str]], Optional[str]]:
    """test id -> (outcome, first line of the error), and the file's collection error."""
    out: Dict[str, Tuple[str, str]] = {}
    collect_error = None
    if not os.path.exists(xml_path):
        return out, "no result (the run crashed or timed out)"
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        name = case.get("name", "")
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            el = case.find(tag)
            if el is not None:
                outcome = "skipped" if tag == "skipped" else "failed"
                text = el.get("message") or (el.text or "")
                message = _head(text) or tag
                break
        if not case.get("classname") and outcome == "failed":
            # A file that fails to import: its error is the last "E   ..." line of the report.
            el = case.find("error") if case.find("error") is not None else case.find("failure")
            lines = [ln[1:].strip() for ln in (el.text or "").splitlines() if ln.startswith("E ")] if el is not None else []
            collect_error = _head(lines[-1]) if lines else message
            continue
        out[f"{rel}::{case.get('classname', '')}::{name}"] = (outcome, message)
    return out, collect_error


def _run(side: str, rel: str, tests_dir: str, timeout: int, hook_dir: str,
         skips: Dict[str, str]) -> Tuple[Dict[str, Tuple[str, str]], Optional[str]]:
    env = dict(os.environ)
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env["PYLANCE_SUITE_SKIPS"] = json.dumps(skips)
    plugin_dir = os.path.join(hook_dir, "plugin")
    alias_dir = os.path.join(hook_dir, "alias")
    # The lancepy side measures this checkout's lancepy, whatever else the environment has installed.
    paths = [plugin_dir] + ([alias_dir, os.path.join(ROOT, "python")] if side == "lancepy" else [])
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths + [env.get("PYTHONPATH", "")] if p)
    with tempfile.TemporaryDirectory() as tmp:
        xml = os.path.join(tmp, "out.xml")
        cmd = [sys.executable, "-m", "pytest", rel, "-q", "-p", "no:cacheprovider", f"--junitxml={xml}", "-o", "addopts=",
               "-o", "junit_family=xunit1", "-p", "pylance_suite_skips"]
        try:
            subprocess.run(cmd, cwd=tests_dir, env=env, timeout=timeout, capture_output=True, text=True)
        except subprocess.TimeoutExpired:
            return _outcomes(xml, rel)[0], f"timed out after {timeout} s"
        return _outcomes(xml, rel)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests_dir", help="a checkout of pylance's python/python/tests")
    parser.add_argument("--files", nargs="+", default=DEFAULT_FILES, help="files or folders under tests_dir")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per file and library")
    parser.add_argument("--json", help="write every test's outcome on both sides here")
    parser.add_argument("--top", type=int, default=30, help="failure groups to list")
    parser.add_argument("--skip", action="append", default=[], metavar="NODEID_PREFIX=REASON",
                        help="skip these tests on both sides and do not count them (e.g. ones that need network)")
    args = parser.parse_args(argv)
    skips: Dict[str, str] = {}
    for item in args.skip:
        prefix, _, reason = item.partition("=")
        skips[prefix] = reason or "skipped by the runner"
    tests_dir = os.path.abspath(args.tests_dir)
    files = _collect(args.files, tests_dir)
    if not files:
        parser.error(f"none of {args.files} exists under {tests_dir}")
    results: Dict[str, Dict[str, object]] = {}
    groups: collections.Counter = collections.Counter()
    skip_reasons: collections.Counter = collections.Counter()
    rows = []
    with tempfile.TemporaryDirectory() as hook_dir:
        for sub, name, text in (("alias", "sitecustomize.py", ALIAS_HOOK), ("plugin", "pylance_suite_skips.py", SKIP_PLUGIN)):
            os.makedirs(os.path.join(hook_dir, sub))
            with open(os.path.join(hook_dir, sub, name), "w") as f:
                f.write(text)
        for rel in files:
            theirs, their_error = _run("pylance", rel, tests_dir, args.timeout, hook_dir, skips)
            ours, our_error = _run("lancepy", rel, tests_dir, args.timeout, hook_dir, skips)
            passing = [t for t, (o, _) in theirs.items() if o == "passed"]
            ok = [t for t in passing if ours.get(t, ("missing", ""))[0] == "passed"]
            for t in passing:
                if t not in ok:
                    outcome, message = ours.get(t, ("failed", our_error or "not run"))
                    groups[message if outcome != "skipped" else f"skipped on lancepy: {message}"] += 1
            skipped = sum(o == "skipped" for o, _ in theirs.values())
            failing = sum(o == "failed" for o, _ in theirs.values())
            for o, m in theirs.values():
                if o == "skipped":
                    skip_reasons[m] += 1
            rows.append((rel, len(passing), len(ok), our_error, their_error, skipped, failing))
            results[rel] = {"pylance": theirs, "lancepy": ours, "pylance_error": their_error, "lancepy_error": our_error}
            print(f"{rel}: {len(ok)}/{len(passing)}" + (f" ({our_error})" if our_error else ""), file=sys.stderr, flush=True)
    total_pass = sum(r[1] for r in rows)
    total_ok = sum(r[2] for r in rows)
    print("| file | pass on pylance | of those, pass on lancepy | parity | not counted: skipped / fail on pylance |")
    print("|---|---:|---:|---:|---:|")
    for rel, n, k, err, their_err, skipped, failing in rows:
        notes = []
        if err:
            notes.append(err if err.startswith(("timed out", "no result")) else f"import error: {err}")
        if their_err:
            notes.append(f"on pylance: {their_err}")
        note = f" ({'; '.join(notes)})" if notes else ""
        parity = f"{k / n:.0%}{note}" if n else f"-{note}"
        print(f"| {rel} | {n} | {k} | {parity} | {skipped} / {failing} |")
    print(f"| **total** | {total_pass} | {total_ok} | {total_ok / max(total_pass, 1):.1%} "
          f"| {sum(r[5] for r in rows)} / {sum(r[6] for r in rows)} |")
    print()
    print(f"Tests that pass on pylance and fail on lancepy, by first line of the error (top {args.top}):")
    print()
    for message, n in groups.most_common(args.top):
        print(f"- {n} x `{message}`")
    if skip_reasons:
        print()
        print("Skipped on pylance (not counted), by reason:")
        print()
        for message, n in skip_reasons.most_common():
            print(f"- {n} x {message}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
