"""Headless Debian Chromium for browser tests and the UI benchmark (software WebGL, no network chatter)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import numpy as np

from tests.harness import exited, free_port, start_server, stop, wait_until

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
REPO = Path(__file__).resolve().parents[2]


def chromium_available() -> bool:
    return Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()


def _warming(base: str) -> bool:
    """Whether the server at ``base`` is still running its start-up warm-up (GET /api/health)."""
    with urllib.request.urlopen(base + "/api/health", timeout=10) as r:
        return bool(json.load(r)["warming"])


@contextmanager
def serve(data_dir: Path, read_only: bool = False, timeout_s: float = 60.0, env: dict | None = None, warm=False):
    """Run the dashboard (tests/browser/server.py) in a subprocess on a free port; yield its base URL.

    ``env`` adds environment variables of the server process (e.g. ORIENTSCOPE_MAP_POINT_BUDGET);
    ``warm`` runs the served app's start-up warm-up and yields once it is done.
    """
    port = free_port()
    cmd = [sys.executable, str(Path(__file__).with_name("server.py")), str(data_dir), str(port)]
    if read_only:
        cmd.append("--read-only")
    if warm:
        cmd.append("--warm")
    log = tempfile.TemporaryFile()
    env = {**os.environ, **(env or {})}
    try:
        proc, base = start_server(cmd, port, timeout_s, "/_dash-layout", cwd=REPO, stdout=log, stderr=log, env=env)
    except AssertionError as err:
        log.seek(0)
        raise RuntimeError(f"dashboard server did not start ({err}):\n{log.read().decode(errors='replace')}") from None
    try:
        if warm:
            wait_until(lambda: not _warming(base), timeout_s, "the dashboard server's warm-up", 0.5, exited(proc))
        yield base
    finally:
        close_pages(base)  # before the server goes: a page left open would fail to reach it in its console
        stop(proc)
        log.close()


def make_driver(
    download_dir: Path | None = None,
    width: int = 1500,
    height: int = 1100,
    page_load_strategy: str = "normal",
    args: tuple[str, ...] = (),
):
    """Headless Chromium; ``page_load_strategy="none"``: ``get`` returns at once, not after the page has loaded.

    ``args`` are more command-line switches (e.g. ``--host-resolver-rules``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="os-chrome-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    opts.page_load_strategy = page_load_strategy
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--use-angle=swiftshader",
        "--enable-unsafe-swiftshader",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-dev-shm-usage",
        "--mute-audio",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        *args,
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    if download_dir is not None:
        opts.add_experimental_option(
            "prefs", {"download.default_directory": str(download_dir), "download.prompt_for_download": False}
        )
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver._os_profile = profile
    if download_dir is not None:
        driver.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(download_dir)})
    LIVE_DRIVERS.append(driver)
    return driver


def quit_driver(driver) -> None:
    """Quit ``driver``; what its console held is kept for :func:`console_errors` (a test may quit its own)."""
    if driver in LIVE_DRIVERS:
        LIVE_DRIVERS.remove(driver)
        QUIT_CONSOLE.extend(severe_console(driver))
    profile = getattr(driver, "_os_profile", None)
    driver.quit()
    if profile:
        shutil.rmtree(profile, ignore_errors=True)


# Every browser made by make_driver and not quit yet, and the errors of those quit since the last look:
# the browser tests' console check (tests/browser/conftest.py) reads all of them.
LIVE_DRIVERS: list = []
QUIT_CONSOLE: list[str] = []


# Documents of these schemes are the browser's own pages (its start page, settings, ...), never a page under test.
BROWSER_SCHEMES = ("chrome", "chrome-untrusted", "chrome-search", "chrome-extension", "devtools")


class PageRequests:
    """The requests that the page under test made in a tab, from Chromium's performance log, since creation.

    The log holds the whole tab: Chromium's start page (``chrome://new-tab-page``, over 100 requests in
    Chromium 150) loads in the tab's own frame (the same CDP ``frameId`` as the page a test opens next) and
    may still be loading when the test navigates. A request counts as the page's when one of the tab's
    frames made it (CDP ``frameId``: the tab's frame, or a frame attached under it) for a web document
    (its ``documentURL`` is no browser page); requests the browser makes for itself carry no frame of the
    tab. ``data:`` and ``blob:`` URLs are left out (they never leave the page).

    Reading the log drains it, so one ``PageRequests`` per tab at a time.
    """

    def __init__(self, driver):
        self.driver = driver
        self._frames: set[str] = set()
        self._requests: dict[str, str] = {}  # CDP requestId -> URL (a redirect's last), in the order sent
        self.browser_own: list[str] = []  # what the tab's log held that the browser asked for itself
        self._entries()  # what came before is not this page's business

    def _entries(self) -> list[dict]:
        out = []
        for entry in self.driver.get_log("performance"):
            raw = json.loads(entry["message"])
            self._frames.add(raw["webview"])  # the tab's target id is its frame's id
            out.append(raw["message"])
        return out

    def _read(self) -> None:
        for msg in self._entries():
            method, params = msg.get("method"), msg.get("params", {})
            if method == "Page.frameAttached" and params.get("parentFrameId") in self._frames:
                self._frames.add(params["frameId"])
            elif method == "Network.requestWillBeSent":
                document = urlparse(params.get("documentURL", "")).scheme
                url = params["request"]["url"]
                if params.get("frameId") not in self._frames or document in BROWSER_SCHEMES:
                    self.browser_own.append(url)
                elif not url.startswith(("data:", "blob:")):
                    self._requests[params["requestId"]] = url

    def urls(self) -> list[str]:
        """Every URL the page asked for, in order."""
        self._read()
        return list(self._requests.values())

    def off_origin(self, base_url: str) -> list[str]:
        """The URLs the page asked for from any origin other than ``base_url``'s."""
        origin = urlparse(base_url)[:2]
        return [u for u in self.urls() if urlparse(u)[:2] != origin]


def severe_console(driver) -> list[str]:
    """The console's errors since the last look (reading drains it): uncaught exceptions, ``console.error``,
    and every failed request, which Chromium logs there ("Failed to load resource: ... status of 422",
    "net::ERR_CONNECTION_REFUSED")."""
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def close_pages(base_url: str) -> None:
    """Send every browser the tests made that shows a page of ``base_url`` to a blank page."""
    for driver in LIVE_DRIVERS:
        try:
            if driver.current_url.startswith(base_url):
                driver.get("about:blank")
        except Exception:  # a browser that crashed says so in console_errors
            pass


def console_errors() -> list[str]:
    """The console errors of every browser the tests made, since the last call (drains them)."""
    found, QUIT_CONSOLE[:] = list(QUIT_CONSOLE), []
    for driver in LIVE_DRIVERS:
        try:
            found += severe_console(driver)
        except Exception as err:  # a browser that crashed or whose session ended says so, once
            found.append(f"cannot read the console of a browser: {type(err).__name__}: {err}")
    return found


MAP_JS = """
const arr = v => (v && typeof v.length === 'number' && typeof v !== 'string') ? Array.from(v) : v;
const host = document.getElementById('orientation-map'), h = host && host._mapHandle;
if (h) {  // map_draw.js's drawing: its paint's canvas layers (map units, y up, as the figures' traces were)
  const p = h.paint(), dec = s => { if (Array.isArray(s)) return s; const b = atob(s.bdata), u = new Uint8Array(b.length);
    for (let i = 0; i < b.length; i++) u[i] = b.charCodeAt(i); return Array.from(new Int16Array(u.buffer)); };
  return (p.layers || []).map(l => ({kind: l.kind, n: l.n, type: 'canvas', meta: {kind: l.kind, n_points: l.n, range: l.range || null},
    x: arguments[0] ? dec(l.x) : null, y: arguments[0] ? dec(l.y).map(v => -v) : null,
    color: arguments[0] ? l.color : null}));
}
const gd = document.querySelector('#orientation-graph-box:not([hidden]) .js-plotly-plot');
if (!gd || !gd._fullData) return null;
return gd._fullData.map(t => ({kind: t.meta && t.meta.kind, n: t._length === undefined ? null : t._length,
                               type: t.type, meta: t.meta || null, x: arguments[0] ? arr(t.x) : null,
                               y: arguments[0] ? arr(t.y) : null, color: arguments[0] && t.marker ? arr(t.marker.color) : null}));
"""


MAP_DRAWN_JS = """
const m = document.getElementById('orientation-map');
if (!m || m.getAttribute('data-drawn') === null || (!arguments[0] && m.hasAttribute('data-first-paint'))) return null;
return {drawn: Number(m.getAttribute('data-drawn')), mode: m.getAttribute('data-mode')};
"""


def map_drawn(driver, first_paint: bool = False) -> dict | None:
    """{"drawn": distinct molecules drawn, "mode": "image" | "points"} once the map's pixels are on screen.

    By default only the interactive plot counts; ``first_paint=True`` also accepts the static image
    the page's HTML carries before its scripts run (app/first_paint.py).
    """
    return driver.execute_script(MAP_DRAWN_JS, first_paint)


# Offsets from the static drawing's centre (as ActionChains offsets are) of points in its SVG viewBox units.
FIRST_PAINT_PIXELS_JS = """
const svg = document.querySelector('#orientation-map[data-first-paint] svg');
const vb = svg.viewBox.baseVal, r = svg.getBoundingClientRect();
const cx = Math.floor(r.left + r.width / 2), cy = Math.floor(r.top + r.height / 2);  // WebDriver's centre
return arguments[0].map(p => [r.left + (p[0] - vb.x) / vb.width * r.width - cx,
                              r.top + (p[1] - vb.y) / vb.height * r.height - cy]);
"""


def finite_pixels(driver, script: str, points) -> np.ndarray:
    """(n, 2) what ``script`` answers for (n, 2) points, NaN for a point with a NaN coordinate: an axis the
    molecule's symmetry leaves undefined is no point on the map, and WebDriver's JSON cannot carry NaN."""
    pts = np.asarray(points, float).reshape(-1, 2)
    out = np.full(pts.shape, np.nan)
    ok = np.isfinite(pts).all(axis=1)
    if ok.any():
        out[ok] = np.array(driver.execute_script(script, pts[ok].tolist())).reshape(-1, 2)
    return out


def first_paint_pixels(driver, points) -> np.ndarray:
    """(n, 2) on-screen offsets from the first paint's centre of (n, 2) points in its SVG units (map units, y down)."""
    return finite_pixels(driver, FIRST_PAINT_PIXELS_JS, points)


# The 3D sphere (frontend_assets/map_sphere.js) of the first paint (Dash's map box: DASH_SPHERE_*): its canvas, its
# camera as the renderer reports it ({azimuth, elevation, zoom, width, height, radius}, null before it is drawn) and
# the paint the page carries.
SPHERE_CANVAS = "#orientation-map[data-first-paint] canvas.sphere-canvas"
DASH_SPHERE_CANVAS = "#orientation-map:not([data-first-paint]) canvas.sphere-canvas"


def _camera_js(host: str) -> str:
    return (
        f"const h = document.querySelector('{host}'), s = h && h._mapHandle;"
        "return s && s.camera && s.camera().width > 0 ? s.camera() : null"
    )


SPHERE_CAMERA_JS = _camera_js("#orientation-map[data-first-paint]")
DASH_SPHERE_CAMERA_JS = _camera_js("#orientation-map:not([data-first-paint])")
SPHERE_PAINT_JS = "return JSON.parse(document.querySelector('script.first-paint-data').textContent).sphere"
DASH_SPHERE_PAINT_JS = (  # the sphere paint Dash's map box draws (its paint store's, as the renderer holds it)
    "const h = document.querySelector('#orientation-map:not([data-first-paint])'), s = h && h._mapHandle;"
    "const p = s && s.paint(); return p && p.view === 'sphere' ? p.sphere : null"
)
_SPHERE_PIXEL_JS = """
const c = document.querySelector(arguments[2]), k = window.devicePixelRatio || 1;
const x = Math.round(arguments[0] * k - 0.5), y = Math.round(arguments[1] * k - 0.5);
return Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data);
"""


def sphere_pixel(driver, x: float, y: float, canvas: str = SPHERE_CANVAS) -> np.ndarray:
    """[r, g, b, a] of the sphere's canvas (the first paint's, or ``canvas``) at (x, y) px of its drawing."""
    return np.array(driver.execute_script(_SPHERE_PIXEL_JS, x, y, canvas), float)


def css_rgb(color: str) -> np.ndarray:
    """[r, g, b] of a CSS colour written "#rrggbb" or "rgb(r, g, b)"."""
    if color.startswith("#"):
        return np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)], float)
    return np.array([float(c) for c in color[color.index("(") + 1 : -1].split(",")[:3]])


def sphere_screen(cam: dict, vectors) -> tuple[np.ndarray, np.ndarray]:
    """((n, 2) px from the sphere drawing's top left, (n,) depth towards the viewer) of (n, 3) unit vectors under
    the renderer's turntable camera (z up), written here from its definition: the tests' oracle."""
    a, e = cam["azimuth"], cam["elevation"]
    right = np.array([-np.sin(a), np.cos(a), 0.0])
    up = np.array([-np.sin(e) * np.cos(a), -np.sin(e) * np.sin(a), np.cos(e)])
    towards = np.array([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])
    v = np.asarray(vectors, float).reshape(-1, 3)
    r = min(cam["width"], cam["height"]) / 2 / 1.1 * cam["zoom"]  # the 3D scene's ±1.1 ranges
    return np.stack([cam["width"] / 2 + r * v @ right, cam["height"] / 2 - r * v @ up], axis=1), v @ towards


def dash_sphere(driver) -> tuple[dict, dict]:
    """(camera, paint's ``sphere``) of the sphere Dash's map box draws, once drawn."""
    cam = wait_until(lambda: driver.execute_script(DASH_SPHERE_CAMERA_JS), 40, "Dash's sphere", 0.15)
    return cam, wait_until(lambda: driver.execute_script(DASH_SPHERE_PAINT_JS), 40, "Dash's sphere paint", 0.15)


def point_at_dot(driver, canvas: str, cam: dict, sphere: dict, k: int, click: bool = False) -> np.ndarray:
    """Move the mouse onto dot ``k`` of the sphere drawn on ``canvas`` (and click it); its (x, y) px on the drawing."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    xy = sphere_screen(cam, np.asarray(sphere["vectors"], float)[3 * k : 3 * k + 3])[0][0]
    el = driver.find_element(By.CSS_SELECTOR, canvas)
    moved = ActionChains(driver).move_to_element_with_offset(
        el, int(round(xy[0] - cam["width"] / 2)), int(round(xy[1] - cam["height"] / 2))
    )
    (moved.click() if click else moved).perform()
    return xy


def lone_front_dot(sphere: dict, cam: dict, clear_px: float = 6.0) -> int:
    """The index of the dot nearest the drawing's centre on the near hemisphere with no other dot within
    ``clear_px`` (or the dot's own size) and no reference axis within 14 px: a click there can only mean it."""
    xy, depth = sphere_screen(cam, sphere["vectors"])
    refs = sphere_screen(cam, [r["v"] for r in sphere["reference"]])[0] if sphere["reference"] else np.zeros((0, 2))
    clear = max(clear_px, sphere["size"])
    centre = np.array([cam["width"], cam["height"]]) / 2
    for i in np.argsort(np.hypot(*(xy - centre).T)):
        d = np.hypot(*(xy - xy[i]).T)
        d[i] = np.inf
        if depth[i] > 0.2 and d.min() > clear and (refs.size == 0 or np.hypot(*(refs - xy[i]).T).min() > 14):
            return int(i)
    raise AssertionError("no dot stands alone on the near hemisphere")


def map_traces(driver, with_arrays: bool = False):
    """Traces of the drawn map: kind (from meta), number of drawn points, and optionally x/y/colour arrays."""
    return driver.execute_script(MAP_JS, with_arrays)


NEXT_FRAMES_JS = (
    "const done = arguments[arguments.length - 1]; requestAnimationFrame(() => requestAnimationFrame(() => done()));"
)


def after_frames(driver) -> None:
    """Return once the page has drawn two more frames: what an input event sets off for the next frame (plotly's
    3D picking, a redraw) has run. A barrier of the page's own, where a fixed pause would be a guess."""
    driver.execute_async_script(NEXT_FRAMES_JS)
