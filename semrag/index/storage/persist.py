"""Saves that several processes share: immutable versions published by one atomic step.

A saved directory holds numbered, immutable versions and a pointer to the current one::

    D/
      CURRENT          {"generation": 7, "folder": "v7", ...}   replaced with os.replace
      v7/              manifest.json (a SHA-256 of each file) + the files
      v6/              kept while loads that started before v7 may still read it
      .writer.lock     the writers' lease (released by the kernel when its holder dies)
      .tmp-PID-RANDOM/ a save being written

A save (:func:`atomic_directory`) writes its files and manifest into a temporary folder,
then, holding the writers' lease, checks the version it was based on, moves the folder in
as the next version and replaces ``CURRENT``: the one atomic step that publishes it. A
load (:func:`load_saved`) resolves ``CURRENT`` once and reads only that version's files;
it never writes. So a load that overlaps any number of saves gets one whole version, old
or new, and a kill at any moment leaves the last published version current:

=============================  =====================================  ====================
killed ...                     on disk                                a load gets
=============================  =====================================  ====================
while writing files            the current version + a tmp folder     the old version
after the manifest             the current version + a complete tmp   the old version
after moving the folder in     an unpublished ``v<n+1>``              the old version
after publishing               ``CURRENT`` names ``v<n+1>``           the new version
=============================  =====================================  ====================

The next save removes what dead writers left (their tmp folders, unpublished versions).
A superseded version is removed when it is not among the newest :data:`KEEP` and was
superseded more than :data:`GRACE_S` seconds ago; a load whose version was removed under
it (a load slower than the grace) starts again on the current one.

Writers: a save based on version ``n`` (the index was loaded from it or saved it) refuses
to publish over any other version with :class:`SaveConflictError`, so two writers never
lose each other's changes silently. Directories written by semrag 0.2 (the files and
``manifest.json`` directly in ``D``) still load, as version 0; the next save moves them
to this layout.

Every failure is typed: :class:`~semrag.errors.StoreError` for a damaged or unreadable
save (never a raw ``JSONDecodeError`` or ``OSError``), :class:`~semrag.errors.ConfigError`
for a missing directory, another kind or a newer format.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from filelock import FileLock, Timeout

from semrag._version import is_newer
from semrag.errors import ConfigError, SaveConflictError, StoreError

__all__ = [
    "ANY_BASE",
    "Draft",
    "Saved",
    "atomic_directory",
    "current_generation",
    "load_saved",
    "saved_folder",
]

MANIFEST = "manifest.json"
POINTER = "CURRENT"
LEASE = ".writer.lock"
KEEP: Final = 2
"""Superseded versions are removed only beyond the newest ``KEEP`` (the current included)."""
GRACE_S: Final = 60.0
"""... and only once superseded for this long (a load still reading one has this long)."""
LEASE_TIMEOUT_S: Final = 120.0
"""How long a save waits for another writer's publication before it gives up."""
RETRIES: Final = 5
"""How often a load starts again when the version it read was superseded and removed."""
ANY_BASE: Final = -1
"""``base=`` for a save that replaces whatever version is current (``overwrite=True``)."""

_VERSION = re.compile(r"v(\d+)")
T = TypeVar("T")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _step(name: str) -> None:
    """A point of the save protocol; a no-op (fault-injection tests patch it to kill)."""


@dataclass
class Draft:
    """A save being written: fill :attr:`folder`; :attr:`generation` is set once published."""

    folder: Path
    generation: int | None = None


@dataclass(frozen=True)
class Saved:
    """One published version of a saved directory.

    Attributes:
        folder: the folder that holds its files.
        manifest: its verified manifest.
        generation: its number in the directory (0 for a directory written by semrag 0.2).
    """

    folder: Path
    manifest: dict[str, Any]
    generation: int


def _read_pointer(directory: Path) -> dict[str, Any] | None:
    try:
        text = (directory / POINTER).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"{directory / POINTER} cannot be read ({exc})") from exc
    try:
        pointer = json.loads(text)
        generation, folder = pointer["generation"], pointer["folder"]
    except (json.JSONDecodeError, TypeError, KeyError) as exc:
        raise StoreError(f"{directory / POINTER} is damaged ({exc}): it names no version") from exc
    if not isinstance(generation, int) or folder != f"v{generation}":
        raise StoreError(f"{directory / POINTER} is damaged: it names no version")
    return dict(pointer)


def current_generation(directory: str | Path) -> int | None:
    """The number of the version ``directory`` publishes now (cheap: one small file).

    ``0`` for a directory written by semrag 0.2, ``None`` when it holds no save.

    Raises:
        StoreError: if the pointer to the current version is damaged.
    """
    directory = Path(directory)
    pointer = _read_pointer(directory)
    if pointer is not None:
        return int(pointer["generation"])
    return 0 if (directory / MANIFEST).is_file() else None


def saved_folder(directory: str | Path) -> Path:
    """The folder of the version ``directory`` publishes now (``directory`` itself for 0.2).

    Raises:
        ConfigError: if ``directory`` holds no save.
    """
    directory = Path(directory)
    generation = current_generation(directory)
    if generation is None:
        raise ConfigError(f"no save at {directory}")
    return directory / f"v{generation}" if generation else directory


# -- writing -------------------------------------------------------------------------------------
@contextlib.contextmanager
def atomic_directory(
    target: str | Path, manifest: dict[str, Any], *, base: int | None = ANY_BASE
) -> Iterator[Draft]:
    """Yield a :class:`Draft` to fill; on success it is published as ``target``'s next version.

    Args:
        target: the saved directory (created when missing).
        manifest: metadata written to ``manifest.json`` after the files, with their
            checksums added under ``"files"`` and the time of the save under ``"saved_ns"``.
        base: the version this save was based on (``None``: a new directory); the save
            refuses to publish over any other. :data:`ANY_BASE` replaces whatever is current.

    Raises:
        SaveConflictError: if ``target`` publishes a version other than ``base``.
        StoreError: if another writer holds the lease for :data:`LEASE_TIMEOUT_S`, or the
            directory cannot be written.
    """
    target = Path(target)
    try:
        target.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{os.getpid()}-", dir=target))
    except OSError as exc:
        raise StoreError(f"cannot write a save into {target} ({exc})") from exc
    draft = Draft(tmp)
    try:
        yield draft
        _step("files_written")
        record = _seal(tmp, manifest)
        _step("manifest_written")
        with _lease(target):
            draft.generation = _publish(target, tmp, record, base)
            _collect(target, draft.generation)
        _step("cleaned")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _seal(folder: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """Sync the folder's files and write the manifest with their checksums (last)."""
    files = sorted(p.name for p in folder.iterdir() if p.is_file())
    for name in files:
        with open(folder / name, "rb") as f:
            os.fsync(f.fileno())
    record = {
        **manifest,
        "saved_ns": time.time_ns(),
        "files": {name: _sha256(folder / name) for name in files},
    }
    with open(folder / MANIFEST, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    _fsync_dir(folder)
    return record


@contextlib.contextmanager
def _lease(target: Path) -> Iterator[None]:
    """The writers' lease on ``target`` (an OS file lock: a killed holder releases it)."""
    lock = FileLock(str(target / LEASE), timeout=LEASE_TIMEOUT_S)
    try:
        lock.acquire()
    except Timeout:
        raise StoreError(
            f"another writer has held {target}'s lease for {LEASE_TIMEOUT_S:.0f} s; "
            "one save at a time publishes"
        ) from None
    try:
        yield
    finally:
        lock.release()


def _versions(target: Path) -> dict[int, Path]:
    return {
        int(m.group(1)): p
        for p in target.iterdir()
        if p.is_dir() and (m := _VERSION.fullmatch(p.name))
    }


def _publish(target: Path, folder: Path, record: dict[str, Any], base: int | None) -> int:
    """Move ``folder`` in as the next version and point ``CURRENT`` at it (the lease held)."""
    current = current_generation(target)
    if base != ANY_BASE and current is not None and current != base:
        held = "no save" if base is None else f"version {base}"
        raise SaveConflictError(
            f"{target} now publishes version {current}, and this save was based on {held}: "
            "another writer saved meanwhile. Load it, apply your changes again and save "
            "(or save with overwrite=True to replace it)",
            current=current,
            base=base,
        )
    generation = max([current or 0, *_versions(target)]) + 1  # past any unpublished version
    os.replace(folder, target / f"v{generation}")
    _fsync_dir(target)
    _step("folder_moved_in")
    pointer = {
        "generation": generation,
        "folder": f"v{generation}",
        "kind": record.get("kind"),
        "version": record.get("version"),
        "saved_ns": record["saved_ns"],
    }
    tmp_pointer = target / f".{POINTER}.{os.getpid()}"
    with open(tmp_pointer, "w", encoding="utf-8") as f:
        json.dump(pointer, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp_pointer, target / POINTER)
    _fsync_dir(target)
    _step("published")
    if current == 0:
        _remove_legacy(target)
    return generation


def _remove_legacy(target: Path) -> None:
    """Remove a 0.2 save's files from ``target`` once a new version is published."""
    with contextlib.suppress(OSError, ValueError, KeyError):
        listed = json.loads((target / MANIFEST).read_text(encoding="utf-8"))["files"]
        for name in listed:
            (target / Path(str(name)).name).unlink(missing_ok=True)
        (target / MANIFEST).unlink()


def _collect(target: Path, current: int) -> None:
    """Remove dead writers' tmp folders, unpublished versions and long-superseded ones."""
    now = time.time_ns()
    versions = _versions(target)
    for number, path in versions.items():
        if number > current:  # moved in by a writer killed before it published
            shutil.rmtree(path, ignore_errors=True)
        elif number <= current - KEEP:
            successor = versions.get(number + 1)
            since = _saved_ns(successor) if successor is not None else 0
            if now - since > GRACE_S * 1e9:
                shutil.rmtree(path, ignore_errors=True)
    for path in target.iterdir():
        if path.name.startswith(".tmp-") and not _writer_alive(path):
            shutil.rmtree(path, ignore_errors=True)
        elif path.name.startswith(f".{POINTER}."):  # a pointer a killed writer never moved
            path.unlink(missing_ok=True)


def _saved_ns(folder: Path) -> int:
    try:
        return int(json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["saved_ns"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _writer_alive(path: Path) -> bool:
    """Whether the process that made a tmp folder still runs (its pid is in the name)."""
    try:
        pid = int(path.name.split("-")[1])
    except (ValueError, IndexError):
        return False
    if pid == os.getpid():
        return True  # a save of this process may be in progress in another thread
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- reading -------------------------------------------------------------------------------------
def _load_manifest(folder: Path, kind: str) -> dict[str, Any]:
    path = folder / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StoreError(
            f"{folder} has no {MANIFEST}: it is incomplete or not a saved {kind}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"{path} cannot be read ({exc})") from exc
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(f"{path} is not valid JSON ({exc}): the save is corrupt") from exc
    if not isinstance(manifest, dict):
        raise StoreError(f"{path} is not a JSON object: the save is corrupt")
    return manifest


def _verify(folder: Path, manifest: dict[str, Any], kind: str, format_version: int) -> None:
    found_kind = manifest.get("kind")
    if found_kind != kind:
        raise ConfigError(f"{folder} holds a {found_kind!r}, not a {kind!r}")
    version = manifest.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise StoreError(f"{folder}: format_version {version!r} is not a format semrag wrote")
    if version > format_version:
        raise ConfigError(
            f"{folder} was saved in format {version}; this semrag reads up to "
            f"{format_version}: upgrade semrag"
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise StoreError(f"{folder}: the manifest lists no files; the save cannot be verified")
    for name, digest in files.items():
        file = folder / str(name)
        try:
            intact = file.is_file() and _sha256(file) == digest
        except OSError:
            intact = False
        if not intact:
            raise StoreError(f"{file} is missing or corrupt (checksum mismatch)")


def _open(directory: Path, generation: int, kind: str, format_version: int) -> Saved:
    folder = directory / f"v{generation}" if generation else directory
    manifest = _load_manifest(folder, kind)
    _verify(folder, manifest, kind, format_version)
    return Saved(folder, manifest, generation)


def load_saved(
    directory: str | Path,
    read: Callable[[Saved], T],
    *,
    kind: str,
    format_version: int,
    library_version: str,
) -> T:
    """Verify the version ``directory`` publishes now and ``read`` it.

    ``read`` gets the :class:`Saved` version and reads only its folder. When it fails
    and the directory publishes another version by then (the one read was superseded
    and removed under a load slower than :data:`GRACE_S`), the load starts again on the
    current version, up to :data:`RETRIES` times; a failure on a version that is still
    current is the error.

    Raises:
        ConfigError: if the directory holds no save, or one of another kind or of a
            newer format.
        StoreError: if the save is damaged (a missing or corrupt file, an unreadable
            manifest), or ``read`` raised it.
    """
    directory = Path(directory)
    attempt = 0
    while True:
        generation = current_generation(directory)
        if generation is None:
            raise ConfigError(f"no saved {kind} at {directory}")
        try:
            saved = _open(directory, generation, kind, format_version)
            if is_newer(saved.manifest.get("library_version"), library_version):
                warnings.warn(
                    f"{directory} was saved by semrag {saved.manifest.get('library_version')}; "
                    f"loading with {library_version}",
                    UserWarning,
                    stacklevel=3,
                )
            return read(saved)
        except (StoreError, OSError) as exc:
            attempt += 1
            if attempt <= RETRIES and current_generation(directory) != generation:
                continue  # superseded while it was read: read the current one
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"{directory} cannot be read ({exc})") from exc
