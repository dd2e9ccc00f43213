"""Map selection and the scatter view through the services on a stored dataset -> section `map-selection`.

Times, warm (after one untimed call), the page of a box and of a 200-vertex lasso selection and their
CSV, and the scatter view's points, aggregated image and image click; the first (cold) call of each is
reported apart. The machine's load average is recorded beside them.

Usage: python -m tests.bench.bench_selection DATA_DIR DATASET [SAMPLES]   (default 20 samples; the dataset
needs its frames stage and a property named by $ORIENTSCOPE_BENCH_PROPERTY, default zpve)
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from tests.bench.common import write_section

LASSO = "lasso:" + ",".join(
    f"{1.2 * np.cos(a):.4f},{0.6 * np.sin(a):.4f}" for a in np.linspace(0, 2 * np.pi, 200, endpoint=False)
)
SELECTIONS = {"box, a quarter of the sky": "box:-2.8284,0,0,1.4142", "lasso, 200 vertices": LASSO}


def _times(fn, samples: int) -> tuple[float, list[float]]:
    """(the first call's seconds, the next ``samples`` calls' seconds)."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    warm = []
    for _ in range(samples):
        t0 = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t0)
    return first, warm


def _row(name: str, first: float, warm: list[float], note: str = "") -> str:
    ms = [1000 * t for t in warm]
    p95 = float(np.percentile(ms, 95))
    return f"| {name} | {1000 * first:.0f} | {statistics.median(ms):.1f} | {p95:.1f} | {note} |"


def main(data_dir: Path | None = None, dataset: str = "qm9", samples: int = 20) -> None:
    if data_dir is None:  # make bench: full QM9 in bench_ui's store
        from tests.bench.bench_ui import ensure_store

        data_dir = ensure_store(Path(os.environ.get("ORIENTSCOPE_BENCH_DIR", "/tmp/os-bench-ui")))
    from orientscope.services.map_selection import selection_csv, selection_page
    from orientscope.services.map_view import MapQuery, view_points
    from orientscope.services.scatter import ScatterPick, ScatterQuery, nearest_molecule, scatter_image, scatter_points

    prop = os.environ.get("ORIENTSCOPE_BENCH_PROPERTY", "zpve")
    load_before = os.getloadavg()[0]
    query = MapQuery(dataset)
    view_points(data_dir, query)  # the map's view, resolved when the map is first drawn
    rows = []
    for name, sel in SELECTIONS.items():
        total = selection_page(data_dir, query, sel)["total"]
        rows.append(_row(f"selection page (20 rows): {name}", *_times(lambda s=sel: selection_page(data_dir, query, s),
                                                                      samples), f"{total:,} molecules"))  # fmt: skip
        size = len(selection_csv(data_dir, query, sel))
        rows.append(_row(f"selection CSV: {name}", *_times(lambda s=sel: selection_csv(data_dir, query, s),
                                                           max(3, samples // 4)), f"{size / 1e6:.1f} MB"))  # fmt: skip
    sq = ScatterQuery(dataset, prop, 1, "lat")
    first, warm = _times(lambda: scatter_points(data_dir, sq), samples)
    pts = scatter_points(data_dir, sq)
    rows.append(_row(f"scatter points: {prop} against axis 1's latitude", first, warm, f"{pts.x.size:,} molecules"))
    image = _times(lambda: scatter_image(pts), samples)
    rows.append(_row("scatter image, 900 × 500 (first: aggregation and compile; then cached)", *image))
    i = int(np.argmax(pts.y))
    click = ScatterPick(float(pts.x[i]), float(pts.y[i]), 0.2, float(np.ptp(pts.y)) / 500)
    rows.append(_row("scatter image click (nearest within 5 px)",
                     *_times(lambda: nearest_molecule(data_dir, sq, click), samples)))  # fmt: skip
    load_after = os.getloadavg()[0]
    table = "\n".join(rows)
    write_section(
        "map-selection",
        f"""## Map selection and the scatter view ({dataset}, services, in process)

`python -m tests.bench.bench_selection DATA_DIR {dataset}`: {samples} warm samples per row (CSV rows a quarter
of them); load average {load_before:.1f} before, {load_after:.1f} after (2 cores shared).

| what | first call (ms) | median (ms) | p95 (ms) | size |
|---|---|---|---|---|
{table}
""",
    )
    print(table)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 20)
