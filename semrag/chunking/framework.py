"""How a framework's splitter keywords map onto the core chunkers' cap.

LangChain's ``TextSplitter`` and LlamaIndex's ``SentenceSplitter`` describe their output
with ``chunk_size`` and ``chunk_overlap``. In semrag the semantic or trained breaks decide
where chunks end, and those two numbers become the **hard cap and overlap of the
cap-splitting step**, measured the framework's way:

* ``chunk_size`` -> ``max_tokens`` and ``chunk_overlap`` -> ``overlap_tokens``;
* the unit is the framework's: LangChain measures with ``length_function`` (characters,
  ``len``, by default); LlamaIndex with its ``tokenizer`` callable when one is given,
  else with the chunker's own tokenizer (the embedder's word pieces);
* precedence: the framework names and the core names set the same thing, so giving both
  (``chunk_size`` and ``max_tokens``, ``chunk_overlap`` and ``overlap_tokens``,
  ``length_function`` and ``tokenizer``) raises :class:`~semrag.errors.ConfigError`
  rather than letting one silently win; a measure or an overlap without ``chunk_size``
  raises too, since its unit would be ambiguous.

Without ``chunk_size`` the core defaults hold (1024 tokens of the embedder's tokenizer).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from semrag.errors import ConfigError

__all__ = ["framework_cap_arguments"]


def framework_cap_arguments(
    chunker_args: Mapping[str, Any],
    *,
    chunk_size: Any = None,
    chunk_overlap: Any = None,
    measure: Callable[[str], Any] | None = None,
    default_measure: Callable[[str], Any] | None = None,
    measure_name: str = "length_function",
) -> dict[str, Any]:
    """Fold ``chunk_size`` / ``chunk_overlap`` / a measure into core chunker arguments.

    Args:
        chunker_args: the core keyword arguments the user gave.
        chunk_size: the framework's chunk size, or ``None``.
        chunk_overlap: the framework's chunk overlap, or ``None``.
        measure: the user's length function or token-list function, or ``None``.
        default_measure: the framework's measure when ``chunk_size`` is given without
            one (LangChain: ``len``; LlamaIndex: ``None``, the chunker's tokenizer).
        measure_name: the framework's name for ``measure``, for error messages.

    Returns:
        A new dict of core arguments (``max_tokens``, ``overlap_tokens``, ``tokenizer``).

    Raises:
        ConfigError: when a setting is given under both names, or a measure or overlap
            comes without ``chunk_size``.

    Example:
        >>> framework_cap_arguments({}, chunk_size=1000, chunk_overlap=200, default_measure=len)
        {'max_tokens': 1000, 'overlap_tokens': 200, 'tokenizer': <built-in function len>}
    """
    args = dict(chunker_args)
    if chunk_size is None:
        if measure is not None:
            raise ConfigError(
                f"{measure_name} measures chunk_size; give chunk_size too "
                "(or pass tokenizer= to measure the core max_tokens)"
            )
        if chunk_overlap is not None:
            raise ConfigError(
                "chunk_overlap is measured like chunk_size; give chunk_size too, "
                "or overlap_tokens for the default token cap"
            )
        return args
    for framework, core in (("chunk_size", "max_tokens"), ("chunk_overlap", "overlap_tokens")):
        if core in args and (framework == "chunk_size" or chunk_overlap is not None):
            raise ConfigError(f"{framework} and {core} set the same cap; give one of them")
    args["max_tokens"] = chunk_size
    if chunk_overlap is not None:
        args["overlap_tokens"] = chunk_overlap
    if measure is not None and args.get("tokenizer") is not None:
        raise ConfigError(f"{measure_name} and tokenizer both measure the cap; give one of them")
    if measure is None and args.get("tokenizer") is None:
        measure = default_measure
    if measure is not None:
        args["tokenizer"] = measure
    return args
