"""One parameter-validation scheme for every public constructor and call.

Modelled on scikit-learn's ``_parameter_constraints``: each class lists, per parameter,
what is allowed, and one function checks a set of values against that list, raising
:class:`~semrag.errors.ConfigError` that names the owner, the parameter, the value and
what is allowed. Accepted values are normalised: numpy integers and floats become Python
``int`` / ``float``, so ``np.int64(512)`` works wherever ``512`` does, while
``100.0`` for an integer, ``"1024"``, ``True`` for a number, ``NaN`` and infinities are
rejected up front instead of failing later.

A constraint is one of:

* :class:`Interval` ``(Integral | Real, left, right, closed=...)``;
* :class:`Options` ``(*values)``: one of these exact values (strings, typically);
* ``None``: the value may be ``None``;
* ``bool``: ``True`` / ``False`` (numpy booleans too);
* ``"callable"``: anything callable;
* :class:`HasMethods` ``(*names)``: an object with these methods;
* any other class: an instance of it (``object``: anything, for a parameter such as the
  index that is checked where it is used).

A class declares each parameter once, scikit-learn's way: its ``__init__`` signature and,
beside it, ``_parameter_constraints``. :class:`Params` checks at class creation that the two
name the same parameters, checks a call's values from the signature
(``self._check_params(locals())``), and derives :meth:`Params.get_params` and ``repr``
from the same declaration.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import numbers
import warnings
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, ClassVar, NoReturn, Protocol, TypeVar, cast

import numpy as np
from typing_extensions import TypeIs

from semrag.errors import ConfigError

_P = TypeVar("_P")

__all__ = [
    "INT",
    "REAL",
    "HasMethods",
    "Interval",
    "Options",
    "Params",
    "check_k",
    "check_param",
    "check_query",
    "missing_members",
    "offers",
    "protocol_members",
    "RenamedAttribute",
    "renamed",
    "validate_params",
]


INT = numbers.Integral
"""Shorthand for the ``kind`` of an integer :class:`Interval`."""
REAL = numbers.Real
"""Shorthand for the ``kind`` of a real :class:`Interval`."""


class Interval:
    """Numbers of one kind within bounds.

    Args:
        kind: ``numbers.Integral`` or ``numbers.Real``.
        left: lower bound, or ``None`` for none.
        right: upper bound, or ``None`` for none.
        closed: which bounds are included: ``"both"``, ``"left"``, ``"right"`` or
            ``"neither"``.
    """

    def __init__(
        self,
        kind: type,
        left: float | None,
        right: float | None,
        *,
        closed: str = "both",
    ) -> None:
        if kind not in (numbers.Integral, numbers.Real):
            raise ConfigError("Interval kind must be numbers.Integral or numbers.Real")
        if closed not in ("both", "left", "right", "neither"):
            raise ConfigError(f"closed must be both, left, right or neither, got {closed!r}")
        self.kind, self.left, self.right, self.closed = kind, left, right, closed

    def normalize(self, value: object) -> Any:
        """The value as ``int`` / ``float`` if it lies in the interval, else ``_REJECT``."""
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.kind):
            return _REJECT
        number = int(cast(Any, value)) if self.kind is numbers.Integral else float(value)
        if isinstance(number, float) and not math.isfinite(number):
            return _REJECT
        low_ok = self.left is None or (
            number >= self.left if self.closed in ("both", "left") else number > self.left
        )
        high_ok = self.right is None or (
            number <= self.right if self.closed in ("both", "right") else number < self.right
        )
        return number if low_ok and high_ok else _REJECT

    def __str__(self) -> str:
        kind = "an int" if self.kind is numbers.Integral else "a finite number"
        lb = "[" if self.closed in ("both", "left") and self.left is not None else "("
        rb = "]" if self.closed in ("both", "right") and self.right is not None else ")"
        left = "-inf" if self.left is None else f"{self.left:g}"
        right = "inf" if self.right is None else f"{self.right:g}"
        return f"{kind} in {lb}{left}, {right}{rb}"


class Options:
    """One of a fixed set of values (compared with ``==``; strings must match exactly)."""

    def __init__(self, *values: object) -> None:
        self.values = values

    def normalize(self, value: object) -> Any:
        """The value if it is one of the options, else ``_REJECT``."""
        for option in self.values:
            if type(value) is type(option) and value == option:
                return value
        return _REJECT

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


class HasMethods:
    """Any object with the named methods (a protocol, checked by duck typing)."""

    def __init__(self, *names: str) -> None:
        self.names = names

    def normalize(self, value: object) -> Any:
        """The value if it has every method, else ``_REJECT``."""
        ok = all(callable(getattr(value, n, None)) for n in self.names)
        return value if ok else _REJECT

    def __str__(self) -> str:
        return "an object with " + ", ".join(f"{n}()" for n in self.names)


@functools.cache
def protocol_members(protocol: type) -> tuple[str, ...]:
    """The names a :class:`~typing.Protocol` declares: methods, properties, annotations."""
    names: set[str] = set()
    for cls in protocol.__mro__:
        if cls is object or cls is Protocol or not getattr(cls, "_is_protocol", False):
            continue
        names.update(getattr(cls, "__annotations__", {}))
        names.update(n for n, v in vars(cls).items() if callable(v) or isinstance(v, property))
    return tuple(
        sorted(n for n in names if not n.startswith("_") or n in ("__contains__", "__len__"))
    )


def missing_members(obj: object, protocol: type) -> list[str]:
    """The members of ``protocol`` that ``obj`` lacks (its class's and its own attributes).

    Unlike ``isinstance`` on a runtime protocol it reads no property, so on a database
    reader, where a property may be a round trip, it costs nothing.
    """
    cls, own = type(obj), getattr(obj, "__dict__", {})
    return [n for n in protocol_members(protocol) if not hasattr(cls, n) and n not in own]


def offers(obj: object, protocol: type[_P]) -> TypeIs[_P]:
    """Whether ``obj`` has every member of ``protocol`` (see :func:`missing_members`)."""
    return not missing_members(obj, protocol)


class _Reject:
    def __repr__(self) -> str:
        return "<rejected>"


_REJECT = _Reject()


def _describe(constraint: object) -> str:
    if constraint is object:
        return "any object"
    if constraint is None:
        return "None"
    if constraint is bool:
        return "True or False"
    if constraint == "callable":
        return "a callable"
    if isinstance(constraint, type):
        return f"a {constraint.__name__}"
    return str(constraint)


def _normalize(value: object, constraint: object) -> Any:
    if constraint is None:
        return None if value is None else _REJECT
    if constraint is bool:
        return bool(value) if isinstance(value, (bool, np.bool_)) else _REJECT
    if isinstance(constraint, str):
        if constraint != "callable":
            raise ConfigError(f"unknown constraint {constraint!r}")
        return value if callable(value) else _REJECT
    if isinstance(constraint, (Interval, Options, HasMethods)):
        return constraint.normalize(value)
    if isinstance(constraint, type):
        return value if isinstance(value, constraint) else _REJECT
    raise ConfigError(f"unknown constraint {constraint!r}")


def check_param(owner: str, name: str, value: object, constraints: Sequence[Any]) -> Any:
    """Check one value against its constraints and return it normalised.

    Raises:
        ConfigError: naming ``owner``, ``name``, the value and what is allowed.

    Examples:
        >>> check_param("SSGRetriever", "k", np.int64(3), [Interval(numbers.Integral, 1, None)])
        3
        >>> check_param("SSGRetriever", "k", 2.5, [Interval(numbers.Integral, 1, None)])
        Traceback (most recent call last):
        ...
        semrag.errors.ConfigError: SSGRetriever: k=2.5 is not allowed; expected an int in [1, inf)
    """
    for constraint in constraints:
        normalized = _normalize(value, constraint)
        if normalized is not _REJECT:
            return normalized
    allowed = " or ".join(_describe(c) for c in constraints)
    raise ConfigError(f"{owner}: {name}={value!r} is not allowed; expected {allowed}")


def validate_params(
    owner: str, constraints: Mapping[str, Sequence[Any]], values: Mapping[str, Any]
) -> dict[str, Any]:
    """Check every value that has constraints; return all values, normalised.

    Raises:
        ConfigError: for the first value that is not allowed.
    """
    out = dict(values)
    for name, allowed in constraints.items():
        if name in values:
            out[name] = check_param(owner, name, values[name], allowed)
    return out


_K = [Interval(numbers.Integral, 1, None)]


def check_k(owner: str, k: object, default: int) -> int:
    """A per-call ``k``: ``None`` means ``default``; otherwise an int >= 1.

    Raises:
        ConfigError: for ``0``, negatives, floats, strings and booleans.
    """
    return default if k is None else check_param(owner, "k", k, _K)


def check_query(owner: str, query: object) -> str:
    """A query must be a string with at least one non-whitespace character, valid Unicode.

    Checked at every entry point before any encoder runs: a lone surrogate (what a bad
    decode leaves) cannot be encoded as UTF-8, and a tokenizer would fail on it many frames
    deep.

    Raises:
        TypeError: when it is not a ``str`` (as a ``ConfigError``, which is both).
        ConfigError: when it is empty or whitespace only, or holds a lone surrogate.

    Examples:
        >>> try:
        ...     check_query("X", "bees " + chr(0xD800) + " dance")
        ... except ConfigError as e:
        ...     print(str(e)[:42])
        X: query holds a lone surrogate at charact
    """
    if not isinstance(query, str):
        raise ConfigError(f"{owner}: query must be a str, got {type(query).__name__}")
    if not query.strip():
        raise ConfigError(f"{owner}: query is empty; there is nothing to retrieve for it")
    if not query.isascii():
        try:
            query.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ConfigError(
                f"{owner}: query holds a lone surrogate at character {exc.start} (not valid "
                "Unicode: decode the text with errors='replace' first)"
            ) from None
    return query


def check_keywords(owner: str, accepted: Collection[str], given: Iterable[str]) -> None:
    """Every name in ``given`` must be one of ``accepted`` (a constructor's keywords).

    Raises:
        ConfigError: naming the first unknown keyword, the closest accepted one when a
            name is a likely typo, and what is accepted otherwise. (A ``ConfigError`` is a
            ``TypeError`` too, what Python raises for an unknown keyword.)

    Examples:
        >>> try:
        ...     check_keywords("R()", ["k", "per_passage"], ["per_pasage"])
        ... except ConfigError as e:
        ...     print(str(e).split("(")[-1])
        did you mean 'per_passage'?)
    """
    for name in given:
        if name not in accepted:
            unknown_keyword(owner, accepted, name)


def named_arguments(
    cls: type, owner: str, args: tuple[object, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """``kwargs`` with ``args`` named as ``cls`` takes them by position (``index``, ...).

    What lets the adapters take ``GraphRetriever(index, k=4)`` as the core class does.

    Raises:
        ConfigError: more positional arguments than ``cls`` takes, or one given twice
            (Python's wording, a ``TypeError`` as Python's is).
    """
    names: list[str] = []
    for p in inspect.signature(cls).parameters.values():
        if p.kind is not p.POSITIONAL_OR_KEYWORD:
            break
        names.append(p.name)
    if len(args) > len(names):
        raise ConfigError(
            f"{owner}() takes {len(names)} positional arguments ({', '.join(names)}) "
            f"but {len(args)} were given"
        )
    if twice := [n for n in names[: len(args)] if n in kwargs]:
        raise ConfigError(f"{owner}() got multiple values for argument {twice[0]!r}")
    return {**dict(zip(names, args, strict=False)), **kwargs}


def with_options(
    owner: str, given: Mapping[str, Any], options: Mapping[str, Any]
) -> dict[str, Any]:
    """An adapter's arguments given by name, and those in its ``options`` dict (pre-0.3).

    Raises:
        ConfigError: a parameter given both ways.
    """
    if both := sorted(set(given) & set(options)):
        raise ConfigError(f"{owner}: {both[0]} is given twice (as a field and in options)")
    return {**given, **options}


def unknown_keyword(owner: str, accepted: Collection[str], name: str) -> NoReturn:
    """Raise the ``ConfigError`` of :func:`check_keywords` for ``name``."""
    close = difflib.get_close_matches(name, list(accepted), n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"it takes {', '.join(sorted(accepted))}"
    raise ConfigError(f"{owner} got an unexpected keyword argument {name!r} ({hint})")


REMOVED_IN = "0.4"
"""The release in which a renamed parameter's old spelling stops working."""


def renamed(
    owner: str,
    old_names: dict[str, Any],
    values: Mapping[str, Any],
    renames: Mapping[str, str],
    defaults: Mapping[str, Any],
) -> dict[str, Any]:
    """``values`` with each old spelling in ``old_names`` moved to its new name.

    ``renames`` maps old names to new ones; ``old_names`` holds what the call passed under
    old names (an ``__init__``'s ``**renamed``). Each old spelling warns once per call
    site (``DeprecationWarning``) and works until :data:`REMOVED_IN`.

    Raises:
        ConfigError: when a call gives both spellings.
        TypeError: for a keyword that is neither a parameter nor an old spelling of one
            (what Python raises for an unknown keyword).

    Examples:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     renamed("X", {"kg": 1}, {"graph": None}, {"kg": "graph"}, {"graph": None})
        {'graph': 1}
        >>> str(caught[0].message)
        'X: kg= is now graph=; kg= stops working in semrag 0.4'
    """
    out = dict(values)
    for old, value in old_names.items():
        new = renames.get(old)
        if new is None:
            unknown_keyword(f"{owner}()", [*values, *renames], old)
        if new in out and not _same(out[new], defaults.get(new)):
            raise ConfigError(f"{owner}: give {new}= only ({old}= is its old name)")
        warnings.warn(
            f"{owner}: {old}= is now {new}=; {old}= stops working in semrag {REMOVED_IN}",
            DeprecationWarning,
            stacklevel=3,
        )
        out[new] = value
    return out


class RenamedAttribute:
    """A class attribute's old name: reading it warns and reads the new one (until 0.4).

    Examples:
        >>> class R:
        ...     kg = RenamedAttribute("graph")
        ...     def __init__(self) -> None:
        ...         self.graph = "the graph"
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     R().kg
        'the graph'
    """

    def __init__(self, new: str) -> None:
        self.new = new
        self.old = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.old = name

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return self
        warnings.warn(
            f"{type(obj).__name__}.{self.old} is now .{self.new}; .{self.old} stops working "
            f"in semrag {REMOVED_IN}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(obj, self.new)


class Params:
    """A class whose parameters are declared once: its ``__init__`` and its constraints.

    Subclasses list ``_parameter_constraints`` (one entry per ``__init__`` parameter, checked
    when the class is created), store each parameter under its own name, and start
    ``__init__`` with ``p = self._check_params(locals())``. ``get_params()`` and ``repr``
    read the same declaration, so a parameter cannot be added to one and left out of the
    others.

    Examples:
        >>> class Walk(Params):
        ...     _parameter_constraints = {"k": [Interval(INT, 1, None)], "damping": [REAL]}
        ...     def __init__(self, *, k: int = 10, damping: float = 0.8) -> None:
        ...         p = self._check_params(locals())
        ...         self.k, self.damping = p["k"], p["damping"]
        >>> Walk(k=3)
        Walk(k=3)
        >>> Walk(k=3).get_params()
        {'k': 3, 'damping': 0.8}
        >>> Walk(k=0)
        Traceback (most recent call last):
        ...
        semrag.errors.ConfigError: Walk: k=0 is not allowed; expected an int in [1, inf)
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = set(cls._param_names())
        declared = set(cls._parameter_constraints)
        if names != declared:
            raise ConfigError(
                f"{cls.__name__}: __init__ and _parameter_constraints disagree: "
                f"without a constraint {sorted(names - declared)}, "
                f"constrained but not a parameter {sorted(declared - names)}"
            )

    @classmethod
    def _signature(cls) -> list[inspect.Parameter]:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        return [p for p in params if p.kind not in variadic]

    @classmethod
    def _param_names(cls) -> list[str]:
        return [p.name for p in cls._signature()]

    def _check_params(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """This call's parameters (``locals()`` of ``__init__``), checked and normalised."""
        values = {name: given[name] for name in self._param_names()}
        return validate_params(type(self).__name__, self._parameter_constraints, values)

    def get_params(self) -> dict[str, Any]:
        """Every parameter's current value, by name (in the signature's order)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def __repr__(self) -> str:
        shown = []
        values = self.get_params()
        for p in self._signature():
            value = values[p.name]
            if p.default is not inspect.Parameter.empty and _same(value, p.default):
                continue
            shown.append(f"{p.name}={_brief(value)}")
        return f"{type(self).__name__}({', '.join(shown)})"


def _same(value: object, default: object) -> bool:
    if value is default:
        return True
    if isinstance(value, (bool, int, float, str, tuple, type(None))):
        return type(value) is type(default) and value == default
    return False


def _brief(value: object) -> str:
    """A value as ``repr`` shows it: plain values in full, objects by their class."""
    if isinstance(value, (bool, int, float, str, tuple, type(None))):
        return repr(value)
    return f"<{type(value).__name__}>"
