"""docs/notebooks/audit.ipynb, executed headlessly in a real kernel (nbclient + ipykernel) on a small sample file."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from nbclient import NotebookClient

from orientscope.pipeline.export import WRITERS
from orientscope.store import audits as audit_store
from orientscope.store.datasets import list_dataset_ids
from tests.audit_models import lab_x_share

NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "notebooks" / "audit.ipynb"
pytestmark = pytest.mark.slow


def test_the_notebook_is_stored_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


def _sample(qm9_small, path: Path) -> None:
    """200 QM9 molecules with gap and pose_linked (lab-x share of the spread plus composition, plus noise)."""
    mols = qm9_small.subset(np.arange(200))
    rng = np.random.default_rng(7)
    carbons = np.bincount(mols.molecule_index, mols.atomic_numbers == 6, minlength=mols.n_molecules)
    linked = 3.0 * lab_x_share(mols) + 0.05 * carbons + rng.normal(0, 0.05, mols.n_molecules)
    props = pd.DataFrame({"gap": mols.properties["gap"], "pose_linked": linked})
    WRITERS["extxyz"][1](path, replace(mols, properties=props, frame_dependent=frozenset()))


def _outputs(cell) -> str:
    """Every output of a cell as text: its streams, text/plain, text/html and other data, JSON-encoded."""
    parts = []
    for out in cell.outputs:
        parts.append(out.get("text", ""))
        parts.append(json.dumps(out.get("data", {})))
    return "\n".join(parts)


def test_the_notebook_runs_and_shows_the_verdicts(qm9_small, tmp_path, monkeypatch):
    sample = tmp_path / "qm9_sample.extxyz"
    _sample(qm9_small, sample)
    data_dir = tmp_path / "data"
    monkeypatch.setenv("ORIENTSCOPE_DATA_DIR", str(data_dir))
    monkeypatch.setenv("ORIENTSCOPE_SAMPLE", str(sample))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    text = {c.source.splitlines()[0]: _outputs(c) for c in code}
    assert "200 molecules, not saved" in text["import os"]
    card = text['report = orientscope.report(ds, frame="pca", sign="max", seed=0)']
    assert "orientscope-report" in card and "data:image/png;base64," in card and "KL to uniform" in card
    assert "application/vnd.jupyter.widget-view+json" in card  # tqdm's notebook bar (ipywidgets), not a text bar
    assert "pose_linked" in text['report.regression[["property", "improvement", "control_improvement"]]']
    assert "application/vnd.plotly.v1+json" in text['report.figure("map")']
    assert "data:text/javascript;base64," in text['first = report.frames["id"].iloc[0]']
    lab = text[
        'lab_audit = orientscope.audit_model(lab_model, ds, "pose_linked", copies=5, seed=0, name="lab-frame model")'
    ]
    assert "data-verdict='leans'" in lab
    invariant = text[
        'invariant_audit = orientscope.audit_model(invariant_model, ds, "gap", copies=5, seed=0, name="invariant model")'
    ]
    assert "data-verdict='invariant'" in invariant
    assert (
        "{'pose_linked': 'leans'} {'gap': 'invariant'}" in text["print(lab_audit.verdicts, invariant_audit.verdicts)"]
    )
    assert list_dataset_ids(data_dir) == ["qm9-sample"]
    names = {
        audit_store.read_audit(data_dir, "qm9-sample", a)["name"]
        for a in audit_store.list_audit_ids(data_dir, "qm9-sample")
    }
    assert names == {"lab-frame model", "invariant model"}
