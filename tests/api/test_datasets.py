"""GET /api/datasets, /api/datasets/{id} and /api/datasets/{id}/summary."""

import json

from typer.testing import CliRunner

from orientscope.cli import app as cli
from orientscope.services.report import build_report


def test_list_datasets(client):
    r = client.get("/api/datasets")
    assert r.status_code == 200
    by_id = {d["id"]: d for d in r.json()}
    assert sorted(by_id) == ["nochem", "pending", "qm9", "toy"]
    assert by_id["qm9"]["status"] == "ready"
    assert by_id["qm9"]["n_molecules"] == 400
    assert by_id["qm9"]["name"] == "QM9"
    assert "frames" in by_id["qm9"]["stages"]
    assert by_id["pending"]["status"] == "computing"
    assert "no computed results" in by_id["pending"]["message"]


def test_get_dataset(client):
    r = client.get("/api/datasets/toy")
    assert r.status_code == 200
    assert r.json()["n_molecules"] == 8
    assert r.json()["status"] == "ready"


def test_unknown_dataset_is_404_naming_it(client):
    for path in ["/api/datasets/nosuch", "/api/datasets/nosuch/summary", "/api/datasets/nosuch/molecules"]:
        r = client.get(path)
        assert r.status_code == 404, path
        assert "'nosuch'" in r.json()["detail"]
    r = client.get("/api/datasets/Bad%20Id/summary")
    assert r.status_code == 404
    assert "'Bad Id'" in r.json()["detail"]


def test_summary_is_exactly_the_cli_report(client, api_data):
    r = client.get("/api/datasets/qm9/summary")
    assert r.status_code == 200
    assert r.json() == json.loads(json.dumps(build_report(api_data, "qm9")))
    out = CliRunner().invoke(cli, ["report", "qm9", "--json", "--data-dir", str(api_data)])
    assert out.exit_code == 0, out.output
    cli_report = json.loads(out.stdout.strip().splitlines()[-1])
    assert r.json() == cli_report
    assert r.json()["n_molecules"] == 400
    assert "kl" in r.json() and "verdict" in r.json()


def test_summary_serves_the_verdict_badge_and_the_rule_that_made_it(client):
    from orientscope.science.verdict import RULE_VERSION

    verdict = client.get("/api/datasets/qm9/summary").json()["verdict"]
    # the 400-molecule QM9 subset in its stored poses: KL's interval lies above its bar
    assert (verdict["badge"], verdict["effect"], verdict["rule_version"]) == (
        "Aligned — strong effect",
        "strong",
        RULE_VERSION,
    )
    assert all({"ci95", "rejects", "p_holm"} <= set(e) for e in verdict["evidence"])
    kl = next(e for e in verdict["evidence"] if e["test"] == "KL")
    assert kl["rejects"] and kl["size"]["reading"] == "strong" and kl["size"]["ci95"][0] >= kl["size"]["bar"]
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]
    assert {"badge", "effect", "rule_version"} <= set(schema["VerdictPublic"]["properties"])
    assert {"ci95", "rejects", "size"} <= set(schema["EvidencePublic"]["properties"])


def test_summary_of_dataset_without_results_is_404(client):
    r = client.get("/api/datasets/pending/summary")
    assert r.status_code == 404
    assert "'pending'" in r.json()["detail"]


def test_summary_is_matched_beside_its_resource_before_the_other_routers(client):
    # A request is matched route by route, in the order the OpenAPI document lists them: the summary, a hot
    # read, sits right after the datasets routes (mounted after every router it took 17 matches a request
    # instead of 3), and still answers.
    paths = list(client.get("/api/openapi.json").json()["paths"])
    summary = paths.index("/api/datasets/{dataset_id}/summary")
    assert paths[summary - 1] == "/api/datasets/{dataset_id}"
    assert summary < min(i for i, p in enumerate(paths) if p.startswith("/api/datasets/{dataset_id}/molecules"))
    assert client.get("/api/datasets/qm9/summary").status_code == 200
