"""The one read view answers the same whether its columns were stored by the pipeline or built on first open.

Two copies of one small sharded dataset are served over real HTTP: one as ingested (its memory-mapped
columns and map written by the pipeline), one with them removed, as a store written before the pipeline
wrote them holds it (the server writes them on first open). Single rows are also checked against the
result's Parquet tables read directly.
"""

from __future__ import annotations

import io
import shutil

import httpx
import numpy as np
import pandas as pd
import pytest

from orientscope.core.orientations_schema import C_COLUMNS, EV_COLUMNS, LONLAT_COLUMNS, Q_COLUMNS, R_COLUMNS
from orientscope.pipeline.precompute import make_params
from orientscope.pipeline.sharded_ingest import ingest_files
from orientscope.pipeline.synth import SynthSpec, write_synth
from orientscope.services import cache
from orientscope.services.results import open_result
from orientscope.store import datasets as ds
from orientscope.store.results import ResultStore
from tests.api.conftest import ServerThread

N = 2400
SHARD = 1000


@pytest.fixture(scope="module")
def stores(tmp_path_factory, qm9_small):
    """(loaded data dir, column data dir, dataset id): the same sharded dataset twice."""
    root = tmp_path_factory.mktemp("large")
    write_synth(root / "npz", SynthSpec(n=N, bias="qm9", seed=5, shard_size=SHARD), source=qm9_small)
    meta = ingest_files(root / "loaded", [root / "npz"], "big", cluster="in-process", shard_size=SHARD)
    shutil.copytree(root / "loaded", root / "columns")
    # The chemistry stage wrote per-shard packed fingerprints, which the view scans.
    result = ResultStore(root / "columns", meta["id"], make_params()).dir
    assert len(list((result / "chemistry").glob("fingerprints-*.npy"))) == 3
    without_read_arrays(root / "loaded", meta["id"])
    return root / "loaded", root / "columns", meta["id"]


def without_read_arrays(data_dir, dataset_id):
    """Remove the result's stored columns and map, as a store written before the pipeline wrote them holds it."""
    result = ResultStore(data_dir, dataset_id, make_params()).dir
    assert (result / "columns" / "columns.json").is_file() and (result / "map").is_dir()
    shutil.rmtree(result / "columns")
    shutil.rmtree(result / "map")


class StoredTables:
    """The oracle: a result's per-molecule arrays read straight from its Parquet tables (no columns, no view)."""

    def __init__(self, data_dir, dataset_id):
        store = open_result(data_dir, dataset_id)
        self.mols = ds.load_dataset(data_dir, dataset_id)
        frames = store.table("frames", "original").to_pandas()
        self.ids = frames["id"].to_numpy(str)
        self.rows = np.array([self.mols.index_of(m) for m in self.ids])
        self.rotations = frames[R_COLUMNS].to_numpy(np.float64).reshape(-1, 3, 3)
        self.quaternions = frames[Q_COLUMNS].to_numpy(np.float64)
        self.eigenvalues = frames[EV_COLUMNS].to_numpy(np.float64)
        self.centroids = frames[C_COLUMNS].to_numpy(np.float64)
        self.degenerate = frames["degenerate"].to_numpy(bool)
        self.reasons = frames["reason"].to_numpy(str)
        self.lonlat = frames[LONLAT_COLUMNS].to_numpy(np.float64).reshape(-1, 3, 2)
        self.n_atoms = self.mols.n_atoms[self.rows]
        self.smiles = self.mols.smiles[self.rows]
        self.property_values = self.mols.properties.to_numpy(np.float64)[self.rows]
        self.charges = np.array([self.mols.charge_of(r) for r in self.rows])
        if store.completed("models"):
            scores = store.table("models", "scores").to_pandas().drop_duplicates("id").set_index("id")
            self.scores = scores["classifier_score"].reindex(self.ids).to_numpy(np.float64)
        else:
            self.scores = np.full(len(self.ids), np.nan)

    def atoms(self, i):
        return self.mols.atoms_of(int(self.rows[i]))

    def cell(self, name, i):
        return getattr(self, name)[i]

    def cells(self, name, rows):
        return getattr(self, name)[rows]

    def span(self, name, a, b):
        return getattr(self, name)[a:b]


@pytest.fixture(scope="module")
def clients(stores, tmp_path_factory):
    """(loaded client, column client); each copy's view is built under its own threshold."""
    from orientscope.server import create_app

    loaded_dir, columns_dir, dataset_id = stores
    mp = pytest.MonkeyPatch()
    mp.setenv("ORIENTSCOPE_COLUMNS_DIR", str(tmp_path_factory.mktemp("columns-cache")))
    # One copy's columns memory-mapped and read with pread (as a large set's), the other's read into memory.
    mp.setenv("ORIENTSCOPE_VIEW_CACHE_MB", "2")  # a quarter of it is less than the 2,400 molecules' columns
    assert not cache.get_view(columns_dir, dataset_id).resident
    mp.delenv("ORIENTSCOPE_VIEW_CACHE_MB")
    assert cache.get_view(loaded_dir, dataset_id).resident
    with (
        ServerThread(create_app(loaded_dir, dashboard=False)) as a,
        ServerThread(create_app(columns_dir, dashboard=False)) as b,
        httpx.Client(base_url=a.url, timeout=60) as ca,
        httpx.Client(base_url=b.url, timeout=60) as cb,
    ):
        yield ca, cb
    mp.undo()
    cache.clear_cache()


def both(clients, url: str, **params) -> tuple[httpx.Response, httpx.Response]:
    ra, rb = (c.get(url, params=params) for c in clients)
    assert ra.status_code == rb.status_code
    return ra, rb


@pytest.mark.parametrize("row", [0, SHARD - 1, SHARD, 2 * SHARD + 7, N - 1])
def test_molecule_from_any_shard(clients, stores, row):
    ids = clients[0].get("/api/datasets/big/molecules", params={"offset": row, "limit": 1}).json()["items"]
    ra, rb = both(clients, f"/api/datasets/big/molecules/{ids[0]['id']}")
    assert ra.status_code == 200
    assert rb.json() == ra.json()
    assert len(rb.json()["positions"]) == rb.json()["n_atoms"]


def test_unknown_molecule_is_404(clients):
    ra, rb = both(clients, "/api/datasets/big/molecules/no-such-molecule")
    assert rb.status_code == 404 and "no-such-molecule" in rb.json()["detail"]


@pytest.mark.parametrize("sort", ["index", "-n_atoms", "id", "formula", "-classifier_score", "mu", "degenerate"])
def test_pages_across_shard_boundaries_and_sorting(clients, sort):
    ra, rb = both(clients, "/api/datasets/big/molecules", offset=SHARD - 30, limit=60, sort=sort)
    assert ra.status_code == 200
    assert rb.json() == ra.json()
    assert rb.json()["total"] == N and len(rb.json()["items"]) == 60


def test_bad_sort_key_is_400_not_500(clients):
    ra, rb = both(clients, "/api/datasets/big/molecules", sort="nope")
    assert rb.status_code in (400, 422) and "nope" in rb.text


@pytest.mark.parametrize("fmt", ["json", "csv", "parquet"])
def test_orientations_export_streams_the_same_table(clients, fmt):
    ra, rb = both(clients, "/api/datasets/big/orientations", format=fmt)
    assert ra.status_code == 200
    if fmt == "parquet":
        a, b = pd.read_parquet(io.BytesIO(ra.content)), pd.read_parquet(io.BytesIO(rb.content))
        pd.testing.assert_frame_equal(a, b)
        # every molecule with a full frame has a score; the copies of methane (no orientation) have none
        scored = b["classifier_score"].notna()
        assert len(b) == N and 0 < (~scored).sum() < N // 100
    else:
        assert rb.content == ra.content


def test_pose_neighbours_equal_the_loaded_answers(clients):
    rng = np.random.default_rng(0)
    for row in rng.choice(N, 5, replace=False):
        mol_id = clients[0].get("/api/datasets/big/molecules", params={"offset": int(row), "limit": 1}).json()
        ra, rb = both(clients, f"/api/datasets/big/neighbors/{mol_id['items'][0]['id']}", by="pose", k=12)
        assert ra.status_code == 200
        assert rb.json() == ra.json()
        angles = [item["angle_deg"] for item in rb.json()["items"]]
        assert len(angles) == 12 and angles == sorted(angles)


def test_chemistry_neighbours_scan_the_shards_fingerprints(clients):
    rng = np.random.default_rng(1)
    for row in [0, SHARD - 1, SHARD, N - 1, *rng.choice(N, 3, replace=False)]:
        mol_id = clients[0].get("/api/datasets/big/molecules", params={"offset": int(row), "limit": 1}).json()
        ra, rb = both(clients, f"/api/datasets/big/neighbors/{mol_id['items'][0]['id']}", by="chemistry", k=15)
        assert ra.status_code == 200
        assert rb.json() == ra.json()
        sims = [item["tanimoto"] for item in rb.json()["items"]]
        # at most k, none sharing no bit (Tanimoto 0), most similar first
        assert 0 < len(sims) <= 15 and min(sims) > 0 and sims == sorted(sims, reverse=True)


@pytest.mark.parametrize("fmt,pose", [("xyz", "stored"), ("xyz", "canonical"), ("sdf", "canonical")])
def test_molecule_files_equal_the_loaded_ones(clients, fmt, pose):
    for row in (0, SHARD, N - 1):
        mol = clients[0].get("/api/datasets/big/molecules", params={"offset": row, "limit": 1}).json()["items"][0]
        ra, rb = both(clients, f"/api/datasets/big/molecules/{mol['id']}", format=fmt, pose=pose)
        assert ra.status_code == 200
        assert rb.text == ra.text and mol["id"] in rb.text


def test_every_molecule_read_by_rows_equals_the_loaded_view(clients, stores):
    """The view reads single rows (cell, cells, atoms, row_of), with pread from memory-mapped columns or from
    columns read into memory: every molecule, every array, as the result's Parquet tables hold it, whether its
    columns were stored at ingest or built on first open."""
    loaded_dir, columns_dir, dataset_id = stores
    loaded = StoredTables(columns_dir, dataset_id)
    mapped, resident = cache.get_view(columns_dir, dataset_id), cache.get_view(loaded_dir, dataset_id)
    assert not mapped.resident and resident.resident
    assert resident.columns_dir.is_relative_to(loaded_dir)  # written on first open
    for columns in (mapped, resident):
        names = ["ids", "smiles", "n_atoms", "scores", "degenerate", "reasons", "rotations", "quaternions"]
        names += ["eigenvalues", "centroids", "lonlat", "property_values", "charges"]
        for i in range(N):
            mol_id = str(loaded.ids[i])
            assert columns.row_of(mol_id) == i
            for a, b in zip(loaded.atoms(i), columns.atoms(i), strict=True):
                np.testing.assert_array_equal(b, a)
            for name in names:
                np.testing.assert_array_equal(columns.cell(name, i), loaded.cell(name, i))
        rows = np.random.default_rng(2).choice(N, 30, replace=False)
        for name in names:
            np.testing.assert_array_equal(columns.cells(name, rows), loaded.cells(name, rows))
        for name in names:
            for a, b in [(0, 7), (SHARD - 3, SHARD + 4), (N - 5, N + 20), (N, N + 1), (9, 9)]:
                np.testing.assert_array_equal(columns.span(name, a, b), loaded.span(name, a, b))
        for bad in (N, -1):
            with pytest.raises(IndexError):
                columns.cell("quaternions", bad)


@pytest.mark.parametrize("by", ["formula", "scaffold", "cluster"])
def test_groups_and_group_filters_equal_the_loaded_answers(clients, stores, by):
    ra, rb = both(clients, "/api/datasets/big/groups", by=by)
    assert ra.status_code == 200 and rb.json() == ra.json()
    groups = ra.json()["groups"]
    assert groups and all(g["label"] for g in groups)
    for name in (groups[0]["group"], groups[-1]["label"], ra.json()["ungrouped"]["label"]):
        ra, rb = both(clients, "/api/datasets/big/molecules", group_by=by, group=name, limit=50)
        assert ra.status_code == 200 and rb.json() == ra.json()
    # The column view read only the group columns of its shards' chemistry tables, never the whole table.
    _, columns_dir, dataset_id = stores
    assert "chemistry_molecules" not in cache.get_view(columns_dir, dataset_id)._extras


@pytest.fixture(scope="module")
def frames_only(tmp_path_factory, qm9_small):
    """(view of a store without read arrays, view as ingested) of a sharded set with frames only: formulas
    come from the columns."""
    root = tmp_path_factory.mktemp("frames-only")
    write_synth(root / "npz", SynthSpec(n=900, bias="uniform", seed=8, shard_size=400), source=qm9_small)
    meta = ingest_files(
        root / "loaded", [root / "npz"], "thin", cluster="in-process", shard_size=400, stages=["frames"]
    )
    shutil.copytree(root / "loaded", root / "columns")
    without_read_arrays(root / "loaded", meta["id"])
    mp = pytest.MonkeyPatch()
    mp.setenv("ORIENTSCOPE_COLUMNS_DIR", str(root / "columns-cache"))
    columns = cache.get_view(root / "columns", meta["id"])
    loaded = cache.get_view(root / "loaded", meta["id"])
    yield root, meta["id"], loaded, columns
    mp.undo()
    cache.clear_cache()


def test_records_without_chemistry_read_formulas_from_the_columns(frames_only):
    from orientscope.services.molecules import list_molecules, molecule_detail

    root, dataset_id, loaded, columns = frames_only
    assert "chemistry" not in columns.manifest["stages"]
    for i in range(len(loaded)):
        mol_id = str(loaded.ids[i])
        a = molecule_detail(root / "loaded", dataset_id, mol_id)
        b = molecule_detail(root / "columns", dataset_id, mol_id)
        assert b == a and b["groups"] == {"formula": a["formula"]}
    for sort in ("formula", "-n_atoms", "index"):
        a = list_molecules(root / "loaded", dataset_id, offset=380, limit=40, sort=sort).items
        assert list_molecules(root / "columns", dataset_id, offset=380, limit=40, sort=sort).items == a
