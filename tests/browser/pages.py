"""The dashboard's page in headless Chromium, as the browser tests drive it: open it, wait for it, read it.

Shared by the browser tests (they import it; no test module imports another one).
"""

from __future__ import annotations

import numpy as np
from selenium.webdriver.common.by import By

from orientscope.figures.plots import MAP_SCALE
from tests.browser.chrome import first_paint_pixels, map_drawn
from tests.harness import wait_until

TIMEOUT_S = 40
BUDGET = 300  # the store's map has 1,200 points: the whole map is an image, a small region is points


def wait_for(fn, timeout=TIMEOUT_S, what="condition"):
    """:func:`tests.harness.wait_until` with the page tests' deadline and a quicker poll."""
    return wait_until(fn, timeout_s=timeout, what=what, poll_s=0.15)


# The drawing on screen: map_draw.js's stage in the plane views (map, density), map_sphere.js's canvas on the sphere,
# the plotly graph in the scatter view.
MAP_ELEMENT = (
    "'#orientation-map .map-plane .map-stage, #orientation-map canvas.sphere-canvas,"
    " #orientation-graph-box:not([hidden]) .js-plotly-plot'"
)
# Points a drawing shows, from the renderer's paint (map units, y up, as the figures' traces were), per layer.
PAINT_POINTS_JS = """
const h = document.getElementById('orientation-map')._mapHandle, p = h && h.paint();
const dec = s => { if (Array.isArray(s)) return s; const b = atob(s.bdata), u = new Uint8Array(b.length);
  for (let i = 0; i < b.length; i++) u[i] = b.charCodeAt(i); return Array.from(new Int16Array(u.buffer)); };
const layers = (p && p.layers) || [];
"""
# After two painted frames (a plot or a draw already under way has run), the map's place on the page,
# or null while a Dash callback is pending (dash-renderer shows ._dash-loading-callback exactly then)
# or a component is loading.
SETTLED_JS = (
    """
const done = arguments[arguments.length - 1];
requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => {
  const MAP_ELEMENT = """
    + MAP_ELEMENT
    + """;
  if (document.querySelector('[data-dash-is-loading="true"], ._dash-loading-callback')) return done(null);
  const gd = document.querySelector(MAP_ELEMENT);
  done(gd ? JSON.stringify(gd.getBoundingClientRect()) + document.body.scrollHeight : null);
})));
"""
)


def settle(driver):
    """Wait until no callback is pending and the map stops moving (content above it can shift it).

    The barrier before checking that something did not happen: what a click or a load sets off reaches
    Dash as a pending callback or as a frame to draw.
    """
    last = {"v": None}

    def stable():
        now = driver.execute_async_script(SETTLED_JS)
        same = now is not None and now == last["v"]
        last["v"] = now
        return same

    wait_for(stable, what="the page to settle")


def open_page(driver, url):
    driver.get(url)
    wait_for(lambda: map_drawn(driver), what="the orientation map")
    wait_for(lambda: text_of(driver, "verdict"), what="the verdict")
    settle(driver)


def text_of(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def viewer_molecule(driver, element_id="molecule-viewer"):
    return driver.execute_script(f"return document.getElementById('{element_id}').dataset.molecule || null")


def isolated_point_pixel(driver):
    """Map units and on-screen offset (from the plot centre) of a map point far from every other point."""
    return driver.execute_script(
        PAINT_POINTS_JS
        + """
        const stage = document.querySelector('#orientation-map .map-stage'), svg = stage.querySelector('svg');
        const vb = svg.viewBox.baseVal, r = stage.getBoundingClientRect();
        const xs = [], ys = [];
        for (const l of layers) { if (l.kind !== 'points') continue; const x = dec(l.x), y = dec(l.y);
          for (let i = 0; i < x.length; i++) { xs.push(x[i]); ys.push(-y[i]); } }
        const px = xs.map(v => (v - vb.x) / vb.width * r.width), py = ys.map(v => (-v - vb.y) / vb.height * r.height);
        let best = -1, bestD = 0;
        for (let i = 0; i < Math.min(px.length, 400); i++) {
          let d = Infinity;
          for (let j = 0; j < px.length; j++) { if (j !== i) d = Math.min(d, Math.hypot(px[i]-px[j], py[i]-py[j])); }
          if (d > bestD) { bestD = d; best = i; }
        }
        return {x: xs[best], y: ys[best], dx: px[best] - r.width / 2, dy: py[best] - r.height / 2, gap: bestD};
        """
    )


def choose(driver, dropdown_id, label):
    driver.find_element(By.ID, dropdown_id).click()
    option = wait_for(
        lambda: [
            e for e in driver.find_elements(By.XPATH, f"//*[normalize-space(text())='{label}']") if e.is_displayed()
        ],
        what=f"option {label}",
    )[0]
    option.click()


# Pixel (relative to the drawing's centre, as ActionChains offsets are) of map units (y up).
# WebDriver's offsets are from the element's centre rounded down to a whole pixel (the W3C in-view centre point): a
# drawing of fractional size is off by up to a pixel otherwise, which is many of a deep zoom's map units.
TO_PIXEL_JS = """
const stage = document.querySelector('#orientation-map .map-stage'), svg = stage.querySelector('svg');
const vb = svg.viewBox.baseVal, r = stage.getBoundingClientRect();
const cx = Math.floor(r.left + r.width / 2), cy = Math.floor(r.top + r.height / 2);
return arguments[0].map(p => [r.left + (p[0] - vb.x) / vb.width * r.width - cx,
                              r.top + (-p[1] - vb.y) / vb.height * r.height - cy]);
"""


def open_map(driver, url):
    """Load the dashboard at ``url``, wait for the map, and return its drawing (centred in view): map_draw.js's stage
    in the plane views, map_sphere.js's canvas on the sphere, the plotly graph in the scatter view."""
    driver.get(url)
    wait_for(lambda: map_drawn(driver), what="the map's test hook")
    settle(driver)
    graph = driver.find_element(By.CSS_SELECTOR, MAP_ELEMENT.strip("'"))
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", graph)
    return graph


TIP_JS = """
const t = document.querySelector('#orientation-map .map-tooltip');
return t && !t.hidden && t.textContent ? {text: t.textContent, molecule: t.dataset.molecule, shared: t.dataset.shared}
                                       : null;
"""


FIRST_PAINT = "#orientation-map[data-first-paint]"
FIRST_PAINT_JS = "const m = document.querySelector(arguments[0]); return m ? m.dataset[arguments[1]] || null : null"
PANEL_JS = "const e = document.querySelector('[data-first-paint] #' + arguments[0]); return e && e.textContent"


def map_pixels(driver, md, rows) -> np.ndarray:
    """(len(rows), 3, 2) offsets of each molecule's three axis points on the static map (SVG y is down)."""
    pts = [[float(md.x[r, a]) * MAP_SCALE, -float(md.y[r, a]) * MAP_SCALE] for r in rows for a in range(3)]
    return first_paint_pixels(driver, pts).reshape(len(rows), 3, 2)


def static_map(driver, url):
    driver.get(url)
    wait_for(lambda: map_drawn(driver, first_paint=True), what="the first paint's test hook")
    assert driver.execute_script("return typeof window.Plotly + typeof window.DashRenderer") == "undefinedundefined"
    return driver.find_element(By.CSS_SELECTOR, FIRST_PAINT + " svg")


# Installed before the page's scripts: Dash is held back until the test releases it (window.__release), either
# before its renderer starts (it then asks for its layout after the click) or with its layout's answer held (it
# asked before the click). From the frame the first paint's viewer has drawn a molecule on, every frame counts
# whether no molecule panel shows that molecule with its structure (window.__blank).
HOLD_JS = """
const held = new Promise(resolve => { window.__release = resolve; });
if (HOLD === 'renderer') {
  let real;
  Object.defineProperty(window, 'DashRenderer', {configurable: true, set(v) { real = v; },
    get() { return real && function () { held.then(() => new real()); }; }});
} else {
  const plainFetch = window.fetch;
  window.fetch = function (url) {
    const answer = plainFetch.apply(this, arguments);
    return /_dash-layout/.test(String(url)) ? answer.then(r => held.then(() => r)) : answer;
  };
}
window.__blank = 0; window.__frames = 0;
(function frame() {
  const v = document.getElementById('molecule-viewer'), id = document.getElementById('molecule-id');
  if (window.__frames || (v && v.dataset.molecule)) {
    window.__frames += 1;
    const shown = v && v.dataset.molecule && v.querySelector('canvas') && id && id.textContent === v.dataset.molecule;
    if (!shown) { window.__blank += 1; }
  }
  requestAnimationFrame(frame);
})();
"""
