"""The Jinja sandbox rubric templates render in, with resource limits on what a template can build.

Jinja's immutable sandbox keeps a template from Python's internals, not from memory (`{{ 'x' * 200000000 }}`).
Every operation that can multiply its input is checked *before* it runs against MAX_VALUE_CHARS; constructs whose
captured output no operation bounds, and those that load files, are refused when the template compiles
(`_REFUSED_NODES`). Not bounded: time (templates are reviewed files, rendered by `rubric check` before any run).
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Sized
from functools import wraps
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

# No prompt needs a value longer than this from one operation (the input fields are at most 256 KiB each).
MAX_VALUE_CHARS = 2_000_000
MAX_EXPONENT = 256
_DIGITS = re.compile(r"\d+")


# How every judgewatch template renders: StrictUndefined, no autoescape (a prompt, not HTML), blocks trimmed.
TEMPLATE_OPTIONS: dict[str, Any] = {
    "undefined": jinja2.StrictUndefined, "autoescape": False, "trim_blocks": True, "lstrip_blocks": True,
    "keep_trailing_newline": False,
}  # fmt: skip


class TooLargeError(SecurityError):
    """A template operation that would build a value over the limit (refused before it runs)."""


def _check_size(size: int, what: str) -> None:
    """Refuse an operation whose result would hold `size` characters or items, over the limit."""
    if size > MAX_VALUE_CHARS:
        raise TooLargeError(f"{what} would build {size:,} characters or items, over the limit of {MAX_VALUE_CHARS:,}")


def _length(value: Any) -> int:
    return len(value) if isinstance(value, str | bytes | list | tuple | dict | set | frozenset) else 0


def _check_int(value: Any, what: str) -> None:
    if isinstance(value, int) and not isinstance(value, bool):
        _check_size(abs(value), what)


def _check_widths(fmt: str, what: str) -> None:
    """A format string's widths and precisions (any run of digits) each within the limit."""
    for digits in _DIGITS.findall(fmt):
        if len(digits) > 7 or int(digits) > MAX_VALUE_CHARS:
            raise TooLargeError(f"{what}: a width of {digits[:12]} is over the limit of {MAX_VALUE_CHARS:,}")


def _check_result(value: Any, what: str) -> Any:
    _check_size(_length(value), what)
    return value


def _repeat_size(left: Any, right: Any) -> int:
    """The length `left * right` would have when it repeats a string or sequence, else 0."""
    for seq, times in ((left, right), (right, left)):
        if isinstance(seq, str | bytes | list | tuple) and isinstance(times, int) and not isinstance(times, bool):
            return len(seq) * max(times, 0)
    return 0


def _replace_size(text: str, old: str, new: str, count: int = -1) -> int:
    hits = len(text) + 1 if old == "" else text.count(old)
    if count >= 0:
        hits = min(hits, count)
    return len(text) + hits * max(len(new) - len(old), 0)


def _join_size(separator: str, parts: list[Any]) -> int:
    return sum(len(str(p)) for p in parts) + len(separator) * max(len(parts) - 1, 0)


# Node types a rubric template may not use: what they are for, as the error message says it.
_REFUSED_NODES: dict[type[nodes.Node], str] = {
    nodes.Extends: "{% extends %} (templates are self-contained)",
    nodes.Include: "{% include %} (templates are self-contained)",
    nodes.Import: "{% import %} (templates are self-contained)",
    nodes.FromImport: "{% from ... import %} (templates are self-contained)",
    nodes.AssignBlock: "a {% set %} block (captured output has no size limit)",
    nodes.FilterBlock: "a {% filter %} block (captured output has no size limit)",
    nodes.Macro: "{% macro %} (captured output has no size limit)",
    nodes.CallBlock: "{% call %} (captured output has no size limit)",
}


def refused_constructs(ast: nodes.Template) -> list[tuple[int, str]]:
    """(line, what) for each construct in `ast` that rubric templates may not use."""
    found = [(node.lineno, what) for kind, what in _REFUSED_NODES.items() for node in ast.find_all(kind)]
    found += [
        (node.lineno, "'self' (a block rendered into a value has no size limit)")
        for node in ast.find_all(nodes.Name)
        if node.name == "self" and node.ctx == "load"
    ]
    return sorted(found)


class _BoundedCodeGenerator(CodeGenerator):
    """Jinja's code generator, but `a ~ b` goes through the environment's checked join."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.bounded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, with every multiplying operation checked before it runs (see the module doc)."""

    intercepted_binops = frozenset({"*", "**", "%", "+"})
    code_generator_class = _BoundedCodeGenerator

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        ast = super()._parse(source, name, filename)
        if refused := refused_constructs(ast):
            line, what = refused[0]
            raise jinja2.TemplateSyntaxError(f"{what} is not allowed in a rubric template", line, name, filename)
        return ast

    def bounded_concat(self, parts: tuple[Any, ...]) -> str:
        texts = [str(part) for part in parts]
        _check_size(sum(len(t) for t in texts), "the operator '~'")
        return "".join(texts)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        for name, guard in _FILTER_GUARDS.items():
            self.filters[name] = _guarded_filter(self.filters[name], name, guard)

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        what = f"the operator {operator!r}"
        if operator == "*":
            _check_size(_repeat_size(left, right), what)
        elif operator == "**":
            if isinstance(right, int | float) and abs(right) > MAX_EXPONENT:
                raise TooLargeError(f"{what}: an exponent of {right} is over the limit of {MAX_EXPONENT}")
        elif operator == "%" and isinstance(left, str):
            _check_widths(left, what)
            for arg in right if isinstance(right, tuple) else (right,):
                _check_int(arg, what)
        elif operator == "+":
            _check_size(_length(left) + _length(right), what)
        return _check_result(super().call_binop(context, operator, left, right), what)

    def call(__self, __context: jinja2.runtime.Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        target = getattr(__obj, "__wrapped__", __obj)  # str.format arrives wrapped by the sandbox
        name = getattr(target, "__name__", "a call")
        owner = getattr(target, "__self__", None) if isinstance(target, types.BuiltinMethodType) else None
        what = f"{name}()"
        for arg in (*args, *kwargs.values()):
            _check_int(arg, what)
        if isinstance(owner, str):
            _check_str_method(owner, name, args, kwargs, what)
        return _check_result(super().call(__context, __obj, *args, **kwargs), what)


def _check_str_method(owner: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> None:
    if name in ("format", "format_map"):
        _check_widths(owner, what)
    elif name == "expandtabs":
        size = len(owner) + owner.count("\t") * int(args[0] if args else kwargs.get("tabsize", 8))
        _check_size(size, what)
    elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        count = args[2] if len(args) > 2 and isinstance(args[2], int) else kwargs.get("count", -1)
        _check_size(_replace_size(owner, args[0], args[1], count), what)
    elif name == "join" and args:
        _check_size(_join_size(owner, _sequence(args[0])), what)
    # ljust, rjust, center, zfill: their one width is an integer argument, checked by the caller


# A filter's guard: the size its result could have, from (value, positional args, keyword args).
Guard = Callable[[Any, tuple[Any, ...], dict[str, Any]], int]


def _guarded_filter(function: Callable[..., Any], name: str, guard: Guard) -> Callable[..., Any]:
    what = f"the filter {name!r}"

    @wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        # Filters may take the environment or a context first (pass_environment, pass_context...): skip them.
        passed = [a for a in args if isinstance(a, jinja2.Environment | jinja2.runtime.Context | nodes.EvalContext)]
        values = list(args[len(passed) :])
        if values and not isinstance(values[0], Sized):  # an iterator (map, select): measure it, then pass it on
            values[0] = list(values[0])
        for arg in (*values[1:], *kwargs.values()):
            _check_int(arg, what)
        _check_size(guard(values[0] if values else "", tuple(values[1:]), kwargs), what)
        return _check_result(function(*passed, *values, **kwargs), what)

    return checked


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str, default: Any) -> Any:
    return args[index] if len(args) > index else kwargs.get(name, default)


def _sequence(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple | str | dict | set | frozenset) else []


def _center(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return max(len(str(value)), int(_arg(args, kwargs, 0, "width", 80)))


def _indent(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    text, width = str(value), _arg(args, kwargs, 0, "width", 4)
    pad = len(width) if isinstance(width, str) else int(width) if isinstance(width, int) else 4
    return len(text) + (text.count("\n") + 1) * max(pad, 0)


def _wordwrap(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    wrapstring = _arg(args, kwargs, 2, "wrapstring", None) or "\n"
    return len(str(value)) * (1 + len(str(wrapstring)))  # at worst one break after every character


def _replace(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    count = _arg(args, kwargs, 2, "count", None)
    old, new = _arg(args, kwargs, 0, "old", ""), _arg(args, kwargs, 1, "new", "")
    return _replace_size(str(value), str(old), str(new), -1 if count is None else int(count))


def _join(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return _join_size(str(_arg(args, kwargs, 0, "d", "")), _sequence(value))


def _format(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    _check_widths(str(value), "the filter 'format'")  # its integer arguments are checked by the wrapper
    return len(str(value)) + sum(len(str(a)) for a in (*args, *kwargs.values()))


_FILTER_GUARDS: dict[str, Guard] = {
    "center": _center, "indent": _indent, "wordwrap": _wordwrap, "replace": _replace, "join": _join, "format": _format
}  # fmt: skip
