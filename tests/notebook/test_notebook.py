"""docs/notebooks/*.ipynb, executed as shipped in a real kernel (nbclient + ipykernel), on the QM9 sample that
ships with OrientScope (``orientscope.sample_path()``); only the data folder is a temporary one."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

import orientscope
from orientscope.store import audits as audit_store
from orientscope.store.datasets import list_dataset_ids
from tests.audit_models import lab_x_share

NOTEBOOKS = Path(__file__).resolve().parents[2] / "docs" / "notebooks"
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", ["audit.ipynb", "fix_loop.ipynb"])
def test_the_notebook_is_stored_without_outputs(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


def test_the_sample_ships_with_the_package_and_is_the_documented_one():
    path = orientscope.sample_path()
    assert path.is_file() and path.name == "qm9_sample.extxyz" and "notebook/data" in path.as_posix()
    mols = orientscope.read(path, progress=False).molecules()
    assert mols.n_molecules == 1000 and set(mols.properties.columns) == {"gap", "zpve", "r2", "pose_linked"}
    carbons = np.bincount(mols.molecule_index, mols.atomic_numbers == 6, minlength=mols.n_molecules)
    residual = mols.properties["pose_linked"] - 3.0 * lab_x_share(mols) - 0.05 * carbons
    assert abs(residual.mean()) < 0.01 and 0.04 < residual.std() < 0.06  # the stated construction, N(0, 0.05)
    with pytest.raises(ValueError, match=r"unknown sample 'qm7'; the samples: \['qm9'\]"):
        orientscope.sample_path("qm7")


def _outputs(cell) -> str:
    """Every output of a cell as text: its streams, text/plain, text/html and other data, JSON-encoded."""
    parts = []
    for out in cell.outputs:
        parts.append(out.get("text", ""))
        parts.append(json.dumps(out.get("data", {})))
    return "\n".join(parts)


def _run(name: str, tmp_path: Path, monkeypatch) -> dict[str, str]:
    """Execute the notebook from a folder of its own; {first line of each code cell: its outputs}."""
    monkeypatch.setenv("ORIENTSCOPE_DATA_DIR", str(tmp_path / "data"))
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    workdir = tmp_path / "work"
    workdir.mkdir()
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    return {c.source.splitlines()[0]: _outputs(c) for c in code}


def _cell(text: dict[str, str], start: str) -> str:
    """The outputs of the one code cell whose first line starts with ``start``."""
    (found,) = [out for first, out in text.items() if first.startswith(start)]
    return found


def test_the_audit_notebook_runs_and_shows_the_verdicts(tmp_path, monkeypatch):
    text = _run("audit.ipynb", tmp_path, monkeypatch)
    assert "1,000 molecules, not saved" in text["import numpy as np"]
    card = text['report = orientscope.report(ds, frame="pca", sign="max", seed=0)']
    assert "orientscope-report" in card and "data:image/png;base64," in card and "KL to uniform" in card
    assert "application/vnd.jupyter.widget-view+json" in card  # tqdm's notebook bar (ipywidgets), not a text bar
    assert "pose_linked" in text['report.regression[["property", "improvement", "control_improvement"]]']
    assert "application/vnd.plotly.v1+json" in text['report.figure("map")']
    assert "data:text/javascript;base64," in text['first = report.frames["id"].iloc[0]']
    lab = _cell(text, "lab_audit = orientscope.audit_model(")
    assert "data-verdict='leans'" in lab and "rotation shift median" in lab
    invariant = _cell(text, "invariant_audit = orientscope.audit_model(")
    assert "data-verdict='invariant'" in invariant
    shown = text["print(lab_audit.verdicts, invariant_audit.verdicts)"]
    assert "{'pose_linked': 'leans'} {'gap': 'invariant'}" in shown and "rotation shift median" in shown
    assert "pose_linked: Leans on the pose" in shown and "Tiers by audit rule 3" in shown
    data_dir = tmp_path / "data"
    assert list_dataset_ids(data_dir) == ["qm9-sample"]
    names = {
        audit_store.read_audit(data_dir, "qm9-sample", a)["name"]
        for a in audit_store.list_audit_ids(data_dir, "qm9-sample")
    }
    assert names == {"lab-frame model", "invariant model"}


def test_the_fix_loop_notebook_leans_then_fixes_and_proves_it(tmp_path, monkeypatch):
    text = _run("fix_loop.ipynb", tmp_path, monkeypatch)
    before = text["pose_model = train(orientscope.rotated_copies(ds, 0, ids=train_ids))"]
    assert "data-verdict='leans'" in before
    after = text["augmented = train(orientscope.rotated_copies(ds, 16, ids=train_ids))"]
    assert "data-verdict='robust'" in after and "rotation shift median" in after and "leans" not in after
    fixed = text["def canonical_features(batch):"]
    assert "data-verdict='invariant'" in fixed
    comparison = text["comparison = orientscope.compare_audits([before, after, fixed])"]
    for tier in ("data-tier='leans'", "data-tier='robust'", "data-tier='invariant'"):
        assert tier in comparison
    assert "application/vnd.plotly.v1+json" in text["comparison.figure()"]
    gate = _cell(text, "orientscope.assert_pose_robust(")
    assert "pose audit failed (--fail-on not-robust): {'r2': 'leans'}" in gate
    assert list_dataset_ids(tmp_path / "data") == []  # nothing was saved: the sample stays a private set
