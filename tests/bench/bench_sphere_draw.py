"""The 3D sphere's renderer (frontend_assets/map_sphere.js) in headless Chromium: the JS time of one frame while the
sphere turns, at the point budget's sample (5,000 points) and at 30,000, for a categorical, a continuous and a
SMARTS-highlight colouring.

Points are uniform on the sphere (a seeded draw); the page holds the renderer alone (no Dash, no plotly.js), and
each frame is a drag step of 3 px. ``drawMs`` is the renderer's own measure of its draw (projection, depth sort,
every dot composited into its pixels); the frame interval is requestAnimationFrame's, which also holds the canvas's raster.

Run: ``python -m tests.bench.bench_sphere_draw`` (writes its BENCHMARKS.md section).
"""

from __future__ import annotations

import http.server
import json
import os
import statistics
import tempfile
import threading
from pathlib import Path

import numpy as np

from orientscope.core.palette import CIVIDIS, HIGHLIGHT, OKABE_ITO, OTHER_GREY
from orientscope.core.resources import frontend_asset
from tests.bench.common import write_section
from tests.browser.chrome import make_driver, quit_driver

SIZES = (5_000, 30_000)
FRAMES = 60
# turns the sphere FRAMES times by 3 px, one drag step per animation frame; answers the frames' draw times and
# intervals in ms
TURN_JS = """
const frames = arguments[0], done = arguments[arguments.length - 1], host = document.getElementById('host');
const c = host._sphere.canvas;
const r = c.getBoundingClientRect(), x0 = r.left + r.width / 2, y0 = r.top + r.height / 2;
const ev = (type, x) => c.dispatchEvent(new PointerEvent(type, {clientX: x, clientY: y0, button: 0, buttons: 1,
                                                                   pointerId: 1, bubbles: true}));
ev('pointerdown', x0);
const draws = [], gaps = [];
let i = 0, last = performance.now();
function step() {
  const now = performance.now();
  if (i > 0) { draws.push(host._sphere.camera().drawMs); gaps.push(now - last); }
  last = now;
  if (i++ === frames) { ev('pointerup', x0 + 3 * i); return done([draws, gaps]); }
  ev('pointermove', x0 + 10 + 3 * i);
  requestAnimationFrame(step);
}
requestAnimationFrame(step);
"""


def paint_of(n: int, kind: str, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    colors = {
        "categorical": {"kind": "categorical", "code": rng.integers(0, 6, n).tolist(), "palette": OKABE_ITO[:6],
                        "labels": [f"group {i}" for i in range(6)]},
        "continuous": {"kind": "continuous", "values": rng.random(n).round(3).tolist(), "scale": list(CIVIDIS),
                       "missing": OTHER_GREY, "title": "u0", "ticks": [[0, "low"], [0.5, "mid"], [1, "high"]]},
        "highlight": {"kind": "highlight", "code": (rng.random(n) < 0.1).astype(int).tolist(),
                      "palette": [OTHER_GREY, HIGHLIGHT], "labels": ["no match", "match"]},
    }  # fmt: skip
    sphere = {"vectors": v.round(3).reshape(-1).tolist(), "ids": [str(i) for i in range(n)],
              "keys": list(range(n)), "color": colors[kind], "size": 3.0, "outline": None,
              "fade": {"back": 0.35, "muted": 0.25}, "reference": [], "ring": []}  # fmt: skip
    return {"view": "sphere", "title": f"{n:,} points", "settings": {"view": "sphere", "dataset": None},
            "sphere": sphere}  # fmt: skip


def page(folder: Path) -> None:
    script = frontend_asset("map_sphere.js").read_text(encoding="utf-8")
    html = (
        "<!doctype html><html><body><div id='host' style='width:460px;position:relative'></div>"
        f"<script>{script}</script></body></html>"
    )
    (folder / "index.html").write_text(html, encoding="utf-8")


def serve_folder(folder: Path):
    handler = type("Quiet", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *a: None})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: handler(*a, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        page(Path(tmp))
        server = serve_folder(Path(tmp))
        driver = make_driver()
        try:
            driver.set_script_timeout(120)
            for n in SIZES:
                for kind in ("categorical", "continuous", "highlight"):
                    driver.get(f"http://127.0.0.1:{server.server_port}/index.html")
                    driver.execute_script(
                        "window.orientscopeMap.drawRegistry.sphere(document.getElementById('host'), arguments[0], {})",
                        paint_of(n, kind),
                    )
                    draws, gaps = driver.execute_async_script(TURN_JS, FRAMES)
                    rows.append((n, kind, statistics.median(draws), max(draws), statistics.median(gaps)))
                    print(
                        json.dumps({"n": n, "kind": kind, "draw_median_ms": rows[-1][2], "gap_median_ms": rows[-1][4]})
                    )
        finally:
            quit_driver(driver)
            server.shutdown()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    table = "\n".join(
        f"| {n:,} | {kind} | {med:.1f} ms | {worst:.1f} ms | {gap:.1f} ms |" for n, kind, med, worst, gap in rows
    )
    write_section(
        "sphere-draw",
        f"""## sphere-draw: the 3D sphere's canvas renderer while it turns (headless Chromium, software canvas)

{FRAMES} frames of a drag, uniform points. Draw: `map_sphere.js`'s own time for a frame (projection, depth sort,
every dot); interval: between animation frames (the draw plus the canvas's raster). Load average {load}.

| points | colouring | draw (median) | draw (worst) | frame interval (median) |
|---|---|---|---|---|
{table}
""",
    )


if __name__ == "__main__":
    main()
