"""Each trick of ``app/compat.py`` measured on its own, with and without, on full-QM9-sized data.

``python -m tests.bench.bench_compat`` prints the median of 3 runs of each; the figures are
quoted next to the tricks. A trick that gains less than 10 % is removed. Synthetic points
(seeded) of the full-QM9 size stand in for the stored map: the tricks' cost depends on the
number of points and the JSON size, not on where the points lie.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import numpy as np

N_MOLECULES = 130_831  # full QM9
RUNS = 3


def median_ms(fn, inner: int = 1) -> float:
    runs = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        runs.append((time.perf_counter() - t0) / inner)
    return statistics.median(runs) * 1000


def map_spec() -> dict:
    """The map figure of full QM9 coloured by axis, as the map callback builds it."""
    from orientscope.core.palette import OKABE_ITO
    from orientscope.figures.plots import ColorSpec, orientation_map_spec
    from orientscope.services.map_data import frame_lines

    rng = np.random.default_rng(0)
    n = 3 * N_MOLECULES
    x = rng.uniform(-2.8, 2.8, n).astype(np.float32)
    y = rng.uniform(-1.4, 1.4, n).astype(np.float32)
    color = ColorSpec("categorical", rng.integers(0, 3, n).astype(np.uint8), ["1", "2", "3"], OKABE_ITO[:3])
    return orientation_map_spec(x, y, color, frame=frame_lines(), title="QM9", n_molecules=N_MOLECULES)


def answer_encoding(spec: dict) -> str:
    from plotly.io.json import to_json_plotly

    from orientscope.app.compat import answer_json
    from orientscope.figures.plots import typed_arrays

    answer = {"multi": True, "response": {"orientation-map": {"figure": typed_arrays(spec)}}}
    ours, plotly = median_ms(lambda: answer_json(answer), 3), median_ms(lambda: to_json_plotly(answer), 3)
    mb = len(answer_json(answer)) / 1e6, len(to_json_plotly(answer)) / 1e6
    return f"answer encoding: {ours:.1f} ms ({mb[0]:.2f} MB) vs plotly's {plotly:.1f} ms ({mb[1]:.2f} MB)"


def figure_validation(spec: dict) -> str:
    import plotly.graph_objects as go

    import orientscope.figures.plots as figures
    from orientscope.figures.compat import unvalidated_figure
    from orientscope.services.map_data import density_grids, frame_lines

    rng = np.random.default_rng(1)
    xy = rng.uniform(-2.8, 2.8, 3 * N_MOLECULES), rng.uniform(-1.4, 1.4, 3 * N_MOLECULES)
    (grid,), zmax = density_grids([xy])  # 144 x 72 cells, as many points

    def density(validated: bool):
        if validated:
            figures.unvalidated_figure = lambda data=None, layout=None, **kw: go.Figure(data, layout=layout, **kw)
        try:
            return figures.density_map_figure(
                grid.x_centers, grid.y_centers, grid.ratio, frame=frame_lines(), zmax=zmax
            )
        finally:
            figures.unvalidated_figure = unvalidated_figure

    dens = median_ms(lambda: density(False), 5), median_ms(lambda: density(True), 5)
    full = median_ms(lambda: unvalidated_figure(**spec)), median_ms(lambda: go.Figure(**spec))
    return (
        f"density figure: {dens[0]:.1f} ms vs validated {dens[1]:.1f} ms; "
        f"map figure: {full[0]:.1f} ms vs validated {full[1]:.1f} ms"
    )


def dispatch(spec: dict) -> str:
    """A REST read sent while 4 map callbacks are answered: Dash's own route vs worker threads."""
    import httpx
    from dash import Input, Output
    from fastapi import FastAPI

    from orientscope.app.compat import dispatch_in_threads, install_answer_encoder
    from orientscope.figures.plots import typed_arrays
    from tests.api.conftest import ServerThread
    from tests.app.echo_app import echo_app, echo_request

    def server(threads: bool) -> FastAPI:
        app = FastAPI()

        @app.get("/ping")
        async def ping():
            return {"ok": True}

        dash_app = echo_app(app)

        @dash_app.callback(Output("o", "children"), Input("i", "value"))
        def draw(_value):
            return typed_arrays(spec)

        if threads:
            dispatch_in_threads(app)
        return app

    async def ping_ms(url: str) -> float:
        async with httpx.AsyncClient(base_url=url, timeout=60) as c:
            waits = []
            for _ in range(10):
                body = echo_request("a")
                calls = [asyncio.create_task(c.post("/_dash-update-component", json=body)) for _ in range(4)]
                await asyncio.sleep(0.01)
                t0 = time.perf_counter()
                (await c.get("/ping")).raise_for_status()
                waits.append((time.perf_counter() - t0) * 1000)
                await asyncio.gather(*calls)
            return statistics.median(waits)

    restore = install_answer_encoder()
    try:
        result = {}
        for threads in (True, False):
            runs = []
            for _ in range(RUNS):
                with ServerThread(server(threads)) as srv:
                    runs.append(asyncio.run(ping_ms(srv.url)))
            result[threads] = statistics.median(runs)
    finally:
        restore()
    return f"REST read during 4 map callbacks: {result[True]:.0f} ms in threads vs {result[False]:.0f} ms on the loop"


def layout_walk() -> str:
    from orientscope.app.dashboard import build_layout, components_of

    layout = build_layout(False)
    ours = median_ms(lambda: components_of(layout), 200)
    private = median_ms(lambda: list(layout._traverse()), 200)
    return f"layout walk: public children {ours:.3f} ms vs Dash's private walk {private:.3f} ms"


def main() -> None:
    spec = map_spec()
    for line in (answer_encoding(spec), figure_validation(spec), dispatch(spec), layout_walk()):
        print(line)


if __name__ == "__main__":
    main()
