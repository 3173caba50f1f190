"""Content-addressed artifact store for whole tool results (DESIGN.md "Where things live").

An artifact is an immutable byte string named by its SHA-256: ``sha256:<64 hex digits>``. It lives at
``<root>/sha256/<first 2 hex>/<64 hex>``; ``root`` is ``settings.artifacts_dir`` (``<home>/artifacts``).
Directories are mode 0700 and files 0600: a tool result may hold anything the server saw.

Writing is streaming: :meth:`ArtifactStore.writer` gives an :class:`ArtifactWriter` that writes
chunks to a temporary file under ``<root>/tmp`` (hashing them on the way), and :meth:`ArtifactWriter.commit`
``fsync``\\ s it and renames it into place, so a reader never sees a partial artifact and nothing
is held in memory but the chunk being written. Two writers storing the same content at once are
safe: each writes its own temporary file and the rename is atomic, so the final file is always one
complete copy of the (identical) content; a writer that finds the artifact already there just drops
its temporary file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from patchbay.core.errors import NotFoundError, ValidationError
from patchbay.core.settings import Settings

__all__ = ["ARTIFACT_ID_PATTERN", "ArtifactStore", "ArtifactWriter"]

ARTIFACT_ID_PATTERN = re.compile(r"sha256:([0-9a-f]{64})")
"""What an artifact id looks like: ``sha256:`` and the lower-case hex SHA-256 of the content."""

_DIR_MODE = 0o700
_FILE_MODE = 0o600
_BUFFER = 1024 * 1024


def _ensure_dir(path: Path) -> None:
    # (parents=True creates missing ancestors with default modes: callers go level by level.)
    path.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
    # mkdir's mode is filtered by the umask, and the directory may predate us: make it private.
    if path.stat().st_mode & 0o777 != _DIR_MODE:
        path.chmod(_DIR_MODE)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every filesystem lets a directory be opened or synced
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class ArtifactWriter:
    """One artifact being written; get it from :meth:`ArtifactStore.writer`.

    Usage::

        with store.writer() as writer:
            for chunk in chunks:
                writer.write(chunk)
            artifact_id = writer.commit()

    Leaving the ``with`` block without :meth:`commit` (or after an exception) deletes the
    temporary file; nothing is stored.
    """

    def __init__(self, store: ArtifactStore):
        self._store = store
        _ensure_dir(store.tmp_dir)
        fd, name = tempfile.mkstemp(prefix="partial-", dir=store.tmp_dir)  # created with mode 0600
        self._tmp = Path(name)
        self._file: BinaryIO | None = os.fdopen(fd, "wb", buffering=_BUFFER)
        self._hash = hashlib.sha256()
        self._size = 0
        self.artifact_id: str | None = None

    @property
    def size(self) -> int:
        """Bytes written so far."""
        return self._size

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Append ``data`` (bytes-like) to the artifact.

        Raises:
            ValueError: the writer was committed or aborted.
            OSError: the disk refused the write.
        """
        if self._file is None:
            raise ValueError("the artifact writer is closed")
        self._hash.update(data)
        self._file.write(data)
        self._size += len(data)

    def commit(self) -> str:
        """Make the artifact durable and visible; return its id ``sha256:<hex>``.

        Raises:
            ValueError: the writer was already committed or aborted.
            OSError: flushing, syncing or renaming failed (the temporary file is removed).
        """
        handle = self._file
        if handle is None:
            raise ValueError("the artifact writer is closed")
        self._file = None
        try:
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
            digest = self._hash.hexdigest()
            final = self._store.path_for(digest)
            if final.exists():
                self._tmp.unlink()  # the same content is already stored (content addressing)
            else:
                _ensure_dir(final.parent.parent)  # sha256/, then sha256/<xx>/: each made private
                _ensure_dir(final.parent)
                os.replace(self._tmp, final)  # atomic; a concurrent identical writer is harmless
                _fsync_dir(final.parent)
        except BaseException:
            with contextlib.suppress(OSError):
                handle.close()
            self._tmp.unlink(missing_ok=True)
            raise
        self.artifact_id = f"sha256:{digest}"
        return self.artifact_id

    def abort(self) -> None:
        """Discard what was written (idempotent; a no-op after :meth:`commit`)."""
        handle, self._file = self._file, None
        if handle is not None:
            with contextlib.suppress(OSError):
                handle.close()
            self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> ArtifactWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.abort()


class ArtifactStore:
    """Content-addressed files under ``root`` (see the module docstring for layout and modes).

    Usage::

        store = ArtifactStore.from_settings(settings)
        artifact_id = store.put([b"chunk one, ", b"chunk two"])
        with store.open(artifact_id) as handle:
            first = handle.read(1024)

    Args:
        root: the store directory (created on the first write, mode 0700).
    """

    def __init__(self, root: Path):
        self.root = Path(root)

    @classmethod
    def from_settings(cls, settings: Settings) -> ArtifactStore:
        """The store at ``settings.artifacts_dir`` (``<home>/artifacts``)."""
        return cls(settings.artifacts_dir)

    @property
    def tmp_dir(self) -> Path:
        """Where writers keep their temporary files (same filesystem as the artifacts)."""
        return self.root / "tmp"

    def path_for(self, digest: str) -> Path:
        """Where the artifact with SHA-256 hex ``digest`` lives (whether or not it exists)."""
        return self.root / "sha256" / digest[:2] / digest

    def writer(self) -> ArtifactWriter:
        """A streaming :class:`ArtifactWriter` (creates ``<root>/tmp`` if needed).

        Raises:
            OSError: the store directory or the temporary file cannot be created.
        """
        _ensure_dir(self.root)
        return ArtifactWriter(self)

    def put(self, chunks: bytes | Iterable[bytes]) -> str:
        """Store ``chunks`` (one bytes value, or an iterable of them, written in order); return the id.

        Raises:
            OSError: the disk refused the write (nothing is stored).
        """
        with self.writer() as writer:
            for chunk in [chunks] if isinstance(chunks, bytes | bytearray | memoryview) else chunks:
                writer.write(chunk)
            return writer.commit()

    def path(self, artifact_id: str) -> Path:
        """The file of an existing artifact.

        Raises:
            ValidationError: ``validation_error`` when ``artifact_id`` is not ``sha256:<64 hex>``.
            NotFoundError: ``not_found`` when no such artifact is stored.
        """
        match = ARTIFACT_ID_PATTERN.fullmatch(artifact_id) if isinstance(artifact_id, str) else None
        if match is None:
            raise ValidationError(
                f"invalid artifact id {artifact_id!r}: expected sha256:<64 hex digits>",
                details={"field": "artifact_id"},
            )
        path = self.path_for(match.group(1))
        if not path.is_file():
            raise NotFoundError(f"no artifact {artifact_id}", details={"artifactId": artifact_id})
        return path

    def exists(self, artifact_id: str) -> bool:
        """Whether ``artifact_id`` is a well-formed id of a stored artifact."""
        try:
            self.path(artifact_id)
        except (ValidationError, NotFoundError):
            return False
        return True

    def size(self, artifact_id: str) -> int:
        """The artifact's size in bytes (errors as :meth:`path`)."""
        return self.path(artifact_id).stat().st_size

    def open(self, artifact_id: str) -> BinaryIO:
        """The artifact opened for binary reading (errors as :meth:`path`); close it when done."""
        return self.path(artifact_id).open("rb")

    def read(self, artifact_id: str) -> bytes:
        """The whole artifact in memory (errors as :meth:`path`); prefer :meth:`open` for big ones."""
        return self.path(artifact_id).read_bytes()
