"""Interactive API docs at /api/docs with Swagger UI served from this package
(npm's swagger-ui-dist), since users' networks may not reach a CDN."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from orientscope.core.resources import package_path

STATIC = package_path("api", "static")


def install_docs(app: FastAPI, prefix: str = "/api") -> None:
    app.mount(f"{prefix}/static", StaticFiles(directory=STATIC), name="api-static")

    @app.get(f"{prefix}/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url,
            title=f"{app.title} — docs",
            swagger_js_url=f"{prefix}/static/swagger/swagger-ui-bundle.js",
            swagger_css_url=f"{prefix}/static/swagger/swagger-ui.css",
            swagger_favicon_url=f"{prefix}/static/swagger/favicon-32x32.png",
        )
