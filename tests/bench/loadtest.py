"""Load test: simulated lab users on the dashboard and the REST API (``make loadtest``).

Starts ``orientscope serve --read-only`` (optionally ``--workers N``) over a
precomputed full-QM9 store and drives it on loopback with N concurrent
simulated users (asyncio + httpx) for a fixed time. Each user loops over:

* a dashboard page load (``GET /``, ``/_dash-layout`` with the page's query (``X-OrientScope-Page``),
  as a browser sends it, so the layout holds that view's map; ``/_dash-dependencies``);
* map recolouring: the ``map-state → orientation-map`` Dash callback with a new
  colour, grouping, view or axis choice;
* a molecule click: the ``clickData → selected`` callback, then the
  ``selected → molecule panel``, ``selected → neighbours`` and ``selected → ring`` callbacks
  with the id it returned;
* REST reads: dataset list, summary, one molecule, a page of molecules, neighbours;

with a think time between actions (1-5 s; a second, "stress" run uses 0.2-1 s).
Users arrive as they do in a lab: each one's first action comes after one think
time, as if it were in the middle of a session. A separate run starts all users in
the same instant, the worst case of that arrival, and reports it on its own.
Callback payloads are built from
``GET /_dash-dependencies`` exactly as the browser does. Throughput, p50/p95/p99
latency and errors per request class go to BENCHMARKS.md (section ``loadtest``).

Run: ``python -m tests.bench.loadtest [--data-dir DIR] [--users 32] [--duration 60] [--workers 1]``
(the first run precomputes QM9 into DIR, default ``./data``).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

PAGE_QUERY_HEADER = "X-OrientScope-Page"  # app/compat.py: what a page sends with its layout request
USERS = 32
DURATION_S = 60.0
THINK_S = (1.0, 5.0)  # uniform pause between a user's actions: looking at the map, reading the panel
STRESS_THINK_S = (0.2, 1.0)  # impatient users: how the server degrades when saturated
BASELINE_S = 20.0
WARMUP_S = 20.0
SEED = 0
DATASET = "qm9"
TIMEOUT_S = 30.0
# Action mix per simulated user (weights).
ACTIONS = {"page": 1, "recolour": 3, "click": 3, "rest": 4}
TARGET_MS = {"callback": 200.0, "rest": 50.0}


# ------------------------------------------------------------ Dash payloads
def _parse_outputs(output: str) -> list[dict] | dict:
    """The ``outputs`` a browser sends for a dependency's ``output`` string ('a.b' or '..a.b...c.d..')."""

    def one(spec: str) -> dict:
        component, _, prop = spec.rpartition(".")
        return {"id": component, "property": prop.split("@")[0]}

    if output.startswith(".."):
        return [one(s) for s in output[2:-2].split("...")]
    return one(output)


def _find(deps: list[dict], inputs: set[str], output_part: str) -> dict:
    for dep in deps:
        ids = {f"{i['id']}.{i['property']}" for i in dep["inputs"] if isinstance(i["id"], str)}
        if inputs <= ids and output_part in dep["output"] and not dep.get("clientside_function"):
            return dep
    raise LookupError(f"no Dash callback with inputs {sorted(inputs)} and output {output_part!r}")


def callback_body(dep: dict, values: dict[str, object], changed: str) -> dict:
    """The JSON body of ``POST /_dash-update-component`` for ``dep`` with the given prop values."""

    def props(items):
        return [
            {"id": i["id"], "property": i["property"], "value": values.get(f"{i['id']}.{i['property']}")} for i in items
        ]

    return {
        "output": dep["output"],
        "outputs": _parse_outputs(dep["output"]),
        "inputs": props(dep["inputs"]),
        "state": props(dep.get("state", [])),
        "changedPropIds": [changed],
    }


@dataclass
class Scenario:
    """What the simulated users need: the Dash callbacks, molecule ids and map-state choices."""

    map_dep: dict
    click_dep: dict
    panel_dep: dict
    neighbours_dep: dict
    ring_dep: dict
    ids: list[str]
    colors: list[str]
    dataset: str = DATASET
    points_curve: int = 0

    def view_query(self, rng: random.Random) -> str:
        """The query string of a page a user opens: the default view, a shared colour or a molecule."""
        kind = rng.choice(["default", "default", "colour", "molecule"])
        if kind == "colour":
            return f"?dataset={self.dataset}&color={rng.choice(self.colors)}"
        if kind == "molecule":
            return f"?dataset={self.dataset}&molecule={rng.choice(self.ids[:50])}"
        return f"?dataset={self.dataset}"

    def map_state(self, rng: random.Random) -> dict:
        from orientscope.core.groups import GROUP_KINDS as GROUPINGS
        from orientscope.figures.state import ViewState

        axes = rng.choice(["123", "123", "1", "12", "3"])
        state = ViewState(
            dataset=self.dataset,
            color=rng.choice(self.colors),
            grouping=rng.choice(GROUPINGS),
            view=rng.choices(["map", "density", "sphere"], weights=[7, 2, 1])[0],
            axes=axes,
        )
        return state.map_state()


def build_scenario(base: str, ids: list[str], dataset: str = DATASET) -> Scenario:
    """Read the callback graph and the colour options from a running server."""
    from orientscope.figures.plots import POINTS_START

    with httpx.Client(base_url=base, timeout=120) as c:
        deps = c.get("/_dash-dependencies").raise_for_status().json()
        detail = c.get(f"/api/datasets/{dataset}/molecules/{ids[0]}").raise_for_status().json()
    props = [p["name"] for p in detail.get("properties", [])][:3]
    return Scenario(
        map_dep=_find(deps, {"map-state.data"}, "orientation-map.figure..."),
        click_dep=_find(deps, {"orientation-map.clickData"}, "selected.data"),
        panel_dep=_find(deps, {"selected.data", "map-state.data"}, "molecule-id.children"),
        neighbours_dep=_find(deps, {"selected.data", "map-state.data"}, "molecule-extra.children"),
        ring_dep=_find(deps, {"selected.data", "map-state.data"}, "selected-ring.data"),
        ids=ids,
        colors=["axis", "group", "score", *(f"prop:{p}" for p in props)],
        dataset=dataset,
        points_curve=POINTS_START,
    )


# ------------------------------------------------------------------ driving
@dataclass
class Recorder:
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    server_errors: int = 0
    examples: list[str] = field(default_factory=list)

    async def request(self, client: httpx.AsyncClient, name: str, method: str, url: str, **kw) -> bytes | None:
        """Time one request (body read in full, compressed as sent); the body if it succeeded."""
        t0 = time.perf_counter()
        body = None
        try:
            async with client.stream(method, url, **kw) as r:
                raw = b"".join([chunk async for chunk in r.aiter_raw()])
                ok = r.status_code in (200, 204)
                self.server_errors += r.status_code >= 500
                if ok:
                    body = gzip.decompress(raw) if r.headers.get("content-encoding") == "gzip" else raw
                elif len(self.examples) < 5:
                    self.examples.append(f"{name}: {r.status_code} {raw[:200]!r}")
        except httpx.HTTPError as err:
            ok = False
            if len(self.examples) < 5:
                self.examples.append(f"{name}: {type(err).__name__}: {err}")
        self.latencies_ms.setdefault(name, []).append(1000 * (time.perf_counter() - t0))
        self.errors[name] = self.errors.get(name, 0) + (not ok)
        return body


async def _user(
    client, rec: Recorder, sc: Scenario, rng: random.Random, deadline: float, think, together: bool
) -> None:
    state = sc.map_state(rng)
    if not together:
        await asyncio.sleep(rng.uniform(*think))
    while time.perf_counter() < deadline:
        action = rng.choices(list(ACTIONS), weights=list(ACTIONS.values()))[0]
        if action == "page":
            view = sc.view_query(rng)
            await rec.request(client, "page /", "GET", "/" + view)
            page = {PAGE_QUERY_HEADER: view}
            await rec.request(client, "page /_dash-layout", "GET", "/_dash-layout", headers=page)
            await rec.request(client, "page /_dash-dependencies", "GET", "/_dash-dependencies")
        elif action == "recolour":
            state = sc.map_state(rng)
            body = callback_body(sc.map_dep, {"map-state.data": state, "selected.data": None}, "map-state.data")
            await rec.request(client, "callback: map recolour", "POST", "/_dash-update-component", json=body)
        elif action == "click":
            click = {"points": [{"curveNumber": sc.points_curve, "pointNumber": rng.randrange(min(len(sc.ids), 1000))}]}
            values = {"orientation-map.clickData": click, "map-state.data": state}
            body = callback_body(sc.click_dep, values, "orientation-map.clickData")
            out = await rec.request(client, "callback: click", "POST", "/_dash-update-component", json=body)
            selected = rng.choice(sc.ids)
            if out:  # the id the click selected (204: the click missed a point)
                selected = json.loads(out).get("response", {}).get("selected", {}).get("data") or selected
            values = {"selected.data": selected, "map-state.data": state}
            # the browser fires both callbacks of the selection at once
            await asyncio.gather(
                rec.request(
                    client,
                    "callback: molecule panel",
                    "POST",
                    "/_dash-update-component",
                    json=callback_body(sc.panel_dep, values, "selected.data"),
                ),
                rec.request(
                    client,
                    "callback: neighbours",
                    "POST",
                    "/_dash-update-component",
                    json=callback_body(sc.neighbours_dep, values, "selected.data"),
                ),
                rec.request(
                    client,
                    "callback: selection ring",
                    "POST",
                    "/_dash-update-component",
                    json=callback_body(sc.ring_dep, values, "selected.data"),
                ),
            )
        else:
            mol = rng.choice(sc.ids)
            path, name = rng.choice(
                [
                    ("/api/datasets", "rest: datasets"),
                    (f"/api/datasets/{sc.dataset}/summary", "rest: summary"),
                    (f"/api/datasets/{sc.dataset}/molecules/{mol}", "rest: molecule"),
                    (
                        f"/api/datasets/{sc.dataset}/molecules?offset={rng.randrange(len(sc.ids))}&limit=50",
                        "rest: page",
                    ),
                    (f"/api/datasets/{sc.dataset}/neighbors/{mol}?k=10", "rest: neighbours"),
                ]
            )
            await rec.request(client, name, "GET", path)
        await asyncio.sleep(rng.uniform(*think))


async def drive(
    base: str, sc: Scenario, users: int, duration_s: float, think=THINK_S, seed: int = SEED, together: bool = False
) -> dict:
    """Run ``users`` simulated users for ``duration_s``; per-class statistics.

    ``together``: every user's first action at the same instant, instead of after one think time.
    """
    rec = Recorder()
    limits = httpx.Limits(max_connections=users, max_keepalive_connections=users)
    headers = {"Accept-Encoding": "gzip"}
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=TIMEOUT_S, headers=headers) as client:
        t0 = time.perf_counter()
        deadline = t0 + duration_s
        await asyncio.gather(
            *(_user(client, rec, sc, random.Random(seed * 1000 + k), deadline, think, together) for k in range(users))
        )
        elapsed = time.perf_counter() - t0
    classes = {}
    for name, lat in sorted(rec.latencies_ms.items()):
        ms = np.asarray(lat)
        classes[name] = {
            "n": int(ms.size),
            "rps": ms.size / elapsed,
            "p50": float(np.percentile(ms, 50)),
            "p95": float(np.percentile(ms, 95)),
            "p99": float(np.percentile(ms, 99)),
            "max": float(ms.max()),
            "errors": rec.errors.get(name, 0),
        }
    total = sum(c["n"] for c in classes.values())
    return {
        "classes": classes,
        "elapsed_s": elapsed,
        "requests": total,
        "rps": total / elapsed,
        "errors": sum(rec.errors.values()),
        "server_errors": rec.server_errors,
        "examples": rec.examples,
    }


# --------------------------------------------------------------- the bench
def _ensure_store(data_dir: Path) -> float:
    """Precompute QM9 into ``data_dir`` unless it is ready; seconds spent."""
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.services.datasets import READY, dataset_info
    from orientscope.store.datasets import has_dataset

    if has_dataset(data_dir, DATASET) and dataset_info(data_dir, DATASET).status == READY:
        return 0.0
    t0 = time.perf_counter()
    precompute(data_dir, DATASET, make_params())
    return time.perf_counter() - t0


def _molecule_ids(data_dir: Path) -> list[str]:
    from orientscope.store.datasets import read_molecule_columns

    return [str(x) for x in read_molecule_columns(data_dir, DATASET, ["id"])["id"]]


def _serve(data_dir: Path, port: int, workers: int) -> tuple[subprocess.Popen, float]:
    from tests.harness import exited, wait_until

    cmd = [sys.executable, "-m", "orientscope.cli", "serve", "--data-dir", str(data_dir), "--port", str(port),
           "--read-only", "--workers", str(workers)]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ready = lambda: httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).json().get("ready")  # noqa: E731
    wait_until(ready, timeout_s=300, what="the server to be ready", poll_s=0.1, give_up=exited(proc))
    return proc, time.perf_counter() - t0


def _table(result: dict) -> list[str]:
    lines = [
        "| request class | requests | req/s | p50 ms | p95 ms | p99 ms | max ms | errors | target p95 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, c in result["classes"].items():
        kind = "callback" if name.startswith("callback") else "rest" if name.startswith("rest") else None
        target = f"≤ {TARGET_MS[kind]:.0f} ms {'✓' if c['p95'] <= TARGET_MS[kind] else '✗'}" if kind else ""
        lines.append(
            f"| {name} | {c['n']:,} | {c['rps']:.1f} | {c['p50']:.0f} | {c['p95']:.0f} | {c['p99']:.0f} | "
            f"{c['max']:.0f} | {c['errors']} | {target} |"
        )
    return lines


EXERCISED = ("page /", "callback: map recolour", "callback: click", "callback: molecule panel")


def coverage_problems(result: dict) -> list[str]:
    """What a run failed to exercise: a request class never sent, no REST read, or a click that opened no panel."""
    classes = result["classes"]
    problems = [f"no {name!r} request" for name in EXERCISED if name not in classes]
    if not any(name.startswith("rest: ") for name in classes):
        problems.append("no REST read")
    clicks, panels = (classes.get(k, {}).get("n", 0) for k in ("callback: click", "callback: molecule panel"))
    if clicks != panels:
        problems.append(f"{clicks} clicks but {panels} molecule panels")
    return problems


def _worst_p95(result: dict, prefix: str) -> float:
    return max((c["p95"] for n, c in result["classes"].items() if n.startswith(prefix)), default=float("nan"))


def _think(text: str) -> tuple[float, float]:
    lo, _, hi = text.partition("-")
    return float(lo), float(hi or lo)


def main(argv: list[str] | None = None) -> None:
    from tests.bench.bench_api import wait_until_warm
    from tests.bench.common import write_section
    from tests.harness import free_port

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("ORIENTSCOPE_DATA_DIR", "data")))
    ap.add_argument("--users", type=int, default=USERS)
    ap.add_argument("--duration", type=float, default=DURATION_S)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--think", type=_think, default=THINK_S, help="think time range in seconds, e.g. 1-5")
    ap.add_argument("--stress", type=_think, default=STRESS_THINK_S, help="think time of the extra stress run")
    ap.add_argument("--no-stress", action="store_true", help="skip the stress run")
    ap.add_argument("--no-together", action="store_true", help="skip the run whose users all arrive at once")
    ap.add_argument("--no-write", action="store_true", help="print, do not update BENCHMARKS.md")
    args = ap.parse_args(argv)

    precompute_s = _ensure_store(args.data_dir)
    ids = _molecule_ids(args.data_dir)
    port = free_port()
    load_before = os.getloadavg()
    proc, start_s = _serve(args.data_dir, port, args.workers)
    # The server's own start-up warm-up (kernels, first paint, k-d tree) shares the cores with whatever runs
    # beside it: measured runs that overlap it are slower for a reason that is not their own.
    warming_s = start_s + wait_until_warm(port, time.perf_counter(), 600)
    base = f"http://127.0.0.1:{port}"
    main_name = f"{args.users} users, think {args.think[0]:g}-{args.think[1]:g} s"
    # (name, users, think, duration, all users' first action in the same instant)
    runs = [("baseline: 1 user, no think time", 1, (0.0, 0.0), BASELINE_S, False)]  # service time, no queueing
    runs.append((main_name, args.users, args.think, args.duration, False))
    if not args.no_stress:
        runs.append((f"stress: {args.users} users, think {args.stress[0]:g}-{args.stress[1]:g} s", args.users,
                     args.stress, args.duration, False))  # fmt: skip
    if not args.no_together:
        runs.append((f"{main_name}, all arriving in the same instant", args.users, args.think, args.duration, True))
    results = {}
    try:
        sc = build_scenario(base, ids)
        t0 = time.perf_counter()  # warm-up: fill every worker's caches (not reported)
        asyncio.run(drive(base, sc, users=2 * args.workers, duration_s=WARMUP_S, think=(0.0, 0.0), seed=99))
        warm_s = time.perf_counter() - t0
        for name, users, think, duration, together in runs:
            results[name] = asyncio.run(drive(base, sc, users, duration, think=think, together=together))
            print(f"\n{name}: {results[name]['requests']} requests, {results[name]['errors']} errors", flush=True)
            print("\n".join(_table(results[name])), flush=True)
        import psutil

        server = psutil.Process(proc.pid)
        rss_mb = sum(p.memory_info().rss for p in [server, *server.children(recursive=True)]) / 2**20
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    load_after = os.getloadavg()
    if args.no_write:
        return
    main_run = results[runs[1][0]]
    lines = [
        f"## loadtest: {args.users} simulated lab users for {args.duration:.0f} s on full QM9 ({len(ids):,} molecules)",
        "",
        f"`python -m tests.bench.loadtest --users {args.users} --duration {args.duration:.0f} --workers {args.workers}`"
        f" (`make loadtest`): `orientscope serve --read-only --workers {args.workers}` on loopback, driven by "
        "asyncio/httpx users on the same machine. Each user loops over a page load (`/`, `/_dash-layout` with the "
        "page's query so that it holds that view's map, as a browser asks for it, and `/_dash-dependencies`; "
        "the pages are the default view, a shared colour or a shared molecule), map recolouring (the "
        "`map-state → orientation-map` callback with a new colour, grouping, view or axes), a molecule click "
        "(`clickData → selected`, then the molecule panel, neighbours and selection ring callbacks for the id it "
        f"returned, at once) and REST reads, with weights {ACTIONS} and a think time between actions. Users arrive "
        "as in a lab: each one's first action comes after one think time, as if in the middle of a session. The "
        "last run is the worst case of arrival: all users send their first action in the same instant, and that burst "
        "sets most of that run's tail. Callback payloads are "
        "built from `/_dash-dependencies` as the browser builds them; responses are gzip-compressed as a browser "
        "asks; latency is to the last byte. The baseline is one user alone on the same server.",
        "",
        f"**{runs[1][0]}: {main_run['requests']:,} requests ({main_run['rps']:.1f} req/s), "
        f"{main_run['errors']} errors, {main_run['server_errors']} 5xx. Worst p95: callbacks "
        f"{_worst_p95(main_run, 'callback'):.0f} ms (target ≤ 200), REST reads {_worst_p95(main_run, 'rest'):.0f} ms "
        "(target ≤ 50).**",
    ]
    burst = next((results[r[0]] for r in runs if r[4]), None)
    if burst is not None:
        lines += [
            "",
            f"**The same users all arriving in the same instant: {burst['errors']} errors. Worst p95: callbacks "
            f"{_worst_p95(burst, 'callback'):.0f} ms, REST reads {_worst_p95(burst, 'rest'):.0f} ms.**",
        ]
    for name, result in results.items():
        lines += ["", f"### {name} ({result['elapsed_s']:.0f} s)", "", *_table(result)]
        if result["examples"]:
            lines.append(f"\nFirst errors: {'; '.join(result['examples'])}")
        problems = coverage_problems(result)
        lines.append(
            f"\nCoverage: {'; '.join(problems) if problems else 'every request class sent, every click opened its molecule panel'}."
        )
    lines += [
        "",
        f"- Server start (spawn → `/api/health` ready): {start_s:.1f} s; its start-up warm-up over after "
        f"{warming_s:.1f} s, before any load; warm-up ({2 * args.workers} users, "
        f"{WARMUP_S:.0f} s, not reported) took {warm_s:.1f} s; server RSS after the runs: {rss_mb:.0f} MB.",
        f"- Machine: 2 cores shared with other engineers' jobs; 1-min load average {load_before[0]:.1f} before and "
        f"{load_after[0]:.1f} after, and the load generator itself runs on the same cores.",
    ]
    if precompute_s:
        lines.append(f"- Precomputing the store for this run took {precompute_s:.0f} s (not included above).")
    write_section("loadtest", "\n".join(lines))


if __name__ == "__main__":
    main()
