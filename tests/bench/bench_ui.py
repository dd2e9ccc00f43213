"""UI benchmark in headless Chromium on full QM9 -> section `ui` of BENCHMARKS.md.

Measures, next to naive baselines in the same run:
- navigation -> orientation map drawn with every axis point (int16, gzip, solid-colour Scattergl traces)
  vs. a Scattergeo Mollweide page fed uncompressed float64 JSON lists;
- click on a map point -> 3D viewer showing that molecule
  vs. reopening the page with ``?molecule=`` (a full reload).

Usage: python -m tests.bench.bench_ui [DATA_DIR]   (default $ORIENTSCOPE_BENCH_DIR or /tmp/os-bench-ui;
QM9 frames and statistics are computed there first if missing).
"""

from __future__ import annotations

import http.server
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

from orientscope.store.atomic import atomic_write_bytes
from tests.browser.chrome import (
    SPHERE_CAMERA_JS,
    SPHERE_PAINT_JS,
    first_paint_pixels,
    lone_front_dot,
    make_driver,
    map_drawn,
    quit_driver,
    serve,
    sphere_screen,
)
from tests.harness import wait_until

REPO = Path(__file__).resolve().parents[2]
SECTION = "ui"
N_NAV = 5
N_CLICKS = 7
SETTLE_S = 8.0  # after the first page load: the server's background warm-up finishes

CLICK_PROBE_JS = """
window.__t = {};
const gd = document.querySelector('#orientation-map .map-stage');
gd.addEventListener('mousedown', () => { window.__t.click = performance.now(); }, true);
const el = document.getElementById('molecule-viewer');
// "shown": the first task after the next frame, whose commit waits for the WebGL draw to finish
new MutationObserver(() => {
  window.__t.changed = performance.now(); window.__t.molecule = el.dataset.molecule; window.__t.shown = 0;
  requestAnimationFrame(() => setTimeout(() => { window.__t.shown = performance.now(); }, 0));
}).observe(el, {attributes: true, attributeFilter: ['data-molecule']});
// A click on a pixel that several molecules share opens a chooser (issue 29): "chooser", when its rows are
// on screen; "pick", the press on one of them.
const host = gd.closest('#orientation-map');
new MutationObserver(() => {
  if (!window.__t.chooser && host.querySelector('.map-chooser .chooser-row')) {
    requestAnimationFrame(() => setTimeout(() => { window.__t.chooser = performance.now(); }, 0));
  }
}).observe(host, {childList: true, subtree: true});
host.addEventListener('mousedown', (e) => {
  if (e.target.closest('.map-chooser')) { window.__t.pick = performance.now(); }
}, true);
"""

TO_PIXEL_JS = """
const stage = document.querySelector('#orientation-map .map-stage'), vb = stage.querySelector('svg').viewBox.baseVal;
const r = stage.getBoundingClientRect();
const cx = Math.floor(r.left + r.width / 2), cy = Math.floor(r.top + r.height / 2);  // WebDriver's centre
return arguments[0].map(p => ({dx: r.left + (p[0] - vb.x) / vb.width * r.width - cx,
                               dy: r.top + (-p[1] - vb.y) / vb.height * r.height - cy}));
"""


def click_targets(driver, md, n: int) -> list[dict]:
    """On-screen offsets (from the plot centre) of the first axis of every 9973rd molecule whose axis 1 is drawn
    (symmetry leaves some undefined: NaN, no point, and WebDriver's JSON cannot carry it), inside the plot."""
    from orientscope.figures.plots import MAP_SCALE

    rows = [r for r in np.arange(0, md.n_molecules, 9973) if np.isfinite(md.x[r, 0]) and np.isfinite(md.y[r, 0])]
    pts = [[float(md.x[r, 0]) * MAP_SCALE, float(md.y[r, 0]) * MAP_SCALE] for r in rows]
    return [t for t in driver.execute_script(TO_PIXEL_JS, pts) if abs(t["dx"]) < 300 and abs(t["dy"]) < 150][:n]


def ensure_store(data_dir: Path) -> Path:
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store import datasets as ds

    if not (ds.has_dataset(data_dir, "qm9") and ds.read_meta(data_dir, "qm9").get("active_result")):
        precompute(data_dir, "qm9", make_params(seed=0), stages=["frames", "statistics"])
    return data_dir


def _wait(fn, timeout=120.0, poll=0.02):
    return wait_until(fn, timeout_s=timeout, what="the benchmark's condition", poll_s=poll)


# When the map's first paint (the server's image inside the page HTML, app/first_paint.py) set the test
# hook, in seconds since navigation start (None if the page had none).
FIRST_PAINT_JS = (
    "const p = performance.getEntriesByName('orientscope:first-paint')[0]; return p ? p.startTime / 1000 : null"
)


def time_dashboard_map(driver, url: str) -> float:
    """Seconds from navigation until the interactive map's test hook says its pixels are on screen."""
    t0 = time.perf_counter()
    driver.get(url)
    _wait(lambda: map_drawn(driver))
    return time.perf_counter() - t0


def cold_navigations(url: str, n: int) -> dict:
    """``n`` navigations to ``url``, each in a new browser context (a cold cache, as a first visit).

    Returns lists of seconds since navigation start: ``first_paint`` (the first paint in the page HTML
    drawn, its hook set; None without one), ``map`` (the interactive plot drawn over it) and ``scripts``
    (the page's scripts loaded and run); and ``mode``, the interactive map's.
    """
    out: dict = {"first_paint": [], "map": [], "scripts": [], "mode": None}
    for _ in range(n):
        driver = make_driver()
        try:
            out["map"].append(time_dashboard_map(driver, url))
            out["first_paint"].append(driver.execute_script(FIRST_PAINT_JS))
            out["scripts"].append(driver.execute_script(SCRIPTS_DONE_JS) / 1000.0)
            out["mode"] = map_drawn(driver)["mode"]
        finally:
            quit_driver(driver)
    return out


# When the page's scripts (Dash, plotly.js, ...) have loaded and run: the part of a cold navigation
# that does not depend on the map.
SCRIPTS_DONE_JS = "return performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"

# The hook is cleared first, so the wait cannot read the previous view's hook (and mode); the zoom is the renderer's
# own (map_draw.js handle.zoom: ranges in map units).
ZOOM_JS = """
const host = document.getElementById('orientation-map'), s = 1e4;
host.removeAttribute('data-drawn'); host.removeAttribute('data-mode');
window.__zoomed = performance.now();
host._mapHandle.zoom({x0: arguments[0][0] / s, x1: arguments[0][1] / s, y0: arguments[1][0] / s, y1: arguments[1][1] / s});
"""


FIRST_PAINT_CLICK_JS = (
    "const m = performance.getEntriesByName('orientscope:first-paint-click')[0];"
    "return m ? [m.startTime / 1000, m.duration / 1000] : null"
)
# Installed before the page's own scripts, in seconds since navigation start: when the first paint's molecule
# panel shows the clicked molecule's id and info (firstPanel) and its viewer has drawn it (firstViewer), when
# Dash's molecule panel shows it (panel), and the longest task of the load (what a click waits behind).
# Once the first paint's panel shows a molecule, every frame checks that a panel still shows it with its
# structure (blank counts the frames without, e.g. as Dash's page replaces the first paint).
PAGE_PROBE_JS = """
window.__panel = null; window.__firstPanel = null; window.__firstViewer = null; window.__longest = 0;
window.__blank = 0; window.__frames = 0;
const now = () => performance.now() / 1000;
new MutationObserver(() => {
  const v = document.getElementById('molecule-viewer'), id = document.getElementById('molecule-id');
  const first = v && v.closest('[data-first-paint]');
  if (first && id && id.textContent && window.__firstPanel === null) { window.__firstPanel = now(); }
  if (first && v.dataset.molecule && window.__firstViewer === null) { window.__firstViewer = now(); }
  if (v && !first && v.dataset.molecule && window.__panel === null) { window.__panel = now(); }
}).observe(document, {subtree: true, childList: true, characterData: true, attributes: true,
                     attributeFilter: ['data-molecule']});
(function frame() {
  if (window.__firstViewer !== null) {
    const v = document.getElementById('molecule-viewer'), id = document.getElementById('molecule-id');
    window.__frames += 1;
    if (!(v && v.dataset.molecule && id && id.textContent === v.dataset.molecule)) { window.__blank += 1; }
  }
  if (window.__frames < 600) { requestAnimationFrame(frame); }
})();
new PerformanceObserver(l => l.getEntries().forEach(e => { window.__longest = Math.max(window.__longest, e.duration / 1000); }))
  .observe({type: 'longtask'});
"""
CENTRE_JS = (  # the first paint's drawing: the map's SVG or the sphere's canvas
    "const r = document.querySelector('#orientation-map[data-first-paint] :is(svg, canvas)').getBoundingClientRect();"
    "return [r.left + r.width / 2, r.top + r.height / 2]"
)


# The grid the first paint picks on (its image's own pixels, app/first_paint.py's data-map).
GRID_JS = (
    "return JSON.parse(document.querySelector('#orientation-map[data-first-paint]').getAttribute('data-map')).grid"
)


def map_target(driver, md) -> np.ndarray:
    """Offset from the static map's centre of the first axis of the first of every 9973rd molecule well inside it
    that is alone in its pixel of the first paint's grid: a click on a shared pixel opens the chooser instead
    of the molecule (timed by the interactive click row)."""
    from orientscope.figures.plots import MAP_SCALE

    g = driver.execute_script(GRID_JS)
    sx, sy = (g["x1"] - g["x0"]) / g["width"], (g["y1"] - g["y0"]) / g["height"]
    col, line = np.floor((md.x - g["x0"]) / sx), np.floor((md.y - g["y0"]) / sy)
    key = col * (g["height"] + 2) + line
    # a count per candidate, not a sort of every point: the click must land while the page's scripts still load
    rows = [r for r in np.arange(0, md.n_molecules, 9973) if np.count_nonzero(key == key[r, 0]) == 1]
    pixels = first_paint_pixels(driver, [[md.x[r, 0] * MAP_SCALE, -md.y[r, 0] * MAP_SCALE] for r in rows])
    return next(p for p in pixels if abs(p[0]) < 300 and abs(p[1]) < 150)


def sphere_target(driver, md) -> np.ndarray:
    """Offset from the first paint's sphere's centre of the dot nearest its centre on the near side, alone within 6 px
    (frontend_assets/map_sphere.js draws it from the paint the page carries, along plotly's default camera)."""
    cam = _wait(lambda: driver.execute_script(SPHERE_CAMERA_JS), poll=0.01)
    sphere = driver.execute_script(SPHERE_PAINT_JS)
    xy, _ = sphere_screen(cam, sphere["vectors"][3 * (k := lone_front_dot(sphere, cam)) : 3 * k + 3])
    return xy[0] - [cam["width"] / 2, cam["height"] / 2]


def time_first_paint_click(url: str, md, target_of=map_target) -> dict:
    """A click on the first paint as soon as it is drawn (at ``target_of``), while the page's scripts still load.

    Returns seconds since navigation start: ``drawn`` (the first paint's hook), ``clicked`` (the click's
    input event), ``answered`` (the frame with the server's nearest molecule ringed and named), ``panel``
    (Dash's molecule panel shows it) and ``scripts`` (DOMContentLoaded).
    """
    from selenium.webdriver.common.actions.action_builder import ActionBuilder

    driver = make_driver(page_load_strategy="none")  # get() returns at once: the click lands during the load
    try:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": PAGE_PROBE_JS})
        driver.get(url)
        drawn = _wait(lambda: driver.execute_script(FIRST_PAINT_JS), poll=0.01)
        x, y = np.add(driver.execute_script(CENTRE_JS), target_of(driver, md))
        # at a point of the window, not of an element: the click lands wherever the page is by then
        click = ActionBuilder(driver)
        click.pointer_action.move_to_location(int(round(x)), int(round(y))).click()
        click.perform()
        try:
            clicked, took = _wait(lambda: driver.execute_script(FIRST_PAINT_CLICK_JS), timeout=30)
        except TimeoutError:  # Dash had replaced the first paint before the click arrived
            return {"drawn": drawn, "missed": True}
        panel = _wait(lambda: driver.execute_script("return window.__panel"), timeout=60)
        scripts = _wait(lambda: driver.execute_script(SCRIPTS_DONE_JS), timeout=60) / 1000.0
        time.sleep(1.0)  # the frames after Dash's panel took over
        probe = driver.execute_script(
            "return [window.__longest, window.__firstPanel, window.__firstViewer, window.__blank, window.__frames]"
        )
        longest, first_panel, first_viewer, blank, frames = (float("nan") if v is None else v for v in probe)
        return {"drawn": drawn, "clicked": clicked, "answered": clicked + took, "panel": panel, "scripts": scripts,
                "longest": longest, "first_panel": first_panel, "first_viewer": first_viewer, "blank": blank,
                "frames": frames, "missed": False}  # fmt: skip
    finally:
        quit_driver(driver)


def time_zooms(driver, regions: list[tuple[float, float, float, float]]) -> list[tuple[float, str]]:
    """(seconds from a zoom until the re-aggregated region is drawn, its mode) per region (map units).

    The hook is set only once the server's paint of the zoomed region is drawn (map_draw.js; the drawing scaled at
    once does not count). Before 2026-12-05 the map was a plotly.js graph (orientscope.js ``watchMap``), and until
    2026-12-01 dcc.Graph's echo of the old figure set the hook, so the zoom figures before then timed the echo.
    """
    out = []
    for x0, x1, y0, y1 in regions:
        t0 = time.perf_counter()
        driver.execute_script(ZOOM_JS, [x0, x1], [y0, y1])
        shown = _wait(lambda: (m := map_drawn(driver)) and m, timeout=60)
        out.append((time.perf_counter() - t0, shown["mode"]))
        time.sleep(0.5)
    return out


def baseline_page(folder: Path, x: np.ndarray, y: np.ndarray) -> None:
    """Naive page: Scattergeo with Mollweide projection, float64 lon/lat as JSON lists, no compression."""
    import plotly

    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    (folder / "plotly.min.js").write_bytes(plotly_js.read_bytes())
    fig = {
        "data": [
            {"type": "scattergeo", "lon": x.tolist(), "lat": y.tolist(), "mode": "markers", "marker": {"size": 2}}
        ],
        "layout": {"geo": {"projection": {"type": "mollweide"}, "showland": False}, "height": 460},
    }
    (folder / "fig.json").write_text(json.dumps(fig))
    (folder / "index.html").write_text(
        "<!DOCTYPE html><html><body><div id='g'></div><script src='plotly.min.js'></script><script>"
        "fetch('fig.json').then(r => r.json()).then(f => Plotly.newPlot('g', f.data, f.layout))"
        ".then(gd => { window.__drawn = gd._fullData[0]._length; });</script></body></html>"
    )


def serve_folder(folder: Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = lambda *a, **k: Quiet(*a, directory=str(folder), **k)  # noqa: E731
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


BASELINE_TIMEOUT_S = 60.0


def time_baseline_map(driver, url: str, n_points: int) -> float:
    """Seconds until the naive page has drawn every point (inf if it does not within BASELINE_TIMEOUT_S)."""
    t0 = time.perf_counter()
    driver.get(url)
    try:
        _wait(lambda: driver.execute_script("return window.__drawn") == n_points, timeout=BASELINE_TIMEOUT_S)
    except TimeoutError:
        return float("inf")
    return time.perf_counter() - t0


def time_clicks(driver, md, choosers: list | None = None) -> list[float]:
    """Seconds from each click on the map to the molecule panel showing the molecule it opened.

    A click on a pixel that several molecules share opens a chooser instead (issue 29); with ``choosers``,
    each of those appends (click → the chooser's rows on screen, press on its first row → that molecule's
    panel shown), in seconds. Without it, such clicks are left out, as clicks between points are.
    """
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    graph = driver.find_element(By.CSS_SELECTOR, "#orientation-map .map-stage")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", graph)
    time.sleep(1.0)
    driver.execute_script(CLICK_PROBE_JS)
    out = []
    for target in click_targets(driver, md, N_CLICKS):
        before = driver.execute_script("window.__t.chooser = 0; return window.__t.molecule || null")
        ActionChains(driver).move_to_element_with_offset(
            graph, int(round(target["dx"])), int(round(target["dy"]))
        ).pause(0.2).click().perform()

        def opened(b=before):
            return driver.execute_script(
                "const t = window.__t; return (t.shown > t.click && t.molecule !== arguments[0]) ? 'panel'"
                " : (t.chooser > t.click ? 'chooser' : null)",
                b,
            )

        try:
            how = _wait(opened, timeout=30)
        except TimeoutError:
            continue  # the click landed between points
        if how == "panel":
            out.append(driver.execute_script("return window.__t.shown - window.__t.click") / 1000.0)
        elif choosers is not None:
            shown = driver.execute_script("return window.__t.chooser - window.__t.click") / 1000.0
            row = driver.find_element(By.CSS_SELECTOR, "#orientation-map .map-chooser .chooser-row button")
            ActionChains(driver).move_to_element(row).pause(0.2).click().perform()
            try:
                _wait(lambda b=before: driver.execute_script(
                    "const t = window.__t; return t.shown > t.pick && t.molecule !== arguments[0]", b
                ), timeout=30)  # fmt: skip
                choosers.append((shown, driver.execute_script("return window.__t.shown - window.__t.pick") / 1000.0))
            except TimeoutError:
                choosers.append((shown, None))
        else:
            driver.find_element(By.CSS_SELECTOR, "#orientation-map .map-chooser .chooser-close").click()
        time.sleep(1.0)  # let the other panels (neighbours, map ring) finish before the next click
    return out


def time_reload_select(driver, base: str, mol: str) -> float:
    t0 = time.perf_counter()
    driver.get(f"{base}/?dataset=qm9&molecule={mol}")
    _wait(
        lambda: driver.execute_script(
            "const e = document.getElementById('molecule-viewer'); return e && e.dataset.molecule === arguments[0]", mol
        )
    )
    return time.perf_counter() - t0


def cpu_reference_s() -> float:
    """Seconds for a fixed pure-Python loop: this shared machine's speed varies by 1.7x within an hour."""
    t0 = time.perf_counter()
    sum(i * i for i in range(10**7))
    return time.perf_counter() - t0


def write_section(text: str) -> None:
    path = REPO / "BENCHMARKS.md"
    old = path.read_text() if path.exists() else "# Benchmarks\n"
    start, end = f"<!-- bench:{SECTION} -->", f"<!-- /bench:{SECTION} -->"
    block = f"{start}\n{text.rstrip()}\n{end}"
    if start in old and end in old:
        new = old[: old.index(start)] + block + old[old.index(end) + len(end) :]
    else:
        new = old.rstrip() + "\n\n" + block + "\n"
    atomic_write_bytes(path, new.encode())


def main(argv: list[str] | None = None) -> None:
    from orientscope.figures.mapview import map_layers
    from orientscope.figures.plots import MAP_SCALE
    from orientscope.figures.state import ViewState

    argv = sys.argv[1:] if argv is None else argv
    data_dir = ensure_store(Path(argv[0] if argv else os.environ.get("ORIENTSCOPE_BENCH_DIR", "/tmp/os-bench-ui")))
    state = ViewState(dataset="qm9")
    layers = map_layers(data_dir, state)
    n_mol, n_points = layers.md.n_molecules, int(layers.rows.size)
    ids = [str(i) for i in layers.md.ids]
    results: dict = {}
    load_before = os.getloadavg()[0]
    cpu_before = cpu_reference_s()
    with serve(data_dir) as base:
        driver = make_driver()
        try:
            driver.get(base + "/")  # warm the server caches and the browser's HTTP cache once
            time_dashboard_map(driver, base + "/?dataset=qm9&view=map")
            time.sleep(SETTLE_S)
            results["default"] = cold_navigations(f"{base}/?dataset=qm9", 3)["map"]  # the first screen (densities)
            results |= cold_navigations(f"{base}/?dataset=qm9&view=map", N_NAV)
            quit_driver(driver)
            driver = make_driver()
            time_dashboard_map(driver, f"{base}/?dataset=qm9&view=map")
            results["fp_click"] = [time_first_paint_click(f"{base}/?dataset=qm9&view=map", layers.md) for _ in range(3)]
            results["clicks"] = time_clicks(driver, layers.md)
            s = MAP_SCALE
            regions = [(-1.2 * s, 0.3 * s, -0.5 * s, 0.3 * s), (0.2 * s, 0.8 * s, 0.1 * s, 0.4 * s),
                       (-2.0 * s, -1.9 * s, -0.05 * s, 0.0 * s), (-0.5 * s, 2.5 * s, -1.2 * s, 0.2 * s)]  # fmt: skip
            results["zooms"] = time_zooms(driver, regions)
            results["sphere"] = []
            for _ in range(3):
                quit_driver(driver)
                driver = make_driver()
                results["sphere"].append(time_dashboard_map(driver, f"{base}/?dataset=qm9&view=sphere"))
                results.setdefault("sphere_paint", []).append(driver.execute_script(FIRST_PAINT_JS))
            sphere_url = f"{base}/?dataset=qm9&view=sphere"
            results["sphere_click"] = [time_first_paint_click(sphere_url, layers.md, sphere_target) for _ in range(2)]
            results["reload"] = [time_reload_select(driver, base, ids[layers.rows[i]]) for i in (11, 222)]
            folder = Path(os.environ.get("TMPDIR", "/tmp")) / "os-bench-ui-baseline"
            folder.mkdir(exist_ok=True)
            v = layers.md.vectors(*layers.md.points())  # (3n, 3) every axis, back from its map position
            lon = np.degrees(np.arctan2(v[:, 1], v[:, 0])).astype(np.float64)
            lat = np.degrees(np.arcsin(np.clip(v[:, 2], -1, 1))).astype(np.float64)
            baseline_page(folder, lon, lat)
            httpd = serve_folder(folder)
            try:
                burl = f"http://127.0.0.1:{httpd.server_address[1]}/index.html"
                print("dashboard:", results, flush=True)
                results["baseline_map"] = [time_baseline_map(driver, burl, n_points)]
            finally:
                httpd.shutdown()
            results["baseline_bytes"] = (folder / "fig.json").stat().st_size
        finally:
            quit_driver(driver)

    def med(values) -> float:  # nan when every run was left out
        values = list(values)
        return statistics.median(values) if values else float("nan")

    missed = sum(c["missed"] for c in results["fp_click"] + results["sphere_click"])
    fp, sc = ([c for c in results[k] if not c["missed"]] for k in ("fp_click", "sphere_click"))
    base_map = med(results["baseline_map"])
    base_txt = f"{base_map:.2f} s" if np.isfinite(base_map) else f"not drawn within {BASELINE_TIMEOUT_S:.0f} s"
    text = f"""## UI (headless Chromium, software WebGL, full QM9)

{n_mol:,} molecules, {n_points:,} axis points; `python -m tests.bench.bench_ui`; 2 shared CPU cores.

| measure | OrientScope | naive baseline (same run) | target |
|---|---|---|---|
| navigation (new browser context, cold cache) → Mollweide map drawn and answering clicks and hover, `data-drawn` set by the first paint in the page HTML (median of {N_NAV}) | {med(results["first_paint"]):.2f} s | {base_txt} (Scattergeo Mollweide, float64 JSON lists, {results["baseline_bytes"] / 1e6:.1f} MB uncompressed) | ≤ 1.0 s |
| a click on that first paint as soon as it is drawn (while the page's scripts load) → the server's nearest molecule ringed and named on it (median of {len(fp)}; clicked {med(c["clicked"] for c in fp):.2f} s after navigation) | {med(c["answered"] - c["clicked"] for c in fp) * 1000:.0f} ms | — | ≤ 300 ms |
| that click → the first paint's molecule panel shows it: id and info (median; the load's longest task, which a click waits behind: {med(c["longest"] for c in fp):.2f} s) | {med(c["first_panel"] - c["clicked"] for c in fp) * 1000:.0f} ms | — | ≤ 300 ms |
| that click → its structure drawn there by 3Dmol.js (median) | {med(c["first_viewer"] - c["clicked"] for c in fp):.2f} s | — | — |
| that click → Dash's molecule panel shows it, having taken the first paint's over (scripts done at {med(c["scripts"] for c in fp):.2f} s; frames without the molecule on screen meanwhile: {sum(c["blank"] for c in fp)} of {sum(c["frames"] for c in fp)}) | {med(c["panel"] - c["clicked"] for c in fp):.2f} s | — | — |
| navigation (same loads) → the interactive plot drawn over it, `data-drawn` set again (median; mode {results["mode"]}); the whole page before the first paint | {med(results["map"]):.2f} s | — | — |
| of which: the page's scripts loaded and run (DOMContentLoaded, median) | {med(results["scripts"]):.2f} s | — | — |
| navigation (cold cache) → the first screen's density map drawn (median of {len(results["default"])}) | {med(results["default"]):.2f} s | — | — |
| zoom → visible region re-aggregated and drawn (median of {len(results["zooms"])}) | {med(z for z, _ in results["zooms"]) * 1000:.0f} ms | — | ≤ 400 ms |
| click on the map → 3D viewer shows the nearest molecule (median of {len(results["clicks"])}) | {(med(results["clicks"]) * 1000 if results["clicks"] else float("nan")):.0f} ms | {med(results["reload"]) * 1000:.0f} ms (reopen the page with `?molecule=`) | ≤ 300 ms |
| navigation → 3D sphere drawn, `data-drawn` set by the first paint in the page HTML (median of {len(results["sphere"])}) | {med(results["sphere_paint"]):.2f} s | — | ≤ 1.5 s |
| a click on a dot of that first paint as soon as it is drawn (while the page's scripts load) → its molecule ringed and named (median of {len(sc)}; clicked {med(c["clicked"] for c in sc):.2f} s after navigation) | {med(c["answered"] - c["clicked"] for c in sc) * 1000:.0f} ms | — | — |
| that click → Dash's molecule panel shows it | {med(c["panel"] - c["clicked"] for c in sc):.2f} s | — | — |
| navigation (same loads) → Dash's map box has taken the first paint's sphere over, its hook set (median) | {med(results["sphere"]):.2f} s | — | — |

Raw (s): first paint {", ".join(f"{v:.2f}" for v in results["first_paint"])}; interactive map {", ".join(f"{v:.2f}" for v in results["map"])}; first screen {", ".join(f"{v:.2f}" for v in results["default"])}; baseline {", ".join(f"{v:.2f}" for v in results["baseline_map"])};
zooms {", ".join(f"{v:.2f} ({m})" for v, m in results["zooms"])}; sphere first paint {", ".join(f"{v:.2f}" for v in results["sphere_paint"])}; sphere in Dash {", ".join(f"{v:.2f}" for v in results["sphere"])};
clicks {", ".join(f"{v:.3f}" for v in results["clicks"])}; reload {", ".join(f"{v:.2f}" for v in results["reload"])};
first-paint clicks (drawn / clicked / answered / first paint's panel / its structure / Dash's panel, s since navigation) {"; ".join(f"{c['drawn']:.2f} / {c['clicked']:.2f} / {c['answered']:.2f} / {c['first_panel']:.2f} / {c['first_viewer']:.2f} / {c['panel']:.2f}" for c in fp)};
first-paint clicks that arrived after Dash had replaced the first paint (left out above): {missed};
sphere first-paint clicks {"; ".join(f"{c['drawn']:.2f} / {c['clicked']:.2f} / {c['answered']:.2f} / {c['panel']:.2f}" for c in sc)}.
The page's HTML carries the server's image of the map under its outline and graticule (inline SVG) in place
of Dash's loading placeholder, so the map is on screen before any script runs, and a small inline script
(frontend_assets/first_paint.js) answers clicks (the server's nearest point within 5 px) and hover on it
from then on, showing the chosen molecule in the page's static molecule panel (Dash's panel rendered on the
server; its structure drawn by 3Dmol.js) and handing it to Dash, whose panel takes the drawn viewer over; its test hook is set once the
image is decoded and the frame with it painted (timed by a performance mark, since a navigation returns only
after the page's scripts have run). Dash then renders the page and the interactive plot over it; that row is
the path every page took before the first paint, so it is this run's before-figure for the map. The sphere
view's HTML likewise carries its 5,000-point sample as unit vectors, which map_sphere.js draws on a canvas
(far side faded) and Dash's page then takes over (the same canvas, moved: not drawn again).
Above `ORIENTSCOPE_MAP_POINT_BUDGET` (30,000 points in view by default) the page's layout request holds the server's
datashader image of the map (PNG) under vector overlays, so no callback runs before the map draws; a zoom
sends the visible region back and is timed until the new image or points of that region are on screen
(`data-drawn`; zoom figures before 2026-12-01, about 150 ms, timed dcc.Graph's echo of the old figure instead). A
click asks the server for the nearest shown point within 5 px and is timed until the first task after the
next frame, whose commit waits for the 3D viewer's WebGL draw. The page carries only the scripts the first
screen draws with (Dash, plotly.js, the dcc graph and dropdown chunks: about 6 MB to parse instead of 10 MB
with Dash's eager loading); 3Dmol.js loads once the map is drawn or a molecule is shown.
Machine: 1-min load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after; a fixed Python loop took
{cpu_before:.2f} s before and {cpu_reference_s():.2f} s after (0.65 s on a quiet moment of this shared 2-core machine,
up to 1.1 s on a busy one; the map's software-WebGL draw alone takes 0.8-1.9 s).
"""
    print(text)
    write_section(text)


if __name__ == "__main__":
    main()
