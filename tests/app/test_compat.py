"""The Dash and plotly internals of app/compat.py, orientscope/figures/compat.py and orientscope.js's marked section.

Canaries: each fails when an upgrade changes the internal a trick relies on. Then the
tricks' behaviour (real HTTP), and a grep that keeps private names out of the rest of the tree.
"""

import inspect
import json
import math
import re
from importlib.metadata import version
from pathlib import Path

import dash._callback
import dash._utils
import httpx
import numpy as np
import plotly
import plotly.graph_objects as go
import pytest
from dash import Input, Output, dcc, html
from fastapi import FastAPI
from plotly.io.json import to_json_plotly

from orientscope.app import compat
from orientscope.app.compat import PINNED, answer_json, dispatch_in_threads, install_answer_encoder
from orientscope.figures.compat import unvalidated_figure
from tests.api.conftest import ServerThread
from tests.app.echo_app import echo_app, echo_request

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def answer_encoder():
    """Our encoder installed for the test, Dash's own put back after it."""
    original = dash._callback.to_json
    restore = install_answer_encoder()
    yield
    restore()
    assert dash._callback.to_json is original


def test_the_encoder_swap_ends_with_the_last_install_and_a_dashboard_ends_its_own(qm9_store):
    from orientscope.server import create_app

    assert dash._callback.to_json is dash._utils.to_json, "an earlier test left a dashboard's encoder installed"
    first, second = install_answer_encoder(), install_answer_encoder()
    first()
    first()  # a second call of one restore does not end the other install
    assert dash._callback.to_json is compat._encode_answer
    second()
    assert dash._callback.to_json is dash._utils.to_json
    with ServerThread(create_app(qm9_store, dashboard=True)):
        assert dash._callback.to_json is compat._encode_answer
    assert dash._callback.to_json is dash._utils.to_json  # the server's shutdown ended its swap


# ----------------------------------------------------------------- canaries
@pytest.mark.parametrize("package", sorted(PINNED))
def test_installed_versions_are_the_pinned_minor_versions(package):
    assert version(package).startswith(PINNED[package] + "."), (package, version(package))
    pin = re.search(rf'"{package}>=([\d.]+),<([\d.]+)"', (ROOT / "pyproject.toml").read_text())
    assert pin and pin.group(1) == PINNED[package], "pyproject.toml pins another minor version than the compat modules"


@pytest.mark.dash_canary
def test_canary_dash_encodes_callback_answers_through_its_module_global_to_json():
    # Dash's dispatch must still look `to_json` up in dash._callback at call time, and that
    # name must still be plotly's encoder (what answer_json mimics).
    # (another test may already have built the dashboard, which installs our encoder)
    assert dash._callback.to_json in (dash._utils.to_json, compat._encode_answer)
    source = inspect.getsource(dash._callback)
    assert "from ._utils import" in source and "    to_json," in source
    assert "to_json(response)" in source
    assert dash._utils.to_json({"a": "x/y"}) == to_json_plotly({"a": "x/y"})


@pytest.mark.dash_canary
def test_canary_dash_callback_route_is_a_coroutine_endpoint_of_one_request():
    server = FastAPI()
    echo_app(server)
    route = next(r for r in server.router.routes if getattr(r, "path", "") == "/" + compat.CALLBACK_PATH)
    assert inspect.iscoroutinefunction(route.endpoint)
    assert list(inspect.signature(route.endpoint).parameters) == ["request"]
    assert route.methods == {"POST"}


@pytest.mark.dash_canary
def test_canary_plotly_figures_accept_validate_false_and_skip_validation():
    # plotly reads it from **kwargs: the canary is the behaviour, checked both ways
    bad = {"data": [{"type": "scatter", "opacity": "lots"}]}  # a value plotly would reject
    with pytest.raises(ValueError):
        go.Figure(**bad)
    assert unvalidated_figure(**bad).to_dict()["data"][0]["opacity"] == "lots"


@pytest.mark.dash_canary
def test_canary_bundled_plotly_js_has_the_internals_orientscope_js_reads():
    bundle = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()
    assert re.search(r"plotly\.js v4\.1\.\d", bundle[:200]), bundle[:200]
    for name in ("_fullLayout", ".l2p", ".p2l", "._offset", "._length", "._has", "._rangeInitial0", "._rangeInitial1"):
        assert name in bundle, name


# ----------------------------------------------------------------- the encoder
VALUES = [
    {"bdata": "AAAA/+//AAA=", "dtype": "f4", "shape": "3"},
    {"x": np.arange(5, dtype=np.float32), "y": np.array([1.5, np.nan]), "n": np.int64(7)},
    {"title": "</script><script>alert(1)</script> & <b>bold</b>", "sep": "a\u2028b\u2029c", "é": "ünïcode ∞"},
    {"nan": math.nan, "inf": [math.inf, -math.inf], 3: "int key", "nested": [[1, 2], {"a": None}]},
    html.Div([html.B("a</b>"), dcc.Markdown("x/y")], id="d"),  # components: plotly's own path
]


def test_answers_parse_like_plotlys_and_cannot_close_a_script_element():
    for value in VALUES:
        text = answer_json(value)
        assert json.loads(text) == json.loads(to_json_plotly(value))
        for unsafe in ("<", ">", "\u2028", "\u2029"):
            assert unsafe not in text


def test_slashes_stay_as_they_are():
    text = answer_json({"bdata": "AAAA/+//AAA=", "url": "a/b"})
    assert "AAAA/+//AAA=" in text and "a/b" in text
    assert "\\u002f" in to_json_plotly({"url": "a/b"})  # what plotly's encoder would send


def _echo_server(threads: bool) -> FastAPI:
    server = FastAPI()
    app = echo_app(server)

    @app.callback(Output("o", "children"), Input("i", "value"))
    def echo(value):
        return f"{value}/</script>"

    if threads:
        dispatch_in_threads(server)
    return server


@pytest.mark.parametrize("threads", [True, False])
def test_installed_encoder_serves_our_dispatch_and_leaves_other_dash_apps_alone(answer_encoder, threads):
    with ServerThread(_echo_server(threads)) as srv:
        r = httpx.post(f"{srv.url}/_dash-update-component", json=echo_request("x"), timeout=30)
    assert r.status_code == 200
    assert r.json()["response"]["o"]["children"] == "x/</script>"
    slash = "/" if threads else "\\u002f"  # plotly escapes "/"
    assert f"x{slash}\\u003c{slash}script\\u003e" in r.text


# ----------------------------------------------------------------- private names stay here
PRIVATE_PY = re.compile(r"dash\._\w|\._traverse\(|_validate=False|coro\.send\(|\.send\(None\)")
PRIVATE_JS = re.compile(r"_full\w*|\bl2p\b|\bp2l\b|\._offset\b|\._length\b|\._has\b")
JS_SECTION = re.compile(r"// =+ plotly\.js internals\n.*?// =+ end of plotly\.js internals\n", re.S)


COMPAT_MODULES = (Path("app/compat.py"), Path("backend/figures/compat.py"))  # Dash's; the figures' plotly trick


def test_private_dash_and_plotly_names_appear_only_in_the_compat_places():
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        skipped = rel.parts[0] in ("tests", ".venv", "build") or rel.parts[:2] == ("backend", "app")  # the link to app/
        if skipped or rel in COMPAT_MODULES or "site-packages" in rel.parts:
            continue
        offenders += [f"{rel}: {m.group()}" for m in PRIVATE_PY.finditer(path.read_text())]
    js = (ROOT / "frontend_assets" / "orientscope.js").read_text()
    assert len(JS_SECTION.findall(js)) == 1, "orientscope.js must have one marked plotly.js internals section"
    offenders += [f"orientscope.js: {m.group()}" for m in PRIVATE_JS.finditer(JS_SECTION.sub("", js))]
    assert not offenders
    # and the compat modules really hold them (so the grep above looks for the right spellings)
    assert all(PRIVATE_PY.search((ROOT / module).read_text()) for module in COMPAT_MODULES)
    assert PRIVATE_JS.search(JS_SECTION.search(js).group())


@pytest.mark.dash_canary
def test_canary_first_screen_scripts_are_dashs_own_long_cached_urls_and_the_graph_reuses_window_plotly():
    import dash
    from fastapi.testclient import TestClient

    server = FastAPI()
    app = dash.Dash(
        __name__, server=server, backend="fastapi", serve_locally=True, eager_loading=False,
        external_scripts=compat.first_screen_scripts(),
    )  # fmt: skip
    app.layout = html.Div([dcc.Graph(id="g"), dcc.Dropdown(id="d")])
    with TestClient(server) as client:
        index = client.get("/").text
        assert "async-mathjax" not in index and "async-markdown" not in index  # not eagerly loaded
        for url in compat.first_screen_scripts():
            assert url in index
            answer = client.get(url)
            assert answer.status_code == 200 and "max-age=31536000" in answer.headers["cache-control"], url
    library = (Path(dash.__file__).parent / "dcc" / "dash_core_components.js").read_text()
    assert "window.Plotly||" in library  # the lazy graph takes plotly.js from the page when it is there


@pytest.mark.dash_canary
def test_canary_the_first_paint_and_the_page_query_script_come_after_dashs_root_and_before_its_renderer():
    """app/compat.py add_after_app_entry and send_page_query_with_layout: Dash's index interpolates ``app_entry``
    (its root element, with the "Loading..." placeholder style.css hides) before its scripts, and its renderer
    asks for the layout through ``window.fetch``, looked up at the time it asks."""
    import dash
    from fastapi.testclient import TestClient

    server = FastAPI()
    app = dash.Dash(__name__, server=server, backend="fastapi", serve_locally=True)
    app.layout = html.Div("x")
    compat.send_page_query_with_layout(app)
    compat.add_after_app_entry(app, lambda: '<div class="first-paint-page"></div>')
    with TestClient(server) as client:
        index = client.get("/").text
    entry, loading = index.index('id="react-entry-point"'), index.index(compat.DASH_LOADING_CLASS)
    script, paint = index.index(compat.PAGE_QUERY_SCRIPT), index.index('class="first-paint-page"')
    renderer = index.index("new DashRenderer(")
    assert entry < loading < script < renderer and entry < paint < renderer
    bundle = (Path(dash.__file__).parent / "dash-renderer" / "build" / "dash_renderer.min.js").read_text()
    assert f'"{compat.LAYOUT_ROUTE}"' in bundle and "fetch(" in bundle
