"""How a framework's splitter keywords map onto the core chunkers' cap.

LangChain's ``TextSplitter`` and LlamaIndex's ``SentenceSplitter`` describe their output
with ``chunk_size`` and ``chunk_overlap``. In semrag the semantic or trained breaks decide
where chunks end, and those two numbers become the **hard cap and overlap of the
cap-splitting step**, measured the framework's way:

* ``chunk_size`` -> ``max_tokens`` and ``chunk_overlap`` -> ``overlap_tokens`` (and
  LangChain's semantic splitter's ``min_chunk_size`` -> ``min_tokens``: a shorter segment
  merges into its more similar neighbour, where LangChain's joins the next one);
* the unit is the framework's: LangChain measures with ``length_function`` (characters,
  ``len``, by default); LlamaIndex with its ``tokenizer`` callable when one is given,
  else with the chunker's own tokenizer (the embedder's word pieces);
* precedence: the framework names and the core names set the same thing, so giving both
  (``chunk_size`` and ``max_tokens``, ``chunk_overlap`` and ``overlap_tokens``,
  ``length_function`` and ``tokenizer``) raises :class:`~semrag.errors.ConfigError`
  rather than letting one silently win; a measure or an overlap without ``chunk_size``
  raises too, since its unit would be ambiguous.

Without ``chunk_size`` the core defaults hold (a cap of 256 tokens of the embedder's
tokenizer). The size target (``target_tokens="auto"``) is a share of the cap, so it
follows ``chunk_size`` in the framework's unit.

The frameworks' own semantic splitters name their break rule differently; those names are
accepted with their meaning too (:func:`framework_threshold_arguments`): LangChain's
``breakpoint_threshold_type`` / ``breakpoint_threshold_amount`` / ``number_of_chunks``
(with LangChain's default amounts: percentile 95, standard deviation 3, interquartile 1.5,
gradient 95) and LlamaIndex's ``breakpoint_percentile_threshold``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from semrag.errors import ConfigError

__all__ = ["framework_cap_arguments", "framework_threshold_arguments"]


def framework_cap_arguments(
    chunker_args: Mapping[str, Any],
    *,
    chunk_size: Any = None,
    chunk_overlap: Any = None,
    min_chunk_size: Any = None,
    measure: Callable[[str], Any] | None = None,
    default_measure: Callable[[str], Any] | None = None,
    measure_name: str = "length_function",
) -> dict[str, Any]:
    """Fold ``chunk_size`` / ``chunk_overlap`` / a measure into core chunker arguments.

    Args:
        chunker_args: the core keyword arguments the user gave.
        chunk_size: the framework's chunk size, or ``None``.
        chunk_overlap: the framework's chunk overlap, or ``None``.
        min_chunk_size: the framework's smallest chunk, or ``None``.
        measure: the user's length function or token-list function, or ``None``.
        default_measure: the framework's measure when ``chunk_size`` is given without
            one (LangChain: ``len``; LlamaIndex: ``None``, the chunker's tokenizer).
        measure_name: the framework's name for ``measure``, for error messages.

    Returns:
        A new dict of core arguments (``max_tokens``, ``overlap_tokens``, ``min_tokens``,
        ``tokenizer``).

    Raises:
        ConfigError: when a setting is given under both names, or a measure, an overlap
            or a smallest size comes without ``chunk_size``.

    Examples:
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
        for name, core, value in (
            ("chunk_overlap", "overlap_tokens", chunk_overlap),
            ("min_chunk_size", "min_tokens", min_chunk_size),
        ):
            if value is not None:
                raise ConfigError(
                    f"{name} is measured like chunk_size; give chunk_size too, "
                    f"or {core} for the default token cap"
                )
        return args
    given = {
        "max_tokens": chunk_size,
        "overlap_tokens": chunk_overlap,
        "min_tokens": min_chunk_size,
    }
    names = {
        "max_tokens": "chunk_size",
        "overlap_tokens": "chunk_overlap",
        "min_tokens": "min_chunk_size",
    }
    for core, value in given.items():
        if value is not None:
            if core in args:
                raise ConfigError(f"{names[core]} and {core} set the same thing; give one of them")
            args[core] = value
    if measure is not None and args.get("tokenizer") is not None:
        raise ConfigError(f"{measure_name} and tokenizer both measure the cap; give one of them")
    if measure is None and args.get("tokenizer") is None:
        measure = default_measure
    if measure is not None:
        args["tokenizer"] = measure
    return args


# LangChain's names for the statistics (langchain_experimental SemanticChunker) and its
# default amounts, which differ from semrag's.
_LANGCHAIN_THRESHOLDS = {
    "percentile": ("percentile", 95.0),
    "standard_deviation": ("std", 3.0),
    "interquartile": ("interquartile", 1.5),
    "gradient": ("gradient", 95.0),
}


def framework_threshold_arguments(
    chunker_args: Mapping[str, Any],
    *,
    breakpoint_threshold_type: str | None = None,
    breakpoint_threshold_amount: float | None = None,
    number_of_chunks: int | None = None,
    breakpoint_percentile_threshold: float | None = None,
) -> dict[str, Any]:
    """Fold the frameworks' semantic-splitter break rules into ``threshold`` arguments.

    Args:
        chunker_args: the core keyword arguments the user gave.
        breakpoint_threshold_type: LangChain's ``"percentile"``, ``"standard_deviation"``,
            ``"interquartile"`` or ``"gradient"``.
        breakpoint_threshold_amount: its amount (LangChain's default for the type if
            ``None``).
        number_of_chunks: LangChain's target number of chunks (``threshold="target_chunks"``).
        breakpoint_percentile_threshold: LlamaIndex's percentile.

    Raises:
        ConfigError: when a rule is given twice (a framework name and ``threshold`` /
            ``threshold_amount``, or two framework names), or a type is unknown.

    Examples:
        >>> framework_threshold_arguments({}, breakpoint_threshold_type="standard_deviation")
        {'threshold': 'std', 'threshold_amount': 3.0}
    """
    given = {
        name: value
        for name, value in (
            ("breakpoint_threshold_type", breakpoint_threshold_type),
            ("number_of_chunks", number_of_chunks),
            ("breakpoint_percentile_threshold", breakpoint_percentile_threshold),
        )
        if value is not None
    }
    args = dict(chunker_args)
    if breakpoint_threshold_amount is not None and breakpoint_threshold_type is None:
        raise ConfigError("breakpoint_threshold_amount needs breakpoint_threshold_type")
    if not given:
        return args
    if len(given) > 1:
        raise ConfigError(f"give one break rule, not {sorted(given)}")
    clash = [k for k in ("threshold", "threshold_amount") if k in args]
    if clash:
        raise ConfigError(f"{next(iter(given))} and {clash[0]} set the same break rule; give one")
    if breakpoint_threshold_type is not None:
        if breakpoint_threshold_type not in _LANGCHAIN_THRESHOLDS:
            raise ConfigError(
                f"breakpoint_threshold_type={breakpoint_threshold_type!r} is not allowed; "
                f"expected one of {sorted(_LANGCHAIN_THRESHOLDS)}"
            )
        kind, default = _LANGCHAIN_THRESHOLDS[breakpoint_threshold_type]
        amount = default if breakpoint_threshold_amount is None else breakpoint_threshold_amount
        args.update(threshold=kind, threshold_amount=amount)
    elif number_of_chunks is not None:
        args.update(threshold="target_chunks", threshold_amount=number_of_chunks)
    else:
        args.update(threshold="percentile", threshold_amount=breakpoint_percentile_threshold)
    return args
