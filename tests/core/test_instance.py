"""The process's instance id."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings

from patchbay.core.instance import instance_id


def test_the_instance_id_is_stable_in_a_process_and_differs_between_processes() -> None:
    mine = instance_id()
    assert instance_id() == mine
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,64}", mine) and f"-{os.getpid()}-" in mine
    code = "from patchbay.core.instance import instance_id; print(instance_id())"
    others = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        for _ in range(2)
    }
    assert len(others) == 2 and mine not in others


def test_a_forked_child_gets_an_id_of_its_own() -> None:
    mine = instance_id()
    read, write = os.pipe()
    with warnings.catch_warnings():  # other tests may have left threads; the child only writes and exits
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child
        os.write(write, instance_id().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 200).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert child and child != mine and f"-{pid}-" in child
