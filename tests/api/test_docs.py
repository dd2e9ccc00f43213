"""/api/docs works offline: every asset it references is served by us."""

import re


def test_docs_page_references_only_local_assets(client):
    page = client.get("/api/docs")
    assert page.status_code == 200
    urls = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert urls and all(u.startswith("/api/") for u in urls), urls
    for url in urls:
        assert client.get(url).status_code == 200, url
    assert "openapi.json" in page.text
