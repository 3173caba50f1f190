"""The data home's API token file: created once (0600, atomically), read back the same, a symlink,
a hard link or a malformed file refused, a widened mode put back."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from patchbay.adapters.api_token import API_TOKEN_FILE, api_token, read_api_token
from patchbay.core.errors import CanonicalStateUnavailable


def test_the_token_is_made_once_in_a_0600_file_of_a_new_0700_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert read_api_token(home) is None
    token = api_token(home)
    assert len(token) == 43 and token.replace("-", "").replace("_", "").isalnum()
    path = home / API_TOKEN_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(home.stat().st_mode) == 0o700
    assert path.read_text() == token + "\n"
    assert api_token(home) == token == read_api_token(home)
    assert sorted(p.name for p in home.iterdir()) == [API_TOKEN_FILE]  # no temporary file left
    assert api_token(tmp_path / "other") != token  # one per data home


def test_processes_creating_it_at_once_agree_on_one_token(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    start = threading.Barrier(8)
    tokens: list[str] = []

    def create() -> None:
        start.wait(timeout=30)
        tokens.append(api_token(home))

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(tokens) == 8 and len(set(tokens)) == 1
    assert sorted(p.name for p in home.iterdir()) == [API_TOKEN_FILE]


def test_a_symlink_in_its_place_is_refused_and_never_written_through(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    target = tmp_path / "elsewhere"
    (home / API_TOKEN_FILE).symlink_to(target)
    with pytest.raises(CanonicalStateUnavailable, match="symlink"):
        api_token(home)
    assert not target.exists()


def test_a_hard_link_in_its_place_is_refused_and_its_mode_left_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("A" * 43 + "\n")
    os.chmod(elsewhere, 0o644)
    os.link(elsewhere, home / API_TOKEN_FILE)
    with pytest.raises(CanonicalStateUnavailable, match="hard-linked"):
        api_token(home)
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o644  # not touched through the link
    os.unlink(elsewhere)  # its only name now: accepted
    assert api_token(home) == "A" * 43


def test_a_token_read_while_it_is_being_created_is_accepted(tmp_path: Path) -> None:
    """Between the creator's link and its unlink of the temporary name the file has two links."""
    home = tmp_path / "home"
    token = api_token(home)
    os.link(home / API_TOKEN_FILE, home / f".{API_TOKEN_FILE}.0123456789abcdef.tmp")
    assert read_api_token(home) == token
    os.link(home / API_TOKEN_FILE, home / "copy")
    with pytest.raises(CanonicalStateUnavailable, match="hard-linked"):
        read_api_token(home)


def test_a_widened_mode_is_put_back_to_0600(tmp_path: Path) -> None:
    home = tmp_path / "home"
    token = api_token(home)
    os.chmod(home / API_TOKEN_FILE, 0o644)
    assert read_api_token(home) == token
    assert stat.S_IMODE((home / API_TOKEN_FILE).stat().st_mode) == 0o600


def test_a_file_that_holds_no_token_is_refused_without_quoting_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / API_TOKEN_FILE).write_text("not a token: secret-looking text\n")
    with pytest.raises(CanonicalStateUnavailable) as caught:
        api_token(home)
    assert "secret-looking" not in caught.value.message and "delete it" in caught.value.message
    assert (home / API_TOKEN_FILE).read_text() == "not a token: secret-looking text\n"  # left as it was


def test_a_home_that_cannot_be_made_is_canonical_state_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "home"
    blocker.write_text("a file where the data home should be")
    with pytest.raises(CanonicalStateUnavailable):
        api_token(blocker)
