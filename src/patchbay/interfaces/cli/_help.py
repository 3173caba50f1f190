"""Plain help output for the ``patchbay`` command tree.

Typer's help shows a type placeholder for every option (``--json <bool>``, ``--port <int range>``)
and keeps the line breaks of a docstring's first paragraph in command lists. :class:`PlainHelpGroup`
is the root group's class: before running anything it walks the whole command tree once and
gives every option a plain metavar -- none for a flag, the option's name in capitals otherwise
(``--port PORT``) unless the option names its own -- and every command a one-line summary. Arguments show their name only.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperGroup, TyperOption

__all__ = ["PlainHelpGroup", "plain_help"]


def _summary(text: str | None) -> str | None:
    paragraph = (text or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split()) or None


class _PlainOption(TyperOption):
    """An option whose help shows its metavar, NAME for a value, nothing for a flag."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.metavar is not None:
            return self.metavar
        if self.is_flag or self.count:
            return None
        return (self.name or "value").upper() + ("..." if self.nargs != 1 else "")


class _PlainArgument(TyperArgument):
    """An argument whose help shows its name only (its meaning is in its help text)."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


def plain_help(command: Any) -> None:
    """Give ``command`` and everything under it plain metavars and one-line summaries (idempotent).

    Args:
        command: a Typer command or group (``typer.main.get_command(app)``).
    """
    if getattr(command, "_patchbay_plain_help", False):
        return
    command._patchbay_plain_help = True
    help_option = command.get_help_option(command.context_class(command))
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        # Only the help rendering differs, so the parameter keeps its state and changes class.
        if type(param) is TyperOption:
            param.__class__ = _PlainOption
        elif type(param) is TyperArgument:
            param.__class__ = _PlainArgument
    if getattr(command, "short_help", None) is None and command.help:
        command.short_help = _summary(command.help)
    for sub in getattr(command, "commands", {}).values():
        plain_help(sub)


class PlainHelpGroup(TyperGroup):
    """The root group: :func:`plain_help` over the whole tree before the command line is parsed."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        plain_help(self)
        return super().main(*args, **kwargs)
