"""POST /api/canonicalize: known answers, equivariance over HTTP and every malformed body."""

import numpy as np
import pytest

from orientscope.core.elements import z_to_symbols
from orientscope.science.frames import frame_of_molecule
from orientscope.science.rotations import random_rotations
from orientscope.store.datasets import load_dataset
from tests.molecules import CO2, WATER, asymmetric


def _post(client, **body):
    return client.post("/api/canonicalize", json=body)


def test_water_known_answer(client):
    z, pos = WATER
    r = _post(client, elements=z_to_symbols(z), positions=pos.tolist())
    assert r.status_code == 200
    body = r.json()
    frames, canonical = frame_of_molecule(z, pos)
    np.testing.assert_allclose(body["rotation"], frames.rotations[0], atol=1e-12)
    np.testing.assert_allclose(body["canonical_positions"], canonical, atol=1e-12)
    # Water lies in the yz plane: the third axis is ±x and the canonical z coordinates vanish.
    assert abs(abs(body["rotation"][2][0]) - 1) < 1e-9
    np.testing.assert_allclose(np.array(body["canonical_positions"])[:, 2], 0, atol=1e-12)
    assert body["n_atoms"] == 3 and body["method"] == "pca" and body["sign_rule"] == "max"


def test_xyz_text_gives_the_same_answer(client):
    z, pos = asymmetric(seed=3)
    xyz = f"{len(z)}\ncomment\n" + "\n".join(
        f"{s} {float(x)!r} {float(y)!r} {float(w)!r}" for s, (x, y, w) in zip(z_to_symbols(z), pos, strict=True)
    )
    a = _post(client, xyz=xyz).json()
    b = _post(client, elements=z_to_symbols(z), positions=pos.tolist()).json()
    assert a == b


def test_atomic_numbers_are_accepted(client):
    z, pos = WATER
    assert (
        _post(client, elements=list(z), positions=pos.tolist()).json()
        == _post(client, elements=z_to_symbols(z), positions=pos.tolist()).json()
    )


def test_degenerate_molecule_is_flagged(client):
    z, pos = CO2
    body = _post(client, elements=z_to_symbols(z), positions=pos.tolist()).json()
    assert body["degenerate"] is True and "linear" in body["degenerate_reason"]


@pytest.mark.parametrize(("method", "mass_weighted", "used"), [("inertia", None, "inertia"), ("pca", True, "pca-mass")])
def test_methods(client, method, mass_weighted, used):
    z, pos = asymmetric(seed=1)
    body = _post(
        client, elements=[int(x) for x in z], positions=pos.tolist(), method=method, mass_weighted=mass_weighted
    ).json()
    assert body["method"] == used
    frames, _ = frame_of_molecule(z, pos, method=used)
    np.testing.assert_allclose(body["rotation"], frames.rotations[0], atol=1e-12)


def test_equivariance_over_http(client, api_data):
    """A molecule and a randomly rotated copy have the same canonical positions (unless degenerate)."""
    mols = load_dataset(api_data, "qm9")
    rows = np.arange(0, mols.n_molecules, 20)
    Q = random_rotations(len(rows), seed=2026)
    checked = 0
    for row, q in zip(rows, Q, strict=True):
        z, pos = mols.atoms_of(int(row))
        shifted = pos @ q.T + np.array([3.0, -1.0, 2.0])
        a = _post(client, elements=z_to_symbols(z), positions=pos.tolist()).json()
        b = _post(client, elements=z_to_symbols(z), positions=shifted.tolist()).json()
        assert a["degenerate"] == b["degenerate"]
        if a["degenerate"]:
            continue
        np.testing.assert_allclose(b["canonical_positions"], a["canonical_positions"], atol=1e-6)
        np.testing.assert_allclose(b["rotation"], np.array(a["rotation"]) @ q.T, atol=1e-6)
        checked += 1
    assert checked >= 15


BAD_BODIES = [
    ({"elements": [], "positions": []}, ["body", "elements"], "at least one atom"),
    ({"elements": ["O", "H"], "positions": [[0, 0, 0]]}, ["body", "positions"], "2 elements but 1 positions"),
    (
        {"elements": ["O", "Qq"], "positions": [[0, 0, 0], [1, 0, 0]]},
        ["body", "elements", 1],
        "unknown element symbol 'Qq'",
    ),
    ({"elements": [0], "positions": [[0, 0, 0]]}, ["body", "elements", 0], "atomic number 0"),
    ({"elements": ["O"], "positions": [[0, 0]]}, ["body", "positions", 0], "expected 3 coordinates"),
    ({"elements": ["O"]}, ["body", "positions"], "positions is required"),
    ({"xyz": "3\n\nO 0 0 0\nH 1 0 0\n", "elements": ["O"]}, ["body", "xyz"], "not both"),
    ({"xyz": "three\n\nO 0 0 0"}, ["body", "xyz"], "line 1"),
    ({"xyz": "3\n\nO 0 0 0\nH 1 0 0\n"}, ["body", "xyz"], "2 of the 3 atom lines"),
    ({"xyz": "1\n\nO 0 zero 0\n"}, ["body", "xyz"], "line 3"),
    ({"xyz": "0\n\n"}, ["body", "xyz"], "positive atom count"),
    ({"elements": ["O"], "positions": [[0, 0, 0]], "method": "svd"}, ["body", "method"], ""),
    ({"elements": ["O"], "positions": [[0, 0, 0]], "sign_rule": "min"}, ["body", "sign_rule"], ""),
    (
        {"elements": ["O"], "positions": [[0, 0, 0]], "method": "inertia", "mass_weighted": False},
        ["body", "mass_weighted"],
        "",
    ),
    ({"elements": ["O"], "positions": [[0, 0, 0]], "colour": "red"}, ["body", "colour"], ""),
    ({"elements": ["O"], "positions": [["a", 0, 0]]}, ["body", "positions", 0, 0], ""),
]


@pytest.mark.parametrize(("body", "loc", "message"), BAD_BODIES)
def test_malformed_bodies_are_422_naming_the_field(client, body, loc, message):
    r = _post(client, **body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"][0]
    assert detail["loc"] == loc
    assert message in detail["msg"]


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_coordinates_are_422(client, value):
    raw = '{"elements": ["O", "H"], "positions": [[0, 0, 0], [1, ' + value + ", 0]]}"
    r = client.post("/api/canonicalize", content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "positions", 1, 1]
    assert "finite" in r.json()["detail"][0]["msg"]


def test_too_many_atoms_is_422(client):
    n = 2001
    r = _post(client, elements=["C"] * n, positions=np.arange(3 * n, dtype=float).reshape(n, 3).tolist())
    assert r.status_code == 422
    assert "at most 2000 atoms" in r.json()["detail"][0]["msg"]


@pytest.mark.parametrize("raw", ["{", "[]", "null", '"text"', "\x00\xff"])
def test_unparseable_json_is_422(client, raw):
    r = client.post("/api/canonicalize", content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 422


def test_a_large_body_of_the_wrong_kind_is_not_repeated_in_the_422(client):
    """A 1 MB file posted as multipart (the upload route's shape) to this JSON route: FastAPI once echoed it whole."""
    payload = b"id,prediction\n" + b"".join(b"m%d,0.5\n" % i for i in range(100_000))
    r = client.post("/api/canonicalize", files={"file": ("p.csv", payload)})
    assert r.status_code == 422 and len(r.content) < 2_000, len(r.content)
    echoed = r.json()["detail"][0]["input"]
    assert echoed.startswith("--") and "characters)" in echoed and len(echoed) < 300  # its start, and its length
    # short wrong values are still repeated whole
    r = client.post("/api/canonicalize", json={"elements": ["O"], "positions": [[0, 0, 0]], "method": "pca-x"})
    assert r.status_code == 422 and r.json()["detail"][0]["input"] == "pca-x"
