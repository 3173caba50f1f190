"""The snapshot key in the data home: created once, atomically, 0600; symlinks and corrupt keys
refused (never followed, never replaced); widened permissions put back."""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from patchbay.adapters.snapshot_key import KEY_BYTES, KEY_FILE, load_key, load_or_create_key
from patchbay.core.errors import ConfigError


def test_the_key_is_created_once_with_mode_0600_and_read_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with pytest.raises(ConfigError) as missing:
        load_key(home)  # a verifier never creates one
    assert missing.value.code == "invalid_config" and missing.value.field == "snapshot_key"
    assert not (home / KEY_FILE).exists()

    key = load_or_create_key(home)
    assert len(key) == KEY_BYTES
    assert stat.S_IMODE((home / KEY_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert load_or_create_key(home) == key == load_key(home)
    assert [p.name for p in home.iterdir()] == [KEY_FILE]  # no temporary file left


def test_concurrent_first_uses_agree_on_one_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(lambda _: load_or_create_key(home), range(16)))
    assert len(keys) == 1 and load_key(home) in keys


def test_a_symlink_in_place_of_the_key_is_refused_not_followed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    planted = tmp_path / "attacker-key"
    planted.write_bytes(b"k" * KEY_BYTES)
    (home / KEY_FILE).symlink_to(planted)
    for read in (load_key, load_or_create_key):
        with pytest.raises(ConfigError) as exc:
            read(home)
        assert exc.value.field == "snapshot_key" and "symbolic link" in exc.value.message
    assert planted.read_bytes() == b"k" * KEY_BYTES and (home / KEY_FILE).is_symlink()


@pytest.mark.parametrize("content", [b"", b"short", b"x" * (KEY_BYTES + 1)], ids=["empty", "short", "long"])
def test_a_corrupt_key_is_refused_and_left_as_it_is(tmp_path: Path, content: bytes) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / KEY_FILE).write_bytes(content)
    for read in (load_key, load_or_create_key):
        with pytest.raises(ConfigError) as exc:
            read(home)
        assert exc.value.field == "snapshot_key" and "corrupt" in exc.value.message
    assert (home / KEY_FILE).read_bytes() == content


def test_a_key_found_readable_by_others_is_put_back_to_0600(tmp_path: Path) -> None:
    home = tmp_path / "home"
    key = load_or_create_key(home)
    os.chmod(home / KEY_FILE, 0o644)
    assert load_key(home) == key
    assert stat.S_IMODE((home / KEY_FILE).stat().st_mode) == 0o600
