"""LIKE patterns as regular expressions (arrow-rs's translation, for RE2), and the check that
refuses regular-expression syntax where Rust's regex crate and RE2 disagree.
"""

from __future__ import annotations

from typing import List

from lancepy.exceptions import NotSupportedError

_RE2_META = set("\\.+*?()|[]{}^$#&-~")


def _like_regex(pattern: str) -> str:
    """arrow-rs's translation of a LIKE pattern to a regular expression (for RE2)."""
    out = ["(?s)"]
    i = 0
    n = len(pattern)
    if pattern.startswith("%"):
        i = 1
    else:
        out.append("^")
    body: List[str] = []
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 < n:
                nxt = pattern[i + 1]
                body.append("\\" + nxt if nxt in _RE2_META else nxt)
                i += 2
                continue
            body.append("\\\\")  # a trailing backslash is a literal backslash
        elif c == "%":
            body.append(".*")
        elif c == "_":
            body.append(".")
        else:
            body.append("\\" + c if c in _RE2_META else c)
        i += 1
    text = "".join(body)
    if body and body[-1] == ".*":
        text = "".join(body[:-1])
    else:
        text += "$"
    return "".join(out) + text


_REGEX_FLAGS = set("imsU")


def _check_regex(pattern: str) -> None:
    """Refuses regex syntax where Rust's regex crate and RE2 disagree."""
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt.isalnum():
                raise NotSupportedError(
                    f"filters: the regular expression escape \\{nxt} is not supported (Unicode classes differ)"
                )
            i += 2
            continue
        i += 1
    for bad in ("&&", "~~", "(?<", "(?P<", "(?="):
        if bad in pattern:
            raise NotSupportedError(f"filters: the regular expression syntax {bad!r} is not supported")
    if "[" in pattern and "--" in pattern:
        raise NotSupportedError("filters: class subtraction (--) in regular expressions is not supported")
