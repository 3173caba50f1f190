"""``/docs`` and ``/redoc`` work offline: their pages reference only this server's own URLs (the
fastapi-offline package's assets), each answering 200 behind the token."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from tests.support.api import Api

pytestmark = pytest.mark.anyio


class _References(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value for name, value in attrs if name in ("src", "href", "spec-url") and value]


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_a_docs_page_references_only_local_urls_that_answer(api: Api, page: str) -> None:
    response = await api.client.get(page)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert not re.search(r"(https?:)?//[a-z0-9]", response.text, re.I), response.text  # no other site at all
    parser = _References()
    parser.feed(response.text)
    urls = parser.urls + re.findall(r"url: '([^']+)'", response.text)  # Swagger UI's document
    assert "/openapi.json" in urls and any(u.endswith(".js") for u in urls)
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), url
        asset = await api.client.get(url)
        assert asset.status_code == 200, url
        if url.endswith(".css"):  # a stylesheet fetches nothing from elsewhere either
            for target in re.findall(r"url\(\s*['\"]?([^'\")]+)", asset.text):
                assert target.startswith(("data:", "/", "#")) or "//" not in target, target
        assert (await api.client.get(url, headers={"Authorization": "Bearer nope"})).status_code == 401
