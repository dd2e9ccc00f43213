"""GET /api/health, the OpenAPI document, the docs page and unknown /api paths."""

from orientscope import __version__


def test_health(client):
    r = client.get("/api/health")
    assert r.status_code == 200
    body = r.json()
    assert {k: body[k] for k in ("status", "version", "read_only", "ready")} == {
        "status": "ok",
        "version": __version__,
        "read_only": False,
        "ready": True,
    }
    # qm9 and toy have results, pending has none; no job was ever submitted here.
    assert body["datasets"] == {"ready": 3, "computing": 1, "failed": 0, "needs_migration": 0}
    assert body["jobs"] == {"queued": 0, "running": 0, "done": 0, "failed": 0}


def test_openapi_describes_every_model_and_field(client):
    r = client.get("/api/openapi.json")
    assert r.status_code == 200
    spec = r.json()
    paths = set(spec["paths"])
    for p in [
        "/api/health",
        "/api/datasets",
        "/api/datasets/{dataset_id}/summary",
        "/api/datasets/{dataset_id}/molecules",
        "/api/datasets/{dataset_id}/molecules/{mol_id}",
        "/api/datasets/{dataset_id}/orientations",
        "/api/datasets/{dataset_id}/groups",
        "/api/datasets/{dataset_id}/neighbors/{mol_id}",
        "/api/canonicalize",
    ]:
        assert p in paths
    undocumented = []
    for name, schema in spec["components"]["schemas"].items():
        if name in ("HTTPValidationError", "ValidationError") or name.startswith("ValidationError"):
            continue
        if not schema.get("description"):
            undocumented.append(name)
        for field, prop in schema.get("properties", {}).items():
            if not prop.get("description"):
                undocumented.append(f"{name}.{field}")
    assert undocumented == []
    # The documented caps appear in the parameter schemas.
    params = {p["name"]: p for p in spec["paths"]["/api/datasets/{dataset_id}/molecules"]["get"]["parameters"]}
    assert params["limit"]["schema"]["maximum"] == 1000


def test_docs_page(client):
    r = client.get("/api/docs")
    assert r.status_code == 200
    assert "/api/openapi.json" in r.text


def test_unknown_api_path_is_404_json(client):
    r = client.get("/api/nothing/here")
    assert r.status_code == 404
    assert "/api/nothing/here" in r.json()["detail"]
    assert client.post("/api/datasets/qm9/nothing").status_code == 404


def test_large_json_is_gzipped(client):
    r = client.get("/api/datasets/qm9/orientations", headers={"Accept-Encoding": "gzip"})
    assert r.status_code == 200
    assert r.headers["content-encoding"] == "gzip"
    assert len(r.json()) == 400  # httpx decompresses transparently
