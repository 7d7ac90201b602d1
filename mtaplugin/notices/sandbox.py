"""The sandbox notices are rendered in: Jinja2's, with a budget for every render.

List owners write notice texts (the web editor, REST, a fetched URI), and a notice may be
rendered while Postfix waits (a held post's notice to the moderators).  Jinja2's sandbox
keeps a template away from Python's internals, but not from the CPU or the memory:
``{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}``
spins for hours.  :class:`NoticeSandbox` gives each render (one call of
``Template.render``) a :class:`Budget`:

- at most :data:`MAX_STEPS` steps: an item of any ``{% for %}`` loop (recursive loops
  included), a call, a filter, an operator that builds a text;
- at most :data:`MAX_CPU_SECONDS` seconds of the rendering thread's CPU time;
- at most :data:`MAX_CHARS` characters built: what the template writes, and every text
  or list that ``*``, ``%``, ``~``, a filter or a string method makes, counted before it
  is made when it can grow (``center``, ``indent``, ``join``, ``replace``, ``wordwrap``,
  ``format``, ``batch``, ``slice``, ``"%0999999d"``...);
- mutating methods (``list.append``, ``dict.update``...) are refused (Jinja2's immutable
  sandbox), so a list grows only through the operations above.

A render over its budget raises :class:`BudgetExceeded` (a
:class:`~jinja2.exceptions.SecurityError`): the web editor shows it, and a stored or
fetched text that raises it is logged and the built-in notice is sent instead
(:func:`mtaplugin.notices.templates.render`).
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from jinja2 import nodes
from jinja2.environment import Template
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context, LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment

#: the longest string or list one ``*`` may build (a notice is a page or two)
MAX_PRODUCT = 100_000
#: the largest exponent of ``**`` (``2 ** 10 ** 9`` would keep a worker busy for hours)
MAX_EXPONENT = 64
#: loop items, calls and filters one render may take
MAX_STEPS = 100_000
#: CPU seconds one render may take (the rendering thread's, not the wall clock)
MAX_CPU_SECONDS = 1.0
#: characters one render may build in all (its text, and the texts made on the way)
MAX_CHARS = 2_000_000


class BudgetExceeded(SecurityError):
    """The render went over its budget (the message says which)."""


class Budget:
    """What one render has used."""

    __slots__ = ("chars", "deadline", "steps")

    def __init__(self) -> None:
        self.steps = 0
        self.chars = 0
        self.deadline = time.thread_time() + MAX_CPU_SECONDS

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise BudgetExceeded(f"more than {MAX_STEPS} loop items and calls")
        if not self.steps % 64 and time.thread_time() > self.deadline:
            raise BudgetExceeded(f"more than {MAX_CPU_SECONDS:g} seconds of CPU time")

    def build(self, chars: int) -> None:
        """``chars`` more characters are about to be built."""
        self.chars += chars
        if self.chars > MAX_CHARS:
            raise BudgetExceeded(f"more than {MAX_CHARS} characters built")
        self.step()


_CURRENT: ContextVar[Budget | None] = ContextVar("notice_budget", default=None)


def size(value: Any, limit: int = MAX_CHARS) -> int:
    """About how many characters ``str(value)`` has (a list of lists: each element's);
    stops counting past ``limit``."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, (int, float, bool)) or value is None:
        return 8
    if isinstance(value, (list, tuple, set, frozenset, dict, range)):
        total = 2
        items: Iterable[Any] = value.items() if isinstance(value, dict) else value
        for item in items:
            total += 2 + size(item, limit - total)
            if total > limit:
                return total
        return total
    return 64


def _charge(value: Any) -> None:
    budget = _CURRENT.get()
    if budget is not None:
        budget.build(size(value))


# --- what a text may grow to, before it is made ---------------------------------------------

_PERCENT_WIDTH = re.compile(r"%[-#0 +]*(\d+)?(?:\.(\d+))?")
_BRACE_WIDTH = re.compile(r"\{[^{}]*?:[^{}]*?(\d+)[^{}]*\}")


def _format_growth(fmt: str) -> int:
    """The widest field a ``%`` or ``{}`` format string asks for, per field, summed."""
    digits = [w for m in _PERCENT_WIDTH.finditer(fmt) for w in m.groups() if w]
    digits += [m.group(1) for m in _BRACE_WIDTH.finditer(fmt)]
    return sum(int(w) if len(w) < 10 else MAX_CHARS + 1 for w in digits)


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _growth(name: str, value: Any, args: tuple[Any, ...], kw: Mapping[str, Any]) -> int:
    """How many characters filter or string method ``name`` may build from ``value``."""

    def arg(i: int, key: str, default: Any = None) -> Any:
        return args[i] if len(args) > i else kw.get(key, default)

    text = value if isinstance(value, str) else ""
    if name in ("center", "ljust", "rjust", "zfill"):
        return max(len(text), _int(arg(0, "width", 80)))
    if name == "expandtabs":
        return len(text) + text.count("\t") * _int(arg(0, "tabsize", 8))
    if name == "indent":
        width = arg(0, "width", 4)
        each = len(width) if isinstance(width, str) else _int(width, 4)
        return len(text) + (text.count("\n") + 1) * each
    if name == "replace":
        old, new = str(arg(0, "old", "")), str(arg(1, "new", ""))
        times = len(text) + 1 if not old else text.count(old)
        return len(text) + times * max(0, len(new) - len(old))
    if name == "wordwrap":
        width = max(1, _int(arg(0, "width", 79), 79))
        wrap = arg(2, "wrapstring")
        breaks = len(text) // width + text.count(" ") + text.count("\n") + 1
        return len(text) + breaks * len(wrap if isinstance(wrap, str) else "\n")
    if name == "format":
        return len(text) + _format_growth(text) + size(args) + size(kw)
    if name in ("batch", "slice"):
        return _int(arg(0, "linecount" if name == "batch" else "slices"), 1) * 2
    return 0


def _join_growth(items: list[Any], separator: Any) -> int:
    return size(items) + len(str(separator)) * len(items)


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` (filter ``name``) counted in the budget: a step, the characters it may
    build checked before it runs, what it built after."""
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        # Outside a render: Jinja2 folding a filter of constants while it compiles; a
        # budget of its own, so that ``''|center(10**9)`` is not built then either.
        budget = _CURRENT.get() or Budget()
        if len(args) <= skip:
            return func(*args, **kwargs)
        value, rest = args[skip], args[skip + 1 :]
        budget.step()
        if name == "join":
            value = list(value)
            args = (*args[:skip], value, *rest)
            budget.build(_join_growth(value, rest[0] if rest else kwargs.get("d", "")))
        else:
            budget.build(_growth(name, value, rest, kwargs))
        result = func(*args, **kwargs)
        if isinstance(result, str):
            budget.build(len(result))
        return result

    return guarded


# --- the sandbox ----------------------------------------------------------------------------


class BudgetedTemplate(Template):
    """A template whose render has a budget (an include or a macro inside it shares it)."""

    def render(self, *args: Any, **kwargs: Any) -> str:
        if _CURRENT.get() is not None:
            return super().render(*args, **kwargs)
        token = _CURRENT.set(Budget())
        try:
            return super().render(*args, **kwargs)
        finally:
            _CURRENT.reset(token)


def _concat(pieces: Iterable[str]) -> str:
    """What a template (or a block, a macro, a loop) writes, counted as it comes."""
    budget = _CURRENT.get()
    if budget is None:
        return "".join(pieces)
    out = []
    for piece in pieces:
        budget.build(len(piece))
        out.append(piece)
    return "".join(out)


class NoticeSandbox(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox (no attribute starting with ``_``, no unsafe callable, no
    ``list.append``: a list owner's ``{{ ''.__class__.__mro__ }}`` is a
    :class:`~jinja2.exceptions.SecurityError`), with the budget of the module's doc."""

    intercepted_binops = frozenset({"*", "**", "%"})
    template_class = BudgetedTemplate
    concat = staticmethod(_concat)

    def __init__(self, **options: Any) -> None:
        options.setdefault("finalize", _finalize)
        super().__init__(**options)

    def guard_filters(self) -> None:
        """Count every filter (call after the last filter is added)."""
        self.filters = {name: _guard_filter(name, f) for name, f in self.filters.items()}

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        """The template's tree, every ``for`` loop's items counted and every ``~`` made
        by :meth:`joined`."""
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(nodes.For):
            counted = nodes.EnvironmentAttribute("counted", lineno=loop.lineno)
            loop.iter = nodes.Call(counted, [loop.iter], [], None, None, lineno=loop.lineno)
        for parent in list(tree.find_all(nodes.Node)):
            for field, child in parent.iter_fields():
                if isinstance(child, nodes.Concat):
                    setattr(parent, field, self._joined(child))
                elif isinstance(child, list):
                    child[:] = [
                        self._joined(c) if isinstance(c, nodes.Concat) else c for c in child
                    ]
        return tree

    @staticmethod
    def _joined(node: nodes.Concat) -> nodes.Call:
        joined = nodes.EnvironmentAttribute("joined", lineno=node.lineno)
        return nodes.Call(joined, node.nodes, [], None, None, lineno=node.lineno)

    def counted(self, items: Iterable[Any]) -> Iterator[Any]:
        """``items``, each one a step of the budget."""
        budget = _CURRENT.get()
        for item in items:
            if budget is not None:
                budget.step()
            yield item

    def joined(self, *parts: Any) -> str:
        """``a ~ b``: the texts joined, counted before they are made."""
        for part in parts:
            _charge(part)
        return "".join(str(p) for p in parts)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        budget = _CURRENT.get()
        if budget is not None:
            budget.step()
            if isinstance(obj, LoopContext) and args:  # a recursive loop's next level
                args = (self.counted(args[0]), *args[1:])
            owner = getattr(obj, "__self__", None)
            if isinstance(owner, str):
                name = getattr(obj, "__name__", "")
                if name == "join" and args:
                    items = list(args[0])
                    args = (items, *args[1:])
                    budget.build(_join_growth(items, owner))
                else:
                    budget.build(_growth(name, owner, args, kwargs))
        return super().call(context, obj, *args, **kwargs)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapper = super().wrap_str_format(value)
        if wrapper is None:
            return None
        fmt: str = value.__self__

        def checked(*args: Any, **kwargs: Any) -> str:
            budget = _CURRENT.get()
            if budget is not None:
                budget.build(len(fmt) + _format_growth(fmt) + size(args) + size(kwargs))
            return wrapper(*args, **kwargs)

        return checked

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        budget = _CURRENT.get()
        if operator == "**":
            if isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
                raise SecurityError(f"exponent above {MAX_EXPONENT}")
        elif operator == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple, bytes)) and isinstance(times, int):
                    if len(seq) * times > MAX_PRODUCT:
                        raise SecurityError(f"a product longer than {MAX_PRODUCT}")
                    if budget is not None:
                        budget.build(size(seq) * max(times, 0))
        elif operator == "%" and isinstance(left, str) and budget is not None:
            budget.build(len(left) + _format_growth(left) + size(right))
        return super().call_binop(context, operator, left, right)


def _finalize(value: Any) -> Any:
    """What ``{{ value }}`` writes: a list is counted before it becomes a text."""
    if not isinstance(value, str):
        _charge(value)
    return value
