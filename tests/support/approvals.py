"""An approver that answers from a script, for runtimes whose calls ask a person."""

from __future__ import annotations

from typing import Any

from patchbay import ApprovalRequest


class ScriptedApprover:
    """Answers each approval request with the next of ``answers`` (``allow_once``, ``deny``, ...)
    and keeps every request it was asked, in order, in ``requests``."""

    def __init__(self, *answers: str):
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> Any:
        self.requests.append(request)
        return self.answers.pop(0)
