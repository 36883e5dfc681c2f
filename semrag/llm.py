"""The LLM protocol and a validated-JSON helper.

semrag never needs an LLM: every LLM step has a deterministic default. When one is given,
it only has to implement :class:`LLM` (``complete`` and ``acomplete``); LangChain chat
models and LLMs and LlamaIndex LLMs are bridged by ``langchain_semrag.LangChainLLM`` and
``llama_index_semrag.LlamaIndexLLM``.

:func:`complete_json` asks for JSON, extracts it from the reply (code fences and prose
around it are tolerated), validates it against a small JSON-Schema subset, retries once
with the validation error in the prompt, and raises :class:`~semrag.errors.LLMOutputError`
if the second reply is still wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from semrag.errors import ConfigError, LLMOutputError

__all__ = ["LLM", "acomplete_json", "complete_json", "extract_json", "validate_json"]


@runtime_checkable
class LLM(Protocol):
    """A text-in, text-out language model."""

    def complete(self, prompt: str) -> str:
        """Return the model's reply to ``prompt``."""
        ...

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        ...


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TYPES: Mapping[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def extract_json(reply: str) -> Any:
    """Parse the JSON value in an LLM reply.

    Tries, in order: the whole reply, the contents of a fenced code block, and the first
    balanced ``{...}`` or ``[...]`` in the text.

    Args:
        reply: the raw reply.

    Returns:
        The parsed value.

    Raises:
        LLMOutputError: (a ``ValueError``) if no JSON value can be parsed.
    """
    candidates = [reply.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(reply)]
    decoder = json.JSONDecoder()
    for text in candidates:
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
    for i, ch in enumerate(reply):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(reply, i)
            except json.JSONDecodeError:
                continue
            return value
    raise LLMOutputError("no JSON value found in the reply")


def validate_json(value: Any, schema: Mapping[str, Any], path: str = "$") -> None:
    """Validate ``value`` against a JSON-Schema subset.

    Supported keywords: ``type`` (a name or a list of names), ``properties``, ``required``,
    ``additionalProperties`` (bool), ``items``, ``enum``, ``minimum``, ``maximum``,
    ``minItems``, ``maxItems``, ``minLength``.

    Args:
        value: the parsed JSON.
        schema: the schema.
        path: where ``value`` sits, for messages.

    Raises:
        LLMOutputError: (a ``ValueError``) naming the first violation and its path.
    """
    kind = schema.get("type")
    if kind is not None:
        names = [kind] if isinstance(kind, str) else list(kind)
        for name in names:
            if name not in _TYPES:
                raise ConfigError(f"unsupported schema type {name!r} at {path}")
        ok = any(
            isinstance(value, _TYPES[n])
            and not (isinstance(value, bool) and n in ("integer", "number"))
            for n in names
        )
        if not ok:
            raise LLMOutputError(
                f"{path}: expected {' or '.join(names)}, got {type(value).__name__}"
            )
    if "enum" in schema and value not in schema["enum"]:
        raise LLMOutputError(f"{path}: {value!r} is not one of {schema['enum']!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise LLMOutputError(f"{path}: {value} is below the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise LLMOutputError(f"{path}: {value} is above the maximum {schema['maximum']}")
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        raise LLMOutputError(f"{path}: string shorter than {schema['minLength']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                raise LLMOutputError(f"{path}: missing required key {key!r}")
        if schema.get("additionalProperties", True) is False:
            extra = sorted(set(value) - set(props))
            if extra:
                raise LLMOutputError(f"{path}: unexpected keys {extra!r}")
        for key, sub in props.items():
            if key in value:
                validate_json(value[key], sub, f"{path}.{key}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            raise LLMOutputError(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise LLMOutputError(f"{path}: more than {schema['maxItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                validate_json(item, schema["items"], f"{path}[{i}]")


def _check(reply: Any, schema: Mapping[str, Any]) -> tuple[Any, str]:
    if not isinstance(reply, str):
        return None, f"the LLM returned {type(reply).__name__}, not text"
    try:
        value = extract_json(reply)
        validate_json(value, schema)
    except ValueError as exc:
        return None, str(exc)
    return value, ""


def _retry_prompt(prompt: str, reply: str, problem: str) -> str:
    return (
        f"{prompt}\n\nYour previous reply was not valid: {problem}\n"
        f"Previous reply:\n{reply[:2000]}\n\n"
        "Answer again with only the JSON value, matching the schema exactly."
    )


def _fail(reply: Any, problem: str, attempts: int) -> LLMOutputError:
    return LLMOutputError(
        f"LLM reply failed validation after {attempts} attempts: {problem}",
        reply=str(reply),
        problem=problem,
    )


def complete_json(llm: LLM, prompt: str, schema: Mapping[str, Any], *, retries: int = 1) -> Any:
    """Ask ``llm`` for JSON matching ``schema``.

    Args:
        llm: the model.
        prompt: the request; it should describe the JSON wanted.
        schema: a JSON-Schema subset (see :func:`validate_json`).
        retries: extra attempts after an invalid reply, each told what was wrong.

    Returns:
        The parsed, validated JSON value.

    Raises:
        LLMOutputError: if every reply is unparsable or invalid; carries the last reply.
    """
    reply = llm.complete(prompt)
    value, problem = _check(reply, schema)
    for _ in range(retries):
        if not problem:
            break
        reply = llm.complete(_retry_prompt(prompt, str(reply), problem))
        value, problem = _check(reply, schema)
    if problem:
        raise _fail(reply, problem, retries + 1)
    return value


async def acomplete_json(
    llm: LLM, prompt: str, schema: Mapping[str, Any], *, retries: int = 1
) -> Any:
    """Async twin of :func:`complete_json`."""
    reply = await llm.acomplete(prompt)
    value, problem = _check(reply, schema)
    for _ in range(retries):
        if not problem:
            break
        reply = await llm.acomplete(_retry_prompt(prompt, str(reply), problem))
        value, problem = _check(reply, schema)
    if problem:
        raise _fail(reply, problem, retries + 1)
    return value


@dataclass(frozen=True, slots=True)
class LLMFailed:
    """An LLM step that failed, in place of its reply, where a documented fallback follows."""

    reason: str
    """What went wrong (:func:`llm_failure`), for the fallback's note."""


def ask_json(llm: LLM, prompt: str, schema: Mapping[str, Any], *, on_error: str) -> Any:
    """:func:`complete_json`'s value, or :class:`LLMFailed` saying why it failed.

    Every failure (an invalid reply, an exception from the model) is an ``LLMFailed`` with
    ``on_error="fallback"``; with ``"raise"`` it propagates.
    """
    try:
        return complete_json(llm, prompt, schema)
    except Exception as exc:  # every LLM failure takes the documented path
        return llm_failed(exc, on_error)


async def aask_json(llm: LLM, prompt: str, schema: Mapping[str, Any], *, on_error: str) -> Any:
    """Async twin of :func:`ask_json`."""
    try:
        return await acomplete_json(llm, prompt, schema)
    except Exception as exc:  # every LLM failure takes the documented path
        return llm_failed(exc, on_error)


def llm_failed(exc: Exception, on_error: str) -> LLMFailed:
    """``exc`` raised again (``on_error="raise"``), or an :class:`LLMFailed` saying why."""
    if on_error == "raise":
        raise exc
    return LLMFailed(llm_failure(exc))


def llm_failure(exc: BaseException) -> str:
    """Say what went wrong in an LLM step, for the notes of a documented fallback.

    An :class:`~semrag.errors.LLMOutputError` is an invalid reply; anything else is a
    failed call (network, quota, a model that raised).

    Examples:
        >>> llm_failure(TimeoutError("no answer in 30 s"))
        'LLM call failed (TimeoutError: no answer in 30 s)'
    """
    if isinstance(exc, LLMOutputError):
        return f"LLM reply invalid ({exc.problem})"
    return f"LLM call failed ({type(exc).__name__}: {exc})"
