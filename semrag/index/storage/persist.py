"""Atomic, versioned, crash-safe directory writes.

:func:`atomic_directory` writes a save into a temporary sibling folder
(``.NAME.tmp-PID-RANDOM``) and swaps it into place only after every file and the
manifest (written last, with a SHA-256 of each file) are on disk. A directory cannot be
renamed over a non-empty one, so the swap takes two renames: the old save moves aside
(``.NAME.old-PID-RANDOM``), then the new one moves in. A kill at any point leaves a
complete save somewhere:

======================  ==============================  ===================================
killed ...              on disk                         :func:`read_manifest` finds
======================  ==============================  ===================================
while writing files     old save + incomplete tmp       the old save
after the manifest      old save + complete tmp         the old save
between the renames     complete old-aside + tmp        the new save (moved into place)
before the clean-up     new save + old-aside            the new save
======================  ==============================  ===================================

:func:`read_manifest` recovers a missing directory from its complete siblings (the newest
save wins), removes leftovers of writers that are no longer running, and refuses a
directory whose manifest is missing, unreadable, of another kind, of an unknown or newer
format, lists no files, or whose files do not match their checksums: every such case is a
typed :class:`~semrag.errors.StoreError` (or :class:`~semrag.errors.ConfigError` for a
newer format or another kind), never a raw ``JSONDecodeError`` or ``KeyError`` later.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from semrag._version import is_newer
from semrag.errors import ConfigError, StoreError

__all__ = ["atomic_directory", "read_manifest", "recover_directory"]

MANIFEST = "manifest.json"


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


def _sibling(target: Path, role: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f".{target.name}.{role}-{os.getpid()}-", dir=target.parent))


@contextlib.contextmanager
def atomic_directory(target: str | Path, manifest: dict[str, Any]) -> Iterator[Path]:
    """Yield a temporary folder to fill; on success it replaces ``target`` atomically.

    Args:
        target: the directory to (re)write.
        manifest: metadata written to ``manifest.json`` after the files, with their
            checksums added under ``"files"`` and the time of the save under ``"saved_ns"``.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(target, "tmp")
    try:
        yield tmp
        _step("files_written")
        files = sorted(p.name for p in tmp.iterdir() if p.is_file())
        for name in files:
            with open(tmp / name, "rb") as f:
                os.fsync(f.fileno())
        record = {
            **manifest,
            "saved_ns": time.time_ns(),
            "files": {name: _sha256(tmp / name) for name in files},
        }
        with open(tmp / MANIFEST, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        _fsync_dir(tmp)
        _step("manifest_written")
        backup = None
        if target.exists():
            backup = _sibling(target, "old")
            os.rmdir(backup)  # a unique free name for the old save
            os.replace(target, backup)
            _fsync_dir(target.parent)
            _step("old_moved_aside")
        os.replace(tmp, target)
        _fsync_dir(target.parent)
        _step("new_moved_in")
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)
        _step("cleaned")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _leftovers(target: Path) -> list[Path]:
    """Siblings that a save of ``target`` made (tmp or old-aside), any writer."""
    parent = target.parent
    if not parent.is_dir():
        return []
    prefixes = (f".{target.name}.tmp-", f".{target.name}.old-")
    return sorted(p for p in parent.iterdir() if p.is_dir() and p.name.startswith(prefixes))


def _writer_alive(path: Path) -> bool:
    """Whether the process that made a leftover still runs (its pid is in the name)."""
    try:
        pid = int(path.name.rsplit("-", 2)[-2])
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


def _load_manifest(directory: Path, kind: str) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.exists():
        raise StoreError(f"{directory} has no {MANIFEST}: it is incomplete or not a saved {kind}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(f"{path} is not valid JSON ({exc}): the save is corrupt") from exc
    if not isinstance(manifest, dict):
        raise StoreError(f"{path} is not a JSON object: the save is corrupt")
    return manifest


def _verify(directory: Path, manifest: dict[str, Any], kind: str, format_version: int) -> None:
    found_kind = manifest.get("kind")
    if found_kind != kind:
        raise ConfigError(f"{directory} holds a {found_kind!r}, not a {kind!r}")
    version = manifest.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise StoreError(f"{directory}: format_version {version!r} is not a format semrag wrote")
    if version > format_version:
        raise ConfigError(
            f"{directory} was saved in format {version}; this semrag reads up to "
            f"{format_version}: upgrade semrag"
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise StoreError(f"{directory}: the manifest lists no files; the save cannot be verified")
    for name, digest in files.items():
        file = directory / str(name)
        if not file.is_file() or _sha256(file) != digest:
            raise StoreError(f"{file} is missing or corrupt (checksum mismatch)")


def _complete(path: Path, kind: str, format_version: int) -> dict[str, Any] | None:
    try:
        manifest = _load_manifest(path, kind)
        _verify(path, manifest, kind, format_version)
    except (StoreError, ConfigError, OSError):
        return None
    return manifest


def recover_directory(directory: str | Path, *, kind: str, format_version: int) -> None:
    """Put a save back in place after a crash, and remove dead writers' leftovers.

    When ``directory`` is missing, the newest complete save among its siblings (a new save
    that was not yet moved in, or an old one moved aside) is moved into place. Leftovers
    of writers that are still running are never touched.
    """
    directory = Path(directory)
    dead = [p for p in _leftovers(directory) if not _writer_alive(p)]
    if not directory.exists():
        complete = [(m, p) for p in dead if (m := _complete(p, kind, format_version))]
        if complete:
            _, newest = max(complete, key=lambda mp: (int(mp[0].get("saved_ns", 0)), mp[1].name))
            os.replace(newest, directory)
            _fsync_dir(directory.parent)
            dead.remove(newest)
    if directory.exists():
        for p in dead:
            shutil.rmtree(p, ignore_errors=True)


def read_manifest(
    directory: str | Path, *, kind: str, format_version: int, library_version: str
) -> dict[str, Any]:
    """Read and verify a directory written by :func:`atomic_directory`.

    A save interrupted by a crash is recovered first (see :func:`recover_directory`).

    Raises:
        ConfigError: if the directory is missing, of another kind or of a newer format.
        StoreError: if the manifest is missing, unreadable or lists no files, the format
            is unknown, or a file is absent or corrupt.
    """
    directory = Path(directory)
    recover_directory(directory, kind=kind, format_version=format_version)
    if not directory.is_dir():
        raise ConfigError(f"no saved {kind} at {directory}")
    manifest = _load_manifest(directory, kind)
    _verify(directory, manifest, kind, format_version)
    if is_newer(manifest.get("library_version"), library_version):
        warnings.warn(
            f"{directory} was saved by semrag {manifest.get('library_version')}; "
            f"loading with {library_version}",
            UserWarning,
            stacklevel=3,
        )
    return manifest
