"""The rest of the translator's node kinds (a mixin of
:class:`~lancepy.filters.translate._Translator`; ``self`` is the translator): IS [NOT] NULL /
TRUE / FALSE, LIKE / ILIKE, arithmetic, unary minus, ``||``, CAST and the supported functions.
"""

from __future__ import annotations

import datetime
from typing import Any, List

import pyarrow as pa
import pyarrow.compute as pc

from lancepy.exceptions import InvalidArgumentError, NotSupportedError
from lancepy._core.schema import is_json_type, is_stored_json_field
from lancepy.filters.casts import arrow_type_from_string, _cast, _sql_type
from lancepy.filters.parsing import _Sql, _dialect
from lancepy.filters.patterns import _REGEX_FLAGS, _check_regex, _like_regex
from lancepy.filters.typed import (
    _INT_RANGE,
    _V,
    _call,
    _coalesce_false,
    _comparison_type,
    _const,
    _is_float,
    _is_int,
    _is_null_type,
    _is_num,
    _is_str,
    _null_bool,
    _num_common,
)
from lancepy.filters.udfs import JSON_FUNCTIONS, _udf_array_has, _udf_array_has_set, _udf_case, _udf_fmod, _udf_int_mod, _udf_json


class _Functions:
    """IS, LIKE, arithmetic, ``||``, CAST and functions (mixed into :class:`_Translator`)."""

    # -- lists and JSON -----------------------------------------------------------------

    def list_length(self, node: Any, name: str) -> _V:
        """``array_length(list[, 1])`` / ``list_length`` (the elements of each list as UInt64,
        NULL for a NULL list, as DataFusion) and ``array_empty`` / ``empty`` (its length = 0)."""
        from sqlglot import exp

        if isinstance(node, exp.ArraySize):
            args = [node.this] + ([node.expression] if node.args.get("expression") is not None else [])
            name = "array_length"
        else:
            args = list(node.expressions)
        most = 1 if name in ("array_empty", "empty") else 2
        if not 1 <= len(args) <= most:
            raise InvalidArgumentError(f"filters: {name} takes {'one argument' if most == 1 else 'one or two arguments'}")
        lst = self.value(args[0])
        if len(args) == 2:
            dim = self.value(args[1])
            if dim.const is None or not _is_int(dim.type) or dim.const.as_py() != 1:
                raise NotSupportedError(f"filters: {name} of a dimension other than a constant 1 is not supported")
        if _is_null_type(lst.type):  # (pylance fails on every batch)
            raise InvalidArgumentError(f"filters: {name} does not support type 'Null'")
        if not (pa.types.is_list(lst.type) or pa.types.is_large_list(lst.type) or pa.types.is_fixed_size_list(lst.type)):
            raise InvalidArgumentError(f"filters: {name} needs a list, got {lst.type}")
        length = _call("list_value_length", [lst], pa.int64() if pa.types.is_large_list(lst.type) else pa.int32())
        if name in ("array_empty", "empty"):
            return _call("equal", [length, _const(pa.scalar(0, length.type))], pa.bool_())
        return _call("cast", [length], pa.uint64(), pc.CastOptions.safe(pa.uint64()))

    def array_has_set(self, list_node: Any, wanted_node: Any, every: bool, node: Any) -> _V:
        """``array_has_any`` / ``array_has_all`` (`every`) of a list and a constant array."""
        from sqlglot import exp

        what = "array_has_all" if every else "array_has_any"
        lst = self.value(list_node)
        if not (pa.types.is_list(lst.type) or pa.types.is_large_list(lst.type)):
            raise InvalidArgumentError(f"filters: {what} needs a list, got {lst.type}")
        vt = lst.type.value_type
        if _is_float(vt):
            raise NotSupportedError(f"filters: {what} on lists of floats is not supported")
        if isinstance(wanted_node, exp.Array) or (
            isinstance(wanted_node, exp.Anonymous) and wanted_node.name.lower() == "make_array"
        ):
            elements = list(wanted_node.expressions)
        else:
            raise NotSupportedError(f"filters: {what} needs a constant array (ARRAY[...]) as its second argument")
        values = []
        for e in elements:
            v = self.value(e)
            if v.const is None:
                raise NotSupportedError(f"filters: {what} needs constant array elements, got {e.sql(dialect=_dialect())}")
            if _is_null_type(v.type) or not v.const.is_valid:
                values.append(None)
                continue
            if (_is_int(vt) and _is_int(v.type)) or (_is_str(vt) and _is_str(v.type)):
                v = _cast(v, vt, _Sql(node))  # a constant of the list's kind takes its type (or fails)
            else:
                v = _cast(v, _comparison_type(vt, v.type, _Sql(node)), _Sql(node))
            if v.type != vt:
                raise NotSupportedError(f"filters: {what} of {v.type} values in a list of {vt} is not supported")
            values.append(v.const.as_py())
        wanted = _const(pa.scalar(values, lst.type))
        return _call(_udf_array_has_set(lst.type, every), [lst, wanted], pa.bool_())

    def json_function(self, name: str, args: List[Any]) -> _V:
        """A JSON function (``json_extract(j, '$.a')``, ``json_get_int(j, 'k')``, ...) of a JSON
        column (or of ``json_get``'s JSONB) and constant string arguments."""
        want = 3 if name == "json_array_contains" else 2
        if len(args) != want:
            raise InvalidArgumentError(f"filters: {name} takes {want} arguments, got {len(args)}")
        from sqlglot import exp

        out_type = JSON_FUNCTIONS[name]
        first = args[0]
        while isinstance(first, exp.Paren):
            first = first.this
        parts = self.column_parts(first) if isinstance(first, exp.Column) and len(first.parts) == 1 else None
        t0 = self.column_type(parts) if parts else None
        if parts and t0 is not None and (is_json_type(t0) or is_stored_json_field(self.schema.field(parts[0]))):
            # (a JSON column itself: it may be read as stored JSONB, see Filter.stored)
            self.json_fn_columns.add(parts[0])
            v = _V(pc.field(parts[0]), t0, "column")
        else:
            v = self.value(args[0])
        if _is_null_type(v.type):
            return _const(pa.scalar(None, out_type))
        t = v.type
        if is_json_type(t):
            v = _V(v.expr.cast(t.storage_type), t.storage_type)
        elif not (pa.types.is_large_binary(t) or _is_str(t)):
            raise InvalidArgumentError(f"filters: {name} needs a JSON column, got {t}")
        consts = [self.value(a) for a in args[1:]]
        for c in consts:
            if c.const is None or not (_is_str(c.type) or _is_null_type(c.type)):
                raise NotSupportedError(f"filters: {name} needs constant string arguments after the JSON value")
        if any(not c.const.is_valid for c in consts):
            return _const(pa.scalar(None, out_type))
        strs = [_V(pc.scalar(c.const.as_py()), pa.string(), const=pa.scalar(c.const.as_py())) for c in consts]
        return _V(pc.Expression._call(_udf_json(name, v.type, len(strs)), [v.expr] + [s.expr for s in strs]), out_type)

    # -- IS -----------------------------------------------------------------------------

    def is_(self, node: Any) -> _V:
        from sqlglot import exp

        target = node.expression
        negate = bool(node.args.get("negate"))
        if isinstance(target, exp.Null):
            v = self._visit(node.this, False)
            if v.regexp:
                # regexp_match is NULL where nothing matches.
                res = self.invert(_V(_coalesce_false(v.expr), pa.bool_()))
            elif v.const is not None:
                res = _const(pa.scalar(not v.const.is_valid))
            else:
                res = _V(pc.is_null(v.expr), pa.bool_())
            return self.invert(res) if negate else res
        if isinstance(target, exp.Boolean):
            v = self.value(node.this)
            if _is_null_type(v.type):
                v = _null_bool()
            if not pa.types.is_boolean(v.type):
                raise InvalidArgumentError(f"filters: {node.this.sql()} is not a boolean, in {node.sql()}")
            if bool(target.this):
                res = _call("coalesce", [v, _const(pa.scalar(False))], pa.bool_()) if v.const is None else _const(
                    pa.scalar(v.const.as_py() is True))
            else:
                res = _call("coalesce", [self.invert(v), _const(pa.scalar(False))], pa.bool_()) if v.const is None else _const(
                    pa.scalar(v.const.as_py() is False))
            return self.invert(res) if negate else res
        raise NotSupportedError(f"filters: {node.sql()} is not supported")

    # -- LIKE ---------------------------------------------------------------------------

    def like(self, node: Any, escape: Any) -> _V:
        from sqlglot import exp

        custom_escape = None
        if escape is not None:
            if not (isinstance(escape, exp.Literal) and escape.is_string and len(escape.this) >= 1):
                raise InvalidArgumentError(f"filters: the LIKE escape must be one character, got {escape.sql()}")
            if escape.this[0] != "\\":
                custom_escape = escape.this[0]
        s = self.value(node.this)
        pattern = self.value(node.expression)
        negate = bool(node.args.get("negate"))
        if _is_null_type(s.type) or _is_null_type(pattern.type):
            return _null_bool()
        if not _is_str(s.type):
            raise InvalidArgumentError(f"filters: LIKE needs a string, got {s.type} in {node.sql()}")
        if pattern.const is None or not _is_str(pattern.type):
            raise NotSupportedError(f"filters: LIKE needs a constant string pattern: {node.sql()}")
        if not pattern.const.is_valid:
            return _null_bool()
        text = pattern.const.as_py()
        ilike = isinstance(node, exp.ILike)
        if custom_escape is not None:
            # pylance (DataFusion) rewrites `LIKE '%'` to IS NOT NULL and a LIKE without
            # wildcards to `=` before it looks at the escape; any other pattern is refused.
            if text and set(text) == {"%"}:
                res = _call("is_valid", [s], pa.bool_())
                res = _call("if_else", [res, _const(pa.scalar(True)), _null_bool()], pa.bool_())
                return self.invert(res) if negate else res
            if not ilike and not (set(text) & {"%", "_", custom_escape}):
                res = self.compare("eq", s, _const(pa.scalar(text, pa.string())), _Sql(node))
                return self.invert(res) if negate else res
            raise NotSupportedError(
                f"filters: LIKE ... ESCAPE {escape.sql()} is not supported (only the backslash, as in pylance)"
            )
        regex = _like_regex(text)
        res = self.regex_match(s, regex, ilike)
        return self.invert(res) if negate else res

    def regex_match(self, s: _V, regex: str, ignore_case: bool) -> _V:
        if s.const is not None:
            return _call("match_substring_regex", [s], pa.bool_(), pc.MatchSubstringOptions(regex, ignore_case=ignore_case))
        return _V(pc.match_substring_regex(s.expr, pattern=regex, ignore_case=ignore_case), pa.bool_())

    # -- arithmetic ---------------------------------------------------------------------

    def arithmetic_node(self, node: Any, op: str, resolve: bool) -> _V:
        from sqlglot import exp

        a = self.value(node.this)
        b = self.value(node.expression)
        if resolve and not any(isinstance(_unparen(n), exp.Cast) for n in (node.this, node.expression)):
            # At the top of a value expression (a computed column, an update value) pylance
            # types a literal facing a column as the column: `i32_col * 2` is 32-bit and wraps
            # (a CAST keeps its type).
            a, b = self.resolve_pair(a, b, node.this, node.expression)
        return self.arithmetic(op, a, b, node)

    def arithmetic(self, op: str, a: _V, b: _V, node: Any) -> _V:
        what = _Sql(node)
        for v in (a, b):
            if not (_is_num(v.type) or _is_null_type(v.type)):
                raise InvalidArgumentError(f"filters: arithmetic on {v.type} is not supported in {what}")
        if _is_null_type(a.type) or _is_null_type(b.type):
            other = b.type if _is_null_type(a.type) else a.type
            return _const(pa.scalar(None, other if not _is_null_type(other) else pa.null()))
        t = _num_common(a.type, b.type)
        ac, bc = _cast(a, t, what), _cast(b, t, what)
        if op == "mod":
            if _is_float(t):
                # fmod is exact, so a FLOAT remainder computed in DOUBLE is the FLOAT one.
                wide = [_cast(ac, pa.float64(), what), _cast(bc, pa.float64(), what)]
                return _cast(_call(_udf_fmod(), wide, pa.float64()), t, what)
            return _call(_udf_int_mod(t), [ac, bc], t)
        return _call(op, [ac, bc], t)

    def negate(self, v: _V) -> _V:
        if _is_null_type(v.type):
            return v
        if pa.types.is_unsigned_integer(v.type) or not _is_num(v.type):
            raise InvalidArgumentError(f"filters: negation of {v.type} is not supported")
        return _call("negate", [v], v.type)

    def concat(self, a: _V, b: _V) -> _V:
        if _is_null_type(a.type) or _is_null_type(b.type):
            return _const(pa.scalar(None, pa.string()))
        parts = []
        for v in (a, b):
            if _is_str(v.type):
                parts.append(_cast(v, pa.string(), "||"))
            elif _is_int(v.type) or pa.types.is_date32(v.type):
                parts.append(_cast(v, pa.string(), "||"))
            else:
                raise NotSupportedError(f"filters: || with {v.type} is not supported")
        return _call("binary_join_element_wise", [parts[0], parts[1], _const(pa.scalar(""))], pa.string())

    # -- casts --------------------------------------------------------------------------

    def cast(self, node: Any) -> _V:
        from sqlglot import exp

        t = _sql_type(node.to)
        v = self.value(node.this)
        if isinstance(node, exp.TryCast) or node.args.get("safe"):
            if v.type == t or _is_null_type(v.type):
                return _cast(v, t, _Sql(node))
            # Only the casts that cannot fail (so TRY_CAST is CAST).
            widening = _is_int(t) and _is_int(v.type) and _INT_RANGE[t][0] <= _INT_RANGE[v.type][0] and (
                _INT_RANGE[v.type][1] <= _INT_RANGE[t][1])
            if not (_is_int(v.type) and (_is_float(t) or _is_str(t) or widening)):
                raise NotSupportedError(f"filters: TRY_CAST from {v.type} to {t} is not supported")
        return _cast(v, t, _Sql(node))

    def arrow_cast(self, node: Any) -> _V:
        """``arrow_cast(value, 'Type')``: Arrow's own cast to a type named as arrow-rs names
        it (see :func:`arrow_type_from_string`)."""
        from sqlglot import exp

        args = list(node.expressions)
        if len(args) != 2 or not (isinstance(args[1], exp.Literal) and args[1].is_string):
            raise InvalidArgumentError(f"filters: arrow_cast takes a value and a type name string: {node.sql(dialect=_dialect())}")
        t = arrow_type_from_string(args[1].this)
        v = self.value(args[0])
        if v.type == t:
            return v
        if _is_null_type(v.type):
            return _const(pa.scalar(None, t))
        try:
            if v.const is not None:
                return _const(v.const.cast(t))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise InvalidArgumentError(f"filters: {node.sql(dialect=_dialect())}: {e}") from None
        return _V(v.expr.cast(t), t)

    def cast_list_f16(self, node: Any) -> _V:
        """``_cast_list_f16(vectors)``: a list or fixed-size list of float32 (or float16) as
        the same kind of list of float16 (pylance's projection function, e.g. to halve the
        bytes of vectors handed to a GPU)."""
        args = list(node.expressions)
        if len(args) != 1:
            raise InvalidArgumentError(f"filters: _cast_list_f16 takes one list column: {node.sql(dialect=_dialect())}")
        v = self.value(args[0])
        t = v.type
        if _is_null_type(t):
            return v
        is_list = pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
        if not is_list or t.value_type not in (pa.float32(), pa.float16()):
            raise InvalidArgumentError(f"filters: _cast_list_f16 takes a list of float32 or float16, got {t}")
        if pa.types.is_fixed_size_list(t):
            out = pa.list_(pa.float16(), t.list_size)
        elif pa.types.is_large_list(t):
            out = pa.large_list(pa.float16())
        else:
            out = pa.list_(pa.float16())
        if v.const is not None:
            return _const(v.const.cast(out, safe=False))
        return _V(v.expr.cast(out, safe=False), out)

    # -- functions ----------------------------------------------------------------------

    def function(self, node: Any) -> _V:
        from sqlglot import exp

        name = (node.name if isinstance(node, exp.Anonymous) else type(node).__name__).lower()
        if isinstance(node, exp.Anonymous) and name in JSON_FUNCTIONS:
            return self.json_function(name, list(node.expressions))
        if isinstance(node, exp.Lower) or isinstance(node, exp.Upper):
            v = self.value(node.this)
            if _is_null_type(v.type):
                return _const(pa.scalar(None, pa.string()))
            if not _is_str(v.type):
                raise InvalidArgumentError(f"filters: {name} needs a string, got {v.type}")
            return _call(_udf_case(isinstance(node, exp.Upper)), [_cast(v, pa.string(), name)], pa.string())
        if isinstance(node, exp.Length):
            v = self.value(node.this)
            if _is_null_type(v.type):
                return _const(pa.scalar(None, pa.int32()))
            if pa.types.is_binary(v.type):
                return _call("binary_length", [v], pa.int32())
            if not _is_str(v.type):
                raise InvalidArgumentError(f"filters: length needs a string, got {v.type}")
            return _call("utf8_length", [_cast(v, pa.string(), name)], pa.int32())
        if isinstance(node, exp.Abs):
            v = self.value(node.this)
            if _is_null_type(v.type):
                return v
            if not _is_num(v.type):
                raise InvalidArgumentError(f"filters: abs needs a number, got {v.type}")
            return _call("abs_checked" if _is_int(v.type) else "abs", [v], v.type)
        if isinstance(node, (exp.StartsWith, exp.Contains)) or name in ("ends_with", "endswith"):
            args = [node.this, node.expression] if not isinstance(node, exp.Anonymous) else list(node.expressions)
            if len(args) != 2:
                raise InvalidArgumentError(f"filters: {name} takes two arguments")
            s, p = self.value(args[0]), self.value(args[1])
            if _is_null_type(s.type) or _is_null_type(p.type):
                return _null_bool()
            if not (_is_str(s.type) and _is_str(p.type)):
                raise InvalidArgumentError(f"filters: {name} needs strings")
            if p.const is None:
                raise NotSupportedError(f"filters: {name} needs a constant second argument")
            fn = {"startswith": "starts_with", "contains": "match_substring"}.get(name, "ends_with")
            return _call(fn, [_cast(s, pa.string(), name)], pa.bool_(), pc.MatchSubstringOptions(p.const.as_py()))
        if isinstance(node, exp.ArrayContains):
            lst, needle = self.value(node.this), self.value(node.expression)
            if _is_null_type(lst.type):
                return _null_bool()
            if not (pa.types.is_list(lst.type) or pa.types.is_large_list(lst.type)):
                raise InvalidArgumentError(f"filters: array_has needs a list, got {lst.type}")
            vt = lst.type.value_type
            if _is_null_type(needle.type):
                return _null_bool()
            needle = _cast(needle, _comparison_type(vt, needle.type, _Sql(node)), _Sql(node))
            if needle.type != vt:
                raise NotSupportedError(f"filters: array_has of a {needle.type} in a list of {vt} is not supported")
            if _is_float(vt):
                raise NotSupportedError("filters: array_has on lists of floats is not supported")
            return _call(_udf_array_has(lst.type), [lst, needle], pa.bool_())
        if isinstance(node, exp.ArraySize) or name in ("list_length", "array_empty", "empty"):
            return self.list_length(node, name)
        if isinstance(node, exp.ArrayContainsAll) or name in ("array_has_any", "array_has_all"):
            args = [node.this, node.expression] if isinstance(node, exp.ArrayContainsAll) else list(node.expressions)
            if len(args) != 2:
                raise InvalidArgumentError(f"filters: {name} takes two arguments")
            return self.array_has_set(args[0], args[1], isinstance(node, exp.ArrayContainsAll) or name == "array_has_all", node)
        if isinstance(node, exp.CurrentDate):
            if node.this is not None:
                raise NotSupportedError(f"filters: {node.sql(dialect=_dialect())}: CURRENT_DATE takes no time zone")
            # The UTC date when the filter is translated, as pylance (DataFusion) evaluates it.
            return _const(pa.scalar(datetime.datetime.now(datetime.timezone.utc).date(), pa.date32()))
        if isinstance(node, exp.RegexpLike) or name in ("regexp_like", "regexp_match"):
            if isinstance(node, exp.Anonymous):
                args = list(node.expressions)
            else:
                args = [node.this, node.expression] + ([node.args["flag"]] if node.args.get("flag") is not None else [])
            if len(args) not in (2, 3):
                raise InvalidArgumentError(f"filters: {name} takes two or three arguments")
            s, p = self.value(args[0]), self.value(args[1])
            flags = self.value(args[2]) if len(args) == 3 else None
            if p.const is None or (flags is not None and flags.const is None):
                raise NotSupportedError(f"filters: {name} needs a constant pattern and flags")
            is_match = name == "regexp_match"
            if _is_null_type(s.type) or not p.const.is_valid or (flags is not None and not flags.const.is_valid):
                null = pa.scalar(None, pa.bool_())
                return _V(pc.scalar(null), pa.bool_(), const=null, regexp=is_match)
            if not _is_str(s.type) or not _is_str(p.type):
                raise InvalidArgumentError(f"filters: {name} needs strings")
            pattern = p.const.as_py()
            _check_regex(pattern)
            prefix = ""
            if flags is not None:
                f = flags.const.as_py()
                if "g" in f:
                    raise InvalidArgumentError(f"filters: {name} does not support the global flag")
                if not set(f) <= _REGEX_FLAGS:
                    raise NotSupportedError(f"filters: {name} flags {f!r} are not supported")
                if f:
                    prefix = f"(?{''.join(sorted(set(f)))})"
            res = self.regex_match(_cast(s, pa.string(), name), prefix + pattern, False)
            if is_match:
                # A list of the captures, NULL where nothing matches: true / NULL.
                if res.const is None:
                    matched = pc.if_else(res.expr, pc.scalar(True), pc.scalar(pa.scalar(None, pa.bool_())))
                    res = _V(matched, pa.bool_(), regexp=True)
                else:
                    res = _V(res.expr, pa.bool_(), const=res.const, regexp=True)
            return res
        if name == "arrow_cast" and isinstance(node, exp.Anonymous):
            return self.arrow_cast(node)
        if name == "_cast_list_f16" and isinstance(node, exp.Anonymous):
            return self.cast_list_f16(node)
        if name == "is_valid" and isinstance(node, exp.Anonymous) and len(node.expressions) == 1:
            v = self._visit(node.expressions[0], False)
            return _V(pc.is_valid(v.expr), pa.bool_()) if v.const is None else _const(pa.scalar(v.const.is_valid))
        raise NotSupportedError(f"filters: {node.sql(dialect=_dialect())} ({type(node).__name__}) is not supported")


def _unparen(node: Any) -> Any:
    from sqlglot import exp

    while isinstance(node, exp.Paren):
        node = node.this
    return node
