"""The files an import can read, listed for a person to pick from (the settings page's Import
dialog; ``GET /api/mcp/import/sources``).

The list is the standard locations of the workspace and the home directory, then the host files
of :data:`~patchbay.control.importer.discovery.HOST_KEYWORDS` (Claude Desktop, Claude Code,
Cursor, VS Code), each with whether it exists. Listing only looks at file metadata: it reads,
parses and runs nothing (a preview of the picked files does the reading).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from patchbay.control.importer.discovery import HOST_KEYWORDS, SourceFile, named_sources, standard_sources
from patchbay.control.importer.models import CandidateView, ImportCandidates
from patchbay.core.errors import ConfigError

__all__ = ["list_sources"]


def _exists(path: Path) -> bool:
    """Whether ``path`` is a regular file (what :func:`~.discovery.read_bounded` would read)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _view(source: SourceFile, kind: str, select: str) -> CandidateView:
    return CandidateView(
        path=str(source.path),
        label=source.label,
        host=source.host,
        kind=kind,  # type: ignore[arg-type]
        select=select,
        exists=_exists(source.path),
    )


def list_sources(*, workspace: Path, home: Path) -> ImportCandidates:
    """The files an import of ``workspace`` can read, in precedence order for the standard ones.

    Args:
        workspace: the workspace whose project files (``.mcp.json``, ``.cursor/mcp.json``...) are
            listed; symlinks resolved.
        home: the home directory (user-level files and host files); never ``$HOME`` itself.

    Returns:
        Every candidate with ``exists``; its ``select`` is what to name in a preview's or a
        commit's ``paths`` (the absolute path, or the host keyword). A host file that is also a
        standard location (Cursor's ``~/.cursor/mcp.json`` when the workspace is the home) is
        listed once, as standard.

    Raises:
        ConfigError: ``invalid_config`` (field ``project``): ``workspace`` is no directory.
    """
    try:
        root = workspace.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise ConfigError("project", f"{str(workspace)[:200]!r} cannot be used as a workspace: {exc}") from None
    if not root.is_dir():
        raise ConfigError("project", f"{str(workspace)[:200]!r} is not a directory")
    home = Path(os.path.abspath(home))
    views = [_view(source, "standard", str(source.path)) for source in standard_sources(root, home)]
    seen = {view.path for view in views}
    for keyword in HOST_KEYWORDS:
        [source] = named_sources([keyword], home=home, cwd=root)
        if str(source.path) not in seen:
            seen.add(str(source.path))
            views.append(_view(source, "host", keyword))
    return ImportCandidates(workspace=str(root), files=views)
