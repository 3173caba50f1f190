"""Reading a VS Code/Cursor ``envFile`` (dotenv syntax) without interpreting it.

Values are taken literally (no ``${VAR}`` expansion, no command substitution), through
python-dotenv's parser; a line it cannot parse is an error naming the file, never the line's
number or text (the file holds secrets, and a config may point at any file).
"""

from __future__ import annotations

import io
import re
from pathlib import Path

from dotenv.parser import parse_stream

from patchbay.control.importer.discovery import MAX_FILE_BYTES, read_bounded
from patchbay.core.errors import ConfigError

__all__ = ["read_env_file"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
"""What a variable name in a dotenv file looks like; a file with other keys is no dotenv file (and
its keys are never shown: they may be anything, e.g. a password file's lines)."""


def read_env_file(path: Path, *, field: str = "envFile") -> dict[str, str]:
    """The ``KEY=VALUE`` pairs of a dotenv file, in file order (a later key wins).

    Raises:
        ConfigError: ``invalid_config`` naming ``field``: no such file, not a regular file,
            larger than :data:`~patchbay.control.importer.discovery.MAX_FILE_BYTES`, not UTF-8,
            or a line that is no assignment of a variable name.
    """
    try:
        data = read_bounded(path)
    except FileNotFoundError:
        raise ConfigError(field, f"{path} does not exist") from None
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(field, f"{path} cannot be read: {reason} (limit {MAX_FILE_BYTES} bytes)") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(field, f"{path} is not valid UTF-8") from None
    values: dict[str, str] = {}
    for binding in parse_stream(io.StringIO(text)):
        if binding.error or (binding.key is not None and not _NAME.fullmatch(binding.key)):
            # no line number: the file was named by a config, not by the user, and which of
            # its lines are assignments would tell about any file a config points at
            raise ConfigError(field, f"{path} is not a dotenv file (a line is no KEY=VALUE assignment)")
        if binding.key is not None:
            values[binding.key] = binding.value or ""
    return values
