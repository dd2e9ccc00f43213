"""A statistic is its declaration and one registration: a toy statistic, registered here and nowhere else, is
computed by the statistics stage shard by shard and shows in ``orientscope report --json``, the CLI text, the
API's OpenAPI schema and summary (over real HTTP) and the dashboard's evidence table.

The toy: the share of full frames whose third axis lies within 30° of ±z. Forty waters lying in the xy plane
(their third PCA axis is the plane's normal) give exactly 1; their Haar-rotated control gives about
1 − cos 30° = 0.134 (binomial over 40: above 0.5 with probability below 1e-7).
"""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from orientscope.cli import app as cli
from orientscope.core.numbers import format_number
from orientscope.pipeline.precompute import make_params, precompute
from orientscope.science import statistics_registry
from orientscope.science.statistic import ReportField, Statistic
from orientscope.store.shards import save_sharded
from tests.api.conftest import ServerThread
from tests.molecules import waters

TOY_KEY = "toy_axis3_near_z"
TOY_LABEL = "toy: third axis within 30° of ±z"
COS_30 = np.cos(np.radians(30.0))


def near_z_partial(rotations: np.ndarray) -> dict:
    """One shard's counts: full frames, and those whose third axis (row 3 of R) is within 30° of ±z."""
    return {"n": len(rotations), "near": int((np.abs(rotations[:, 2, 2]) >= COS_30).sum())}


def near_z_merge(parts: list[dict]) -> dict:
    n, near = sum(p["n"] for p in parts), sum(p["near"] for p in parts)
    return {TOY_KEY: {"n": n, "near": near, "fraction": near / n if n else None}}


def near_z_rows(report: dict) -> list[tuple[str, str, str]]:
    mine, control = report.get(TOY_KEY) or {}, (report.get("control") or {}).get(TOY_KEY) or {}
    return [(TOY_LABEL, format_number(mine.get("fraction")), format_number(control.get("fraction")))] if mine else []


TOY = Statistic(
    key=TOY_KEY,
    title="share of frames whose third axis is within 30° of ±z",
    stage="statistics",
    inputs=("rotations",),
    per_shard=near_z_partial,
    merge=near_z_merge,
    fields=(ReportField(TOY_KEY, dict, "Toy: n, near and fraction of full frames with axis 3 within 30° of ±z."),),
    table="statistics",
    rows=near_z_rows,
)


@pytest.fixture(scope="module")
def toy_store(tmp_path_factory):
    """A data dir with 40 waters in the xy plane, in 3 shards, computed while the toy statistic is registered."""
    statistics_registry.register(TOY)
    try:
        data_dir = tmp_path_factory.mktemp("toy-statistic")
        save_sharded(data_dir, "flat", waters(40, 0), name="flat waters", source="constructed", shard_size=16)
        precompute(data_dir, "flat", make_params(seed=3), stages=["frames", "statistics"])
        yield data_dir
    finally:
        statistics_registry.unregister(TOY_KEY)


def run_cli(*args) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_toy_is_in_report_json_with_its_known_answer(toy_store):
    report = json.loads(run_cli("report", "flat", "--json", "--data-dir", str(toy_store)))
    assert report[TOY_KEY] == {"n": 40, "near": 40, "fraction": 1.0}
    control = report["control"][TOY_KEY]
    assert control["n"] == 40 and control["fraction"] < 0.5
    assert TOY_KEY not in report["verdict"].get("text", "")  # reported beside the verdict, not one of its tests


def test_the_toy_is_in_the_cli_text(toy_store):
    text = run_cli("report", "flat", "--data-dir", str(toy_store))
    (line,) = [line for line in text.splitlines() if TOY_LABEL in line]
    assert "1.000" in line


def test_the_toy_is_in_the_openapi_schema_and_the_summary_over_http(toy_store):
    from orientscope.server import create_app

    with ServerThread(create_app(toy_store, dashboard=False)) as server, httpx.Client(base_url=server.url) as http:
        schema = http.get("/api/openapi.json").json()["components"]["schemas"]["SummaryPublic"]
        summary = http.get("/api/datasets/flat/summary")
    assert TOY_KEY in schema["properties"]
    assert schema["properties"][TOY_KEY]["description"] == TOY.fields[0].description
    assert summary.status_code == 200 and summary.json()[TOY_KEY]["fraction"] == 1.0


def test_the_toy_is_in_the_dashboards_evidence_table(toy_store):
    from orientscope.app.verdict import verdict_children
    from orientscope.services.report import build_report

    report = build_report(toy_store, "flat")
    rows = [cells for cells in table_rows(verdict_children(report)) if cells and cells[0] == TOY_LABEL]
    assert rows == [[TOY_LABEL, "1.000", format_number(report["control"][TOY_KEY]["fraction"])]]


def table_rows(component) -> list[list[str]]:
    """The text of each table row (html.Tr) under ``component``, cell by cell."""
    if isinstance(component, (list, tuple)):
        return [row for c in component for row in table_rows(c)]
    children = getattr(component, "children", None)
    if type(component).__name__ == "Tr":
        return [[c.children for c in children]]
    return table_rows(children) if children is not None else []


def variant(**changes) -> Statistic:
    """A statistic like the toy, under another key, with ``changes``."""
    return Statistic(**{**TOY.__dict__, "key": "other", "fields": (ReportField("other", dict, ""),), **changes})


def test_register_refuses_a_taken_key_an_unknown_table_and_the_verdicts_family():
    before = statistics_registry.keys()
    with pytest.raises(ValueError, match="already written by 'kl'"):
        statistics_registry.register(variant(key="kl", fields=(ReportField("kl", dict, ""),)))
    with pytest.raises(ValueError, match="unknown table"):
        statistics_registry.register(variant(table="nowhere"))
    with pytest.raises(ValueError, match="verdict's family is fixed"):
        statistics_registry.register(variant(in_verdict=True))
    with pytest.raises(ValueError, match="unknown inputs"):
        variant(inputs=("positions",))
    assert statistics_registry.keys() == before
    with pytest.raises(ValueError, match="built in"):
        statistics_registry.unregister("kl")
