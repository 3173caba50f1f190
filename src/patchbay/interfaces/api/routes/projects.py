"""The projects route: which workspaces are projects (have tool decisions of their own or had a
session), for a front end's scope selector. Listing makes no directory a project."""

from __future__ import annotations

from fastapi import APIRouter

import patchbay.interfaces.api.contracts as c
from patchbay.interfaces.api.errors import error_responses
from patchbay.interfaces.api.routes._deps import Service

__all__ = ["router"]

router = APIRouter(prefix="/api/projects", tags=["projects"])


@router.get("", response_model=c.ProjectList, responses=error_responses(), summary="List the known projects")
def list_projects(service: Service) -> c.ProjectList:
    """Every known project with its id and workspace path, ordered by path."""
    return c.ProjectList(
        projects=[c.ProjectView(project_id=p.project_id, path=p.path) for p in service.queries.projects()]
    )
