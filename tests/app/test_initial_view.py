"""The page's view from the query it sends with its layout request: parsing, resolving, and the layout cache (toy ASGI
app, then real HTTP)."""

import asyncio

import httpx
import pytest

from orientscope.app.compat import PAGE_QUERY_HEADER
from orientscope.app.initial_view import PageQueryMiddleware, header_query, page_query, resolve_view
from orientscope.server import create_app
from orientscope.services.bytecache import MB, ByteBudgetCache
from tests.api.conftest import ServerThread
from tests.app.components import props_of


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        ("?dataset=qm9&molecule=4", "?dataset=qm9&molecule=4"),
        ("", ""),
        ("?", ""),
        (None, None),  # not sent: the plain layout
        ("dataset=qm9", None),  # not a location.search
        ("?" + "x" * 9000, None),  # longer than any page's query
    ],
)
def test_the_page_query_header_is_a_location_search_or_ignored(sent, expected):
    assert header_query(sent) == expected


def test_resolve_view_fills_defaults_and_reports_unknown_names(qm9_store):
    plain = resolve_view(qm9_store, "")
    assert plain.state.dataset == "qm9" and plain.messages == []
    assert [o["value"] for o in plain.dataset_options] == ["qm9"]
    bad = resolve_view(qm9_store, "?dataset=nope&molecule=zzz&colour=red")
    assert bad.state.dataset == "qm9" and bad.state.molecule is None
    assert any("Unknown dataset 'nope'" in m for m in bad.messages)
    assert any("colour" in m for m in bad.messages)
    mol = resolve_view(qm9_store, "?dataset=qm9&molecule=zzz")
    assert mol.state.molecule is None and any("Unknown molecule 'zzz'" in m for m in mol.messages)


def _layout_app(calls: list):
    async def app(scope, receive, send):
        calls.append(page_query())
        body = f"layout for {page_query()!r} #{len(calls)}".encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": body})

    return app


async def _get(app, path, headers):
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    out = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        out.append(message)

    await app(scope, receive, send)
    return b"".join(m.get("body", b"") for m in out if m["type"] == "http.response.body").decode()


def test_middleware_passes_the_query_and_caches_per_version():
    calls, version = [], {"v": 1}
    app = PageQueryMiddleware(_layout_app(calls), version=lambda: version["v"], cache=ByteBudgetCache(MB))
    ref = {"host": "lab", PAGE_QUERY_HEADER.lower(): "?dataset=qm9"}
    first = asyncio.run(_get(app, "/_dash-layout", ref))
    assert first == "layout for '?dataset=qm9' #1"
    assert asyncio.run(_get(app, "/_dash-layout", ref)) == first and len(calls) == 1  # served from the cache
    version["v"] = 2  # a dataset changed: build again
    assert asyncio.run(_get(app, "/_dash-layout", ref)).endswith("#2")
    # no page query: the plain layout, never cached; other paths see no query
    assert asyncio.run(_get(app, "/_dash-layout", {"host": "lab"})) == "layout for None #3"
    assert asyncio.run(_get(app, "/_dash-layout", {"host": "lab"})).endswith("#4")
    assert asyncio.run(_get(app, "/anything", ref)) == "layout for None #5"
    assert page_query() is None  # reset after each request


@pytest.fixture(scope="module")
def dash_url(qm9_store):
    with ServerThread(create_app(qm9_store, dashboard=True)) as server:
        yield server.url


@pytest.mark.dash_canary  # /_dash-layout and the page query header (app/initial_view.py)
def test_layout_over_http_holds_the_referring_pages_view(dash_url, qm9_store):
    from orientscope.figures.mapview import map_layers
    from orientscope.figures.state import ViewState

    layers = map_layers(qm9_store, ViewState(dataset="qm9"))
    mol = str(layers.md.ids[5])
    page = f"?dataset=qm9&molecule={mol}&axes=12&view=map"
    layout = httpx.get(dash_url + "/_dash-layout", headers={PAGE_QUERY_HEADER: page}, timeout=120).json()
    assert props_of(layout, "url")["search"] == f"?dataset=qm9&molecule={mol}&axes=12&view=map"
    assert props_of(layout, "map-state")["data"]["axes"] == "12"
    assert props_of(layout, "selected")["data"] == mol
    assert props_of(layout, "molecule-id")["children"] == mol
    assert props_of(layout, "viewer-spec")["data"]["molecule"] == mol
    assert len(props_of(layout, "selected-ring")["data"]) == 2
    layers_drawn = props_of(layout, "map-paint")["data"]["layers"]  # the renderer's canvas layers of the points
    assert sum(layer["n"] for layer in layers_drawn) == layers.md.points((1, 2))[0].size  # the defined axes
    assert props_of(layout, "verdict")["children"]  # the verdict is there without a callback
    # a Referer is no longer read, and a missing query gets the plain layout; the callbacks then resolve the URL
    for headers in ({"Referer": f"{dash_url}/?dataset=qm9"}, {}):
        plain = httpx.get(dash_url + "/_dash-layout", headers=headers, timeout=60).json()
        assert "data" not in props_of(plain, "map-state") and "search" not in props_of(plain, "url")


def test_layout_for_an_unknown_dataset_leaves_the_url_to_the_callbacks(dash_url):
    layout = httpx.get(dash_url + "/_dash-layout", headers={PAGE_QUERY_HEADER: "?dataset=nope"}, timeout=60).json()
    assert "search" not in props_of(layout, "url")  # dcc.Location reports it, sync_state cleans it
    assert "Unknown dataset 'nope'" in str(props_of(layout, "messages")["children"])
    assert props_of(layout, "map-state")["data"]["dataset"] == "qm9"


def test_zoomed_pages_are_not_cached_so_zooming_does_not_grow_the_cache():
    calls = []
    cache = ByteBudgetCache(MB)
    app = PageQueryMiddleware(_layout_app(calls), version=lambda: 1, cache=cache)
    for k in range(5):  # five zooms, each its own URL, each loaded twice
        ref = {"host": "lab", PAGE_QUERY_HEADER.lower(): f"?dataset=qm9&view=map&zoom=-0.{k},0.5,-0.2,0.2"}
        asyncio.run(_get(app, "/_dash-layout", ref))
        asyncio.run(_get(app, "/_dash-layout", ref))
    assert len(calls) == 10 and len(cache) == 0
    asyncio.run(_get(app, "/_dash-layout", {"host": "lab", PAGE_QUERY_HEADER.lower(): "?dataset=qm9&view=map"}))
    assert len(cache) == 1  # the unzoomed page is kept


def test_an_unknown_colour_in_the_url_is_named_and_replaced_by_the_axis(qm9_store):
    bad = resolve_view(qm9_store, "?dataset=qm9&color=prop:nope")
    assert bad.state.color == "axis"
    assert any("Unknown colour 'prop:nope'" in m and "prop:gap" in m for m in bad.messages)
    good = resolve_view(qm9_store, "?dataset=qm9&color=prop:gap")
    assert good.state.color == "prop:gap" and good.messages == []
