"""The map of a 10M-molecule store in headless Chromium -> section `map-10m-browser` of BENCHMARKS.md.

`orientscope serve --read-only` on the store (tests/browser/server.py, the same composition root), a
warmed server (one navigation first), then a new browser context (cold cache) per navigation, as
bench_ui times full QM9 (whose page this run also times, as its baseline):

- the page of the just-started server (GET /): its first paint built from the stored map arrays;
- navigation -> the first paint in the page HTML drawn (`data-drawn` set on #orientation-map);
- a click on that first paint as soon as it is drawn -> the nearest molecule ringed and named, then
  shown by Dash's molecule panel;
- navigation -> the interactive plot drawn over it (the before-figure), zoom or pan -> the visible
  region re-aggregated and drawn, click -> the molecule panel shows the nearest molecule;
- the SMARTS highlight: the search job of a pattern (POST /api/datasets/{id}/smarts, about 20-25 min
  at 10M molecules), then navigation with ``?smarts=`` -> the highlighted map drawn, and zooms on it.
  The job's result is kept in the server's export area: ``$ORIENTSCOPE_BENCH_SMARTS_DIR`` (default
  ``$TMPDIR/orientscope-bench-smarts``, outside the read-only store), so a later run re-draws it at once.

Run through ``python -m tests.bench.bench_map browser DATA_DIR DATASET`` (on any store: develop on a
1M-molecule synth, the section names its size).
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

from tests.bench.bench_ui import (
    cold_navigations,
    cpu_reference_s,
    time_clicks,
    time_dashboard_map,
    time_first_paint_click,
    time_zooms,
)
from tests.bench.common import write_section
from tests.browser.chrome import make_driver, map_drawn, quit_driver, serve, severe_console
from tests.harness import wait_job, wait_until

N_NAV = 5
N_FIRST_PAINT_CLICKS = 3
WARM_TIMEOUT_S = 1800.0  # a first server start on a 10M store writes its memory-mapped columns (7-9 min)
SMARTS = "C=O"
SMARTS_DIR_ENV = "ORIENTSCOPE_BENCH_SMARTS_DIR"
SMARTS_JOB_TIMEOUT_S = 3 * 3600.0
BASELINE_ENV = "ORIENTSCOPE_BENCH_BASELINE"  # DATA_DIR:DATASET of the same-run baseline, default full QM9


def _regions() -> list[tuple[float, float, float, float]]:
    """Zoomed regions (map units): three wide, one a pan, one small enough for points."""
    from orientscope.figures.plots import MAP_SCALE as s

    return [(-1.2 * s, 0.3 * s, -0.5 * s, 0.3 * s), (0.2 * s, 0.8 * s, 0.1 * s, 0.4 * s),
            (0.3 * s, 0.9 * s, 0.1 * s, 0.4 * s), (-0.5 * s, 2.5 * s, -1.2 * s, 0.2 * s),
            (-2.0 * s, -1.98 * s, -0.05 * s, -0.04 * s)]  # fmt: skip


def _http(url: str, body: dict | None = None, timeout: float = WARM_TIMEOUT_S) -> tuple[float, bytes]:
    """(seconds, response body) of a GET, or of a POST of ``body`` as JSON."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=timeout) as r:
        out = r.read()
    return time.perf_counter() - t0, out


def run_search(base: str, dataset_id: str, smarts: str) -> dict:
    """Start the SMARTS search job (or find its kept result) and wait for it: its state and duration."""
    _, raw = _http(f"{base}/api/datasets/{dataset_id}/smarts", {"smarts": smarts})
    job = json.loads(raw)
    out = {"kept": job["state"] == "done"}
    record = wait_job(base, f"/api/jobs/{job['job_id']}", timeout_s=SMARTS_JOB_TIMEOUT_S, poll_s=5.0)
    if record["state"] != "done":
        raise RuntimeError(f"the SMARTS search job failed: {record.get('message')}")
    out["seconds"] = record["finished"] - record["created"]  # queued to done, whenever it ran
    out["n_matches"] = (record.get("result") or {}).get("n_matches")
    return out


def measure_smarts(base: str, dataset_id: str, smarts: str) -> dict:
    """The SMARTS highlight: its search job, then navigations with it (the first re-draws the kept result)."""
    out = {"job": run_search(base, dataset_id, smarts)}
    url = f"{base}/?dataset={dataset_id}&view=map&smarts={quote(smarts)}"
    seconds, page = _http(url)  # the first page with it: the kept result read and drawn into the first paint
    out["page"] = seconds
    out["highlighted"] = b"data-first-paint" in page and f"match {smarts}".encode() in page
    out |= cold_navigations(url, N_NAV)
    driver = make_driver()
    try:
        time_dashboard_map(driver, url)
        out["zooms"] = time_zooms(driver, _regions())
    finally:
        quit_driver(driver)
    return out


def measure(data_dir: Path, dataset_id: str, zooms: bool = True, smarts: str | None = None) -> dict:
    """Warm the server once, then navigation (cold contexts), first-paint clicks, zoom and click timings of one
    dataset's map, and with ``smarts`` its highlighted map."""
    from orientscope.services.map_data import load_map_data

    md = load_map_data(data_dir, dataset_id)  # click targets: positions of every 9973rd molecule's first axis
    url = f"/?dataset={dataset_id}&view=map"
    results: dict = {"n_molecules": md.n_molecules}
    smarts_dir = os.environ.get(SMARTS_DIR_ENV) or str(Path(tempfile.gettempdir()) / "orientscope-bench-smarts")
    env = {"ORIENTSCOPE_EXPORT_DIR": smarts_dir} if smarts else None
    t0 = time.perf_counter()
    with serve(data_dir, read_only=True, timeout_s=WARM_TIMEOUT_S, env=env, warm=True) as base:
        results["warm_server"] = time.perf_counter() - t0  # as `orientscope serve`: kernels compiled, views loaded
        seconds, page = _http(base + url)  # its first page: the first paint built for the first time
        results["cold_page"] = (seconds, b"data-first-paint" in page)
        driver = make_driver()
        try:
            t0 = time.perf_counter()
            driver.get(base + url)  # the warm-up navigation (the browser's first visit fills the layout caches)
            wait_until(lambda: map_drawn(driver), timeout_s=WARM_TIMEOUT_S, what="the warm-up's map", poll_s=0.5)
            results["warm"] = time.perf_counter() - t0
            results |= cold_navigations(base + url, N_NAV)
            results["fp_click"] = [time_first_paint_click(base + url, md) for _ in range(N_FIRST_PAINT_CLICKS)]
            quit_driver(driver)
            driver = make_driver()
            time_dashboard_map(driver, base + url)
            results["zooms"] = time_zooms(driver, _regions()) if zooms else []
            quit_driver(driver)
            driver = make_driver()
            time_dashboard_map(driver, base + url)
            results["choosers"] = []  # clicks on a pixel that several molecules share (issue 29)
            results["clicks"] = time_clicks(driver, md, results["choosers"])
            results["console"] = severe_console(driver)
        finally:
            quit_driver(driver)
        if smarts:
            results["smarts"] = measure_smarts(base, dataset_id, smarts)
    return results


def _med(values) -> float:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def _fp_clicks(results: dict) -> dict:
    """Medians of the first-paint clicks that landed on it (answered, panel after the click; clicked after navigation)."""
    fp = [c for c in results["fp_click"] if not c["missed"]]
    return {
        "n": len(fp),
        "missed": len(results["fp_click"]) - len(fp),
        "answered": _med(c["answered"] - c["clicked"] for c in fp),
        "first_panel": _med(c["first_panel"] - c["clicked"] for c in fp),
        "first_viewer": _med(c["first_viewer"] - c["clicked"] for c in fp),
        "panel": _med(c["panel"] - c["clicked"] for c in fp),
        "clicked": _med(c["clicked"] for c in fp),
    }


def _raw(values, fmt: str = "{:.2f}") -> str:
    return ", ".join("–" if v is None else fmt.format(v) for v in values) or "–"


def main_browser(data_dir: Path, dataset_id: str) -> None:
    load_before, cpu_before = os.getloadavg()[0], cpu_reference_s()
    smarts = os.environ.get("ORIENTSCOPE_BENCH_SMARTS", SMARTS)
    big = measure(data_dir, dataset_id, smarts=smarts or None)
    base_dir, _, base_id = os.environ.get(BASELINE_ENV, "/work/qmdata:qm9").partition(":")
    small = measure(Path(base_dir), base_id, zooms=False) if Path(base_dir).is_dir() else None
    n = big["n_molecules"]
    bc, sc = _fp_clicks(big), _fp_clicks(small) if small else None

    def ms(value: float) -> str:
        return f"{value * 1000:.0f} ms" if value == value else "–"

    def s(value: float) -> str:
        return f"{value:.2f} s" if value == value else "–"

    def row(fn) -> str:
        return fn(small) if small else "–"

    zooms = [z for z, m in big["zooms"] if m == "image"]
    text = f"""## The map of {n:,} molecules in the browser (headless Chromium, software WebGL)

`python -m tests.bench.bench_map browser {data_dir} {dataset_id}`: `serve --read-only` on the store,
{3 * n:,} map points; a new browser context (cold cache) per navigation, after the server's start-up warm-up
({big["warm_server"]:.0f} s, as `orientscope serve`: the map kernels compiled, the dataset's view loaded) and one warm-up
navigation ({big["warm"]:.0f} s). Baseline in the same run: the same page on
{f"{small['n_molecules']:,} molecules ({base_dir}, {base_id})" if small else "none"}. 2 shared CPU cores: 1-min
load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after; a fixed Python loop took {cpu_before:.2f} s
before and {cpu_reference_s():.2f} s after (0.65 s on a quiet moment of this machine).

| measure | {n:,} molecules | baseline (same run) | target (issue 16) |
|---|---|---|---|
| the warmed server's first page (GET /: its first paint built for the first time, from the stored map arrays; carried: {big["cold_page"][1]}) | {s(big["cold_page"][0])} | {row(lambda r: s(r["cold_page"][0]))} | — |
| navigation → map drawn and answering clicks and hover, `data-drawn` set by the first paint in the page HTML (median of {N_NAV}) | {s(_med(big["first_paint"]))} | {row(lambda r: s(_med(r["first_paint"])))} | ≤ 1.5 s |
| a click on that first paint as soon as it is drawn (while the page's scripts load) → the server's nearest molecule ringed and named (median of {bc["n"]}; clicked {s(bc["clicked"])} after navigation) | {ms(bc["answered"])} | {row(lambda _: ms(sc["answered"]))} | ≤ 300 ms |
| that click → the first paint's molecule panel shows it: id and info (median) | {ms(bc["first_panel"])} | {row(lambda _: ms(sc["first_panel"]))} | ≤ 300 ms |
| that click → its structure drawn there by 3Dmol.js (median) | {s(bc["first_viewer"])} | {row(lambda _: s(sc["first_viewer"]))} | — |
| that click → Dash's molecule panel shows it, having taken the first paint's over | {s(bc["panel"])} | {row(lambda _: s(sc["panel"]))} | — |
| navigation (same loads) → the interactive plot drawn over it, `data-drawn` set again (median; mode {big["mode"]}): the before-figure | {s(_med(big["map"]))} | {row(lambda r: s(_med(r["map"])))} | — |
| of which: the page's scripts loaded and run (DOMContentLoaded, median) | {s(_med(big["scripts"]))} | {row(lambda r: s(_med(r["scripts"])))} | — |
| zoom or pan → re-aggregated image drawn (median of {len(zooms)}) | {ms(_med(zooms))} | – | ≤ 400 ms |
| click on the interactive map → molecule panel shows the nearest molecule (median of {len(big["clicks"])}) | {ms(_med(big["clicks"]))} | {row(lambda r: ms(_med(r["clicks"])))} | ≤ 300 ms |
| a click on a pixel that several molecules share → the chooser of its molecules on screen (median of {len(big["choosers"])}) | {ms(_med(c for c, _ in big["choosers"]))} | {row(lambda r: ms(_med(c for c, _ in r["choosers"])))} | ≤ 300 ms |
| then a press on the chooser's first row → that molecule's panel (median) | {ms(_med(p for _, p in big["choosers"]))} | {row(lambda r: ms(_med(p for _, p in r["choosers"])))} | — |
{_smarts_rows(big.get("smarts"), smarts, ms, s)}
Raw (s): first paint {_raw(big["first_paint"])}; interactive map {_raw(big["map"])}; zooms
{", ".join(f"{v:.2f} ({m})" for v, m in big["zooms"])}; clicks {_raw(big["clicks"], "{:.3f}")}; chooser, then its row
{"; ".join(f"{c:.3f} / {_raw([p], '{:.3f}')}" for c, p in big["choosers"]) or "–"}; first-paint clicks
(drawn / clicked / answered / first paint's panel / its structure / Dash's panel, s since navigation) {_fp_raw(big)}; baseline first paint
{_raw(small["first_paint"]) if small else "–"}, interactive map {_raw(small["map"]) if small else "–"}, first-paint clicks
{_fp_raw(small) if small else "–"}. First-paint clicks that arrived after Dash had replaced the first paint (left out
above): {bc["missed"]}{f" (baseline {sc['missed']})" if sc else ""}. Console errors: {len(big["console"])}.
"""
    print(text)
    write_section("map-10m-browser", text)


def _fp_raw(results: dict) -> str:
    return "; ".join(
        f"{c['drawn']:.2f} / {c['clicked']:.2f} / {c['answered']:.2f} / {c['first_panel']:.2f} / {c['first_viewer']:.2f}"
        f" / {c['panel']:.2f}"
        for c in results["fp_click"]
        if not c["missed"]
    )


def _smarts_rows(found: dict | None, smarts: str, ms, s) -> str:
    """The table's SMARTS rows and their raw figures ("" when no pattern was searched)."""
    if not found:
        return ""
    job = found["job"]
    how = "kept from an earlier run" if job["kept"] else "run now"
    zooms = [z for z, m in found["zooms"] if m == "image"]
    return f"""| SMARTS {smarts}: its search job (POST …/smarts, queued → done; {how}; {job.get("n_matches") or 0:,} matches) | {job["seconds"] / 60:.1f} min | – | an engine job with progress |
| the first page with `?smarts={smarts}` after the job (GET /: its kept result read and drawn into the first paint; highlighted: {found["highlighted"]}) | {s(found["page"])} | – | — |
| navigation with `?smarts={smarts}` → the highlighted map drawn by the first paint, `data-drawn` set (median of {len(found["first_paint"])}) | {s(_med(found["first_paint"]))} | – | ≤ 1.5 s |
| navigation with `?smarts={smarts}` → the interactive highlighted plot drawn (median of {len(found["map"])}) | {s(_med(found["map"]))} | – | — |
| zoom or pan on the highlighted map → re-aggregated image with its matches drawn (median of {len(zooms)}) | {ms(_med(zooms))} | – | ≤ 400 ms |

SMARTS raw (s): first paint {_raw(found["first_paint"])}; interactive {_raw(found["map"])}; zooms
{", ".join(f"{v:.2f} ({m})" for v, m in found["zooms"])}.
"""


def main() -> None:
    """make bench: the shared large store of bench_api_large (``ORIENTSCOPE_BENCH_LARGE_DATA`` / ``_ID``)."""
    from tests.bench.bench_api_large import _large_store

    main_browser(*_large_store())
