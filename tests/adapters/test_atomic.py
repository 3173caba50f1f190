"""Atomic replacement: content given in parts is written whole and in order, also when the kernel
takes less than it was offered, and a failure leaves the old file and no temporary file."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchbay.adapters import atomic
from patchbay.adapters.atomic import replace_file


@pytest.fixture
def dir_fd(tmp_path: Path) -> Iterator[int]:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield fd
    finally:
        os.close(fd)


def test_parts_are_written_as_their_concatenation(tmp_path: Path, dir_fd: int) -> None:
    parts = [b"head-", b"", b"x" * 70_000, *(bytes([65 + i % 26]) for i in range(3000)), b"-end\n"]
    replace_file(dir_fd, "f.json", parts, 0o600)
    assert (tmp_path / "f.json").read_bytes() == b"".join(parts)
    assert stat.S_IMODE((tmp_path / "f.json").stat().st_mode) == 0o600

    replace_file(dir_fd, "f.json", b"whole", 0o600)  # bytes still mean the whole content
    assert (tmp_path / "f.json").read_bytes() == b"whole"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_short_writes_resume_where_the_kernel_stopped(
    tmp_path: Path, dir_fd: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.writev

    def stingy(fd: int, buffers: list[memoryview]) -> int:  # at most 7 bytes, often mid-part
        return real(fd, [bytes(b"".join(buffers)[:7])])

    monkeypatch.setattr(atomic.os, "writev", stingy)
    parts = [b"abc", b"defghijklmnop", b"q", b"", b"rstuvwxyz" * 5]
    replace_file(dir_fd, "f.json", parts, 0o600)
    assert (tmp_path / "f.json").read_bytes() == b"".join(parts)


def test_a_write_that_makes_no_progress_fails_and_keeps_the_old_file(
    tmp_path: Path, dir_fd: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    replace_file(dir_fd, "f.json", b"old", 0o600)
    monkeypatch.setattr(atomic.os, "writev", lambda fd, buffers: 0)
    with pytest.raises(OSError):
        replace_file(dir_fd, "f.json", [b"new", b"er"], 0o600)
    assert (tmp_path / "f.json").read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]
