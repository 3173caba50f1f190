"""Compact, model-shaped record fields: truncated text, collapsed author lists.

Results of built-in connectors are read by models: every free text is whitespace-normalised and
cut to a stated length (with an ellipsis and a flag), and author lists keep the first few names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["ABSTRACT_CHARS", "AUTHORS_KEPT", "as_int", "authors", "clip", "split_authors"]

ABSTRACT_CHARS = 600
"""Characters of an abstract a search result keeps."""
AUTHORS_KEPT = 3
"""Names an author list keeps before ``et al.``."""
_SPACE = re.compile(r"\s+")
_TAG = re.compile(r"<[^>]{0,200}>")


def clip(text: object, limit: int) -> str:
    """``text`` as one line of normalised whitespace (markup tags dropped), at most ``limit``
    characters; a cut text ends with ``…``. Non-strings become ``""``."""
    if not isinstance(text, str):
        return ""
    flat = _SPACE.sub(" ", _TAG.sub(" ", text)).strip()
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)].rstrip() + "…"


def split_authors(text: object, separator: str) -> list[str]:
    """The names of an author string (``"Smith J, Doe A."``) split on ``separator``."""
    if not isinstance(text, str):
        return []
    return [name.strip().rstrip(".") for name in text.split(separator) if name.strip().rstrip(".")]


def authors(names: Sequence[str], keep: int = AUTHORS_KEPT) -> str:
    """``"A, B, C, et al. (12 authors)"``: the first ``keep`` names, and the count when cut."""
    names = [clip(name, 80) for name in names if isinstance(name, str) and name.strip()]
    if len(names) <= keep:
        return ", ".join(names)
    return f"{', '.join(names[:keep])}, et al. ({len(names)} authors)"


def as_int(value: object) -> int | None:
    """An integer from a JSON number or a string of digits (APIs send counts as either); else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
