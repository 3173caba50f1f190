"""OS-level process checks: which processes a process group still has."""

from __future__ import annotations

import os

import psutil
import pytest


def group_members(pgid: int) -> list[psutil.Process]:
    """Every process the OS lists in process group ``pgid``."""
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid:
                members.append(proc)
        except (ProcessLookupError, PermissionError, psutil.Error):
            pass
    return members


def assert_group_gone(pgid: int) -> None:
    """The OS knows no process of the group any more: not even a zombie."""
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    assert group_members(pgid) == []
