"""The content-addressed artifact store (src/patchbay/runtime/output/artifacts.py)."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from patchbay.core.errors import NotFoundError, ValidationError
from patchbay.core.settings import Settings
from patchbay.runtime.output.artifacts import ArtifactStore


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_a_streamed_artifact_is_named_by_the_sha256_of_its_bytes_and_reads_back(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "artifacts")
    chunks = [b"first chunk, ", bytes(range(256)) * 1000, b"", b"last"]
    with store.writer() as writer:
        for chunk in chunks:
            writer.write(chunk)
        assert writer.size == sum(map(len, chunks))
        artifact_id = writer.commit()
    whole = b"".join(chunks)
    assert artifact_id == _sha(whole)
    assert store.read(artifact_id) == whole
    assert store.size(artifact_id) == len(whole)
    with store.open(artifact_id) as handle:
        assert handle.read(13) == b"first chunk, "
    assert store.path(artifact_id) == tmp_path / "artifacts" / "sha256" / artifact_id[7:9] / artifact_id[7:]
    assert store.exists(artifact_id)


def test_files_are_0600_and_directories_0700_even_under_a_permissive_umask(tmp_path: Path) -> None:
    root = tmp_path / "artifacts"
    root.mkdir(mode=0o755)
    root.chmod(0o755)  # an existing, too open store directory is made private
    old = os.umask(0o000)
    try:
        artifact_id = ArtifactStore(root).put(b"secret-ish tool output")
    finally:
        os.umask(old)
    path = ArtifactStore(root).path(artifact_id)
    assert _mode(path) == 0o600
    for directory in (root, root / "sha256", path.parent, root / "tmp"):
        assert _mode(directory) == 0o700, directory


def test_the_store_lives_under_the_data_home(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    artifact_id = ArtifactStore.from_settings(settings).put([b"a", b"b"])
    assert artifact_id == _sha(b"ab")
    assert (settings.home / "artifacts" / "sha256" / artifact_id[7:9] / artifact_id[7:]).read_bytes() == b"ab"


def test_storing_the_same_content_twice_keeps_one_file(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    first = store.put(b"same bytes")
    second = store.put([b"same ", b"bytes"])
    assert first == second
    assert [p.name for p in (tmp_path / "sha256").rglob("*") if p.is_file()] == [first[7:]]
    assert list((tmp_path / "tmp").iterdir()) == []


def test_concurrent_writers_of_the_same_content_both_succeed_with_one_complete_file(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    payload = os.urandom(1024) * 2048  # 2 MiB
    ids: list[str] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def write() -> None:
        try:
            with store.writer() as writer:
                barrier.wait(timeout=10)
                for start in range(0, len(payload), 65536):
                    writer.write(payload[start : start + 65536])
                barrier.wait(timeout=10)  # everyone has written everything; now all commit at once
                ids.append(writer.commit())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert set(ids) == {_sha(payload)}
    assert store.read(ids[0]) == payload
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_writer_left_without_commit_stores_nothing(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    with pytest.raises(RuntimeError), store.writer() as writer:
        writer.write(b"half a result")
        raise RuntimeError("the producer failed")
    assert list((tmp_path / "tmp").iterdir()) == []
    assert not (tmp_path / "sha256").exists()
    assert not store.exists(_sha(b"half a result"))
    with pytest.raises(ValueError):
        writer.write(b"more")
    with pytest.raises(ValueError):
        writer.commit()


@pytest.mark.parametrize(
    "artifact_id", ["", "sha256:", "sha256:" + "A" * 64, "md5:" + "0" * 32, "sha256:../../etc/passwd", "0" * 64]
)
def test_a_malformed_id_is_refused_with_validation_error(tmp_path: Path, artifact_id: str) -> None:
    store = ArtifactStore(tmp_path)
    with pytest.raises(ValidationError) as info:
        store.path(artifact_id)
    assert info.value.code == "validation_error"
    assert not store.exists(artifact_id)


def test_an_unknown_id_is_not_found(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    with pytest.raises(NotFoundError) as info:
        store.read(_sha(b"never stored"))
    assert info.value.code == "not_found"
