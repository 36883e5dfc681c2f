"""The one exception hierarchy of semrag.

Every error semrag raises on purpose derives from :class:`SemragError`. Errors that
mean "you passed a bad value" also derive from the matching builtin, so callers'
``except ValueError:`` and ``except ImportError:`` keep working::

    * SemragError
      + ConfigError (ValueError, TypeError)  bad argument or configuration
      |  - DocumentConflictError          an add names ids already indexed (on_conflict=)
      |  - EmbedderMismatchError          stored vectors come from another model than the embedder
      + NotFittedError (AttributeError)   a model or index used before fit/build
      + NotIndexedError (KeyError)        a document or chunk id the index does not hold
      + MissingDependencyError (ImportError)
      + EmbeddingError                    an embedder returned the wrong shape or non-finite values
      + StoreError
      |  - StoreUnavailableError          a graph store cannot be reached
      |  - SaveConflictError              another writer saved the directory since this one read it
      + LLMError
         - LLMOutputError (ValueError)    an LLM reply that is not the JSON asked for
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "DocumentConflictError",
    "EmbedderMismatchError",
    "EmbeddingError",
    "LLMError",
    "LLMOutputError",
    "MissingDependencyError",
    "NotFittedError",
    "NotIndexedError",
    "SaveConflictError",
    "SemragError",
    "StoreError",
    "StoreUnavailableError",
]


class SemragError(Exception):
    """Base class of every error semrag raises on purpose."""


class ConfigError(SemragError, ValueError, TypeError):
    """An argument or configuration value is invalid (a bad value or a value of the wrong type).

    It is both a ``ValueError`` and a ``TypeError``, as scikit-learn's
    ``InvalidParameterError`` is, so callers' ``except`` clauses for either keep working.
    """


class NotFittedError(SemragError, AttributeError):
    """A model or index was used before it was fitted or built."""


class NotIndexedError(SemragError, KeyError):
    """A document or chunk id that the index (or one of its parts) does not hold.

    A ``KeyError``, so lookups keep the mapping protocol; its message names the id.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class MissingDependencyError(SemragError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class EmbeddingError(SemragError):
    """An embedder returned vectors of the wrong count or dimension, or NaN/inf values."""


class StoreError(SemragError):
    """A graph or index store failed."""


class StoreUnavailableError(StoreError):
    """A store cannot be reached (server down, wrong address or credentials)."""


class SaveConflictError(StoreError):
    """A save would publish over a version of the directory that its writer never saw.

    Another process (or another index) saved the directory since this index was loaded
    from it or last saved it; nothing was published. Load the directory again, apply the
    changes again and save, or save with ``overwrite=True`` to replace it.

    Attributes:
        current: the version the directory publishes now.
        base: the version the refused save was based on (``None``: none of it).
    """

    def __init__(self, message: str, *, current: int, base: int | None) -> None:
        super().__init__(message)
        self.current = current
        self.base = base


class LLMError(SemragError):
    """An LLM call failed."""


class LLMOutputError(LLMError, ValueError):
    """An LLM reply could not be parsed or validated (after a retry, where one is made).

    A ``ValueError`` too, as a reply that is not the value asked for.

    Attributes:
        reply: the last raw reply of the LLM.
        problem: what was wrong with it.
    """

    def __init__(self, message: str, *, reply: str = "", problem: str = "") -> None:
        super().__init__(message)
        self.reply = reply
        self.problem = problem


def missing_dependency(package: str, extra: str) -> MissingDependencyError:
    """Build the error raised when an optional dependency is absent.

    Args:
        package: the import name that failed.
        extra: the semrag extra that installs it.

    Returns:
        A :class:`MissingDependencyError` with the exact install command.
    """
    return MissingDependencyError(
        f'{package!r} is not installed; install it with: pip install "semrag[{extra}]"'
    )


class DocumentConflictError(ConfigError):
    """An add names documents that are already indexed, or one id twice.

    Raised when the caller did not say to replace or skip them (``on_conflict=``);
    nothing was changed.

    Attributes:
        ids: the conflicting document ids.
    """

    def __init__(self, message: str, *, ids: list[str]) -> None:
        super().__init__(message)
        self.ids = ids


class EmbedderMismatchError(ConfigError):
    """Stored vectors and the embedder about to use them come from different models.

    Raised by ``SemanticIndex.load``, ``Neo4jIndex``, the vector stores and
    ``add_prepared`` (see :mod:`semrag.fingerprint`); nothing was loaded or added.

    Attributes:
        stored: the name of the model the vectors were made with.
        given: the name of the embedder given.
    """

    def __init__(self, message: str, *, stored: str, given: str) -> None:
        super().__init__(message)
        self.stored = stored
        self.given = given
