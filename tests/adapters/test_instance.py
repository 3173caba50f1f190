"""The instance id: made once per process, ``<hostname>-<pid>-<random>``, a fresh one in a child."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from patchbay.adapters.instance import instance_id


def test_the_id_names_host_and_pid_and_stays_the_same_in_one_process() -> None:
    first = instance_id()
    assert re.fullmatch(rf"[A-Za-z0-9.-]{{1,63}}-{os.getpid()}-[0-9a-f]{{8}}", first)
    assert instance_id() == first


def test_another_process_gets_another_id() -> None:
    code = "from patchbay.adapters.instance import instance_id; print(instance_id())"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert other != instance_id() and other.rsplit("-", 2)[1] != str(os.getpid())
