"""`lancepy._core.allocator.lean`: index builds hand freed memory back at once while they run
and restore the allocator's setting after (nested, concurrent and failing uses alike)."""

from __future__ import annotations

import threading

import pytest

from lancepy import _lancepy
from lancepy._core.allocator import lean, leanly


def _delay() -> int:
    old = _lancepy.allocator_purge_delay(0)
    _lancepy.allocator_purge_delay(old)
    return old


def test_lean_sets_and_restores_nested_and_on_error():
    before = _delay()
    assert before > 0  # (mimalloc's default keeps freed memory a while)
    with lean():
        assert _delay() == 0
        with lean():
            assert _delay() == 0
        assert _delay() == 0
    assert _delay() == before
    with pytest.raises(RuntimeError):
        with lean():
            raise RuntimeError("build failed")
    assert _delay() == before

    @leanly
    def build(x):
        assert _delay() == 0
        return x + 1

    assert build(1) == 2 and _delay() == before


def test_lean_concurrent_uses_restore_once_all_left():
    before = _delay()
    inside, release = threading.Barrier(3), threading.Event()

    def worker():
        with lean():
            inside.wait()
            release.wait()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert _delay() == 0
    release.set()
    for t in threads:
        t.join()
    assert _delay() == before
