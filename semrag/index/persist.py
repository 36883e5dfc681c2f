"""Atomic, versioned directory writes.

:func:`atomic_directory` writes into a temporary sibling folder and swaps it into place only
after every file and the manifest (written last, with a SHA-256 of each file) are on disk.
A crash at any point leaves either the previous complete directory or nothing new, never
a loadable half. :func:`read_manifest` refuses a directory whose manifest is missing, whose
format is newer than this library, or whose files do not match their checksums.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from semrag.errors import ConfigError, StoreError

__all__ = ["atomic_directory", "read_manifest"]

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


@contextlib.contextmanager
def atomic_directory(target: str | Path, manifest: dict[str, Any]) -> Iterator[Path]:
    """Yield a temporary folder to fill; on success it replaces ``target`` atomically.

    Args:
        target: the directory to (re)write.
        manifest: metadata written to ``manifest.json`` after the files, with their
            checksums added under ``"files"``.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield tmp
        files = sorted(p.name for p in tmp.iterdir() if p.is_file())
        for name in files:
            with open(tmp / name, "rb") as f:
                os.fsync(f.fileno())
        record = {**manifest, "files": {name: _sha256(tmp / name) for name in files}}
        with open(tmp / MANIFEST, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        _fsync_dir(tmp)
        backup = None
        if target.exists():
            backup = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, backup)
        os.replace(tmp, target)
        _fsync_dir(target.parent)
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_manifest(
    directory: str | Path, *, kind: str, format_version: int, library_version: str
) -> dict[str, Any]:
    """Read and verify a directory written by :func:`atomic_directory`.

    Raises:
        ConfigError: if the directory is missing, of another kind or of a newer format.
        StoreError: if the manifest is missing or a file is absent or corrupt.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ConfigError(f"no saved {kind} at {directory}")
    path = directory / MANIFEST
    if not path.exists():
        raise StoreError(f"{directory} has no {MANIFEST}: it is incomplete or not a saved {kind}")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("kind") != kind:
        raise ConfigError(f"{directory} holds a {manifest.get('kind')!r}, not a {kind!r}")
    if int(manifest.get("format_version", 0)) > format_version:
        raise ConfigError(
            f"{directory} was saved in format {manifest['format_version']}; this semrag reads "
            f"up to {format_version}: upgrade semrag"
        )
    for name, digest in manifest.get("files", {}).items():
        file = directory / name
        if not file.exists() or _sha256(file) != digest:
            raise StoreError(f"{file} is missing or corrupt (checksum mismatch)")
    if manifest.get("library_version") != library_version:
        warnings.warn(
            f"{directory} was saved by semrag {manifest.get('library_version')}; "
            f"loading with {library_version}",
            UserWarning,
            stacklevel=3,
        )
    return manifest
