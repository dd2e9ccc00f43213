"""Property-based fuzzing of the SMILES and SMARTS parsers (1000 generated cases each).

SMILES files (``orientscope generate``) are mutated byte-wise like the other
formats; SMARTS queries are built from SMARTS syntax, including deep nesting and
recursive queries, and searched over a small index with a timeout. Every case
either succeeds or fails with a documented error, within the hang bound.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orientscope.loaders.rdkit_generated import generate
from orientscope.science.substructure import MAX_SMARTS_LENGTH, SubstructureIndex, parse_smarts
from tests.fuzz.hostile import FUZZ, LIMITS, bounded, check_loaded, expect_documented, mutated

# Embedding cost grows steeply with size: larger molecules are refused before embedding (that
# check is part of what is tested), which keeps 1000 cases fast.
SMILES_LIMITS = replace(LIMITS, max_atoms_per_molecule=12)
SEED_SMILES = b"# smiles name\nO water\nC#N hcn\nC1CC1 cyclopropane\n[NH4+]\n"
INDEX_SMILES = [
    "O", "CCO", "c1ccccc1", "CC(=O)O", "C1CC1", "N#CC#N", "OC1C2CC1C2", "CC12CC1C2", "c1ccncc1", "",
    "not a smiles", "CCCCCCCCCCCCCCCCCCCC", "C1CCC2CCCCC2C1", "OC(=O)C(N)Cc1ccc(O)cc1", "C" * 60,
]  # fmt: skip
SMARTS_ATOMS = ["C", "c", "N", "O", "*", "[#6]", "[!#1]", "[R]", "[r5]", "[D3]", "[X4]", "[$(C=O)]", "[a]", "[+]"]
SMARTS_BONDS = ["", "-", "=", "#", "~", ":", "@", "!-", ";", ","]
SMARTS_JUNK = ["(", ")", "[", "]", "$(", "%99", "1", "9", "&", "!", "{", "}", "\x00", "é", " "]


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="orientscope-fuzz-smiles-") as tmp:
        yield Path(tmp)


@pytest.fixture(scope="module")
def index():
    return SubstructureIndex(INDEX_SMILES)


@FUZZ
@given(payload=mutated([SEED_SMILES]))
def test_smiles_files_survive_hostile_input(workdir, payload):
    path = workdir / "case.smi"
    path.write_bytes(payload)
    loaded = expect_documented(lambda: generate(path, seed=0, limits=SMILES_LIMITS))
    if loaded is not None:
        check_loaded(loaded)
        assert int(np.diff(loaded.mols.offsets).max()) <= SMILES_LIMITS.max_atoms_per_molecule


@st.composite
def smarts_queries(draw) -> str:
    """Chains of SMARTS atoms and bonds with branches, rings, recursion and junk; sometimes deeply nested."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return "".join(draw(st.lists(st.sampled_from(SMARTS_JUNK + SMARTS_ATOMS + SMARTS_BONDS), max_size=40)))
    if kind == 1:  # deep nesting: branches or recursive SMARTS
        depth = draw(st.integers(1, 300))
        opener, closer = draw(st.sampled_from([("C(", ")"), ("[$(", ")]"), ("[!$(", ")]"), ("(", ")")]))
        return opener * depth + draw(st.sampled_from(SMARTS_ATOMS)) + closer * draw(st.integers(0, depth))
    parts = []
    for _ in range(draw(st.integers(1, 25))):
        parts.append(draw(st.sampled_from(SMARTS_BONDS)) + draw(st.sampled_from(SMARTS_ATOMS)))
        if draw(st.integers(0, 5)) == 0:
            parts.append(draw(st.sampled_from(["(", ")", "1", "2", "%10", *SMARTS_JUNK])))
    return "".join(parts)


@FUZZ
@given(smarts=smarts_queries())
def test_smarts_parse_and_search_are_bounded(index, smarts):
    with bounded():
        try:
            query = parse_smarts(smarts)
        except ValueError as err:
            assert type(err) is ValueError and str(err)
            return
        assert query is not None and len(smarts) <= MAX_SMARTS_LENGTH
        result = index.search(smarts, timeout_s=1.0)
    assert ((result.indices >= 0) & (result.indices < len(INDEX_SMILES))).all()
    assert not {9, 10} & set(result.indices.tolist())  # unparsable SMILES never match


PATHOLOGICAL_SMARTS = [
    "*" + "~*" * 40,  # a 41-atom wildcard path: exhaustive search on every molecule that lacks it
    "[$(" * 120 + "*" + ")]" * 120,  # recursion 120 deep
    "*1~*~*~*~*~*~*~*~*~*~*~*~*~*~*~*~*~*~*~*1",  # a 20-ring of wildcards
    "[!#1]" * 80,
    "C" * (MAX_SMARTS_LENGTH + 1),
]


@pytest.mark.parametrize("smarts", PATHOLOGICAL_SMARTS, ids=["path", "recursion", "ring", "heavy", "too-long"])
def test_pathological_smarts_over_http_is_answered_in_bounded_time(client, smarts):
    with bounded():
        r = client.get("/api/datasets/qm9/molecules", params={"smarts": smarts, "limit": 5})
    assert r.status_code in (200, 422), r.text
    if r.status_code == 422:
        assert "SMARTS" in r.text or "smarts" in r.text


def test_a_smarts_search_past_its_deadline_returns_a_partial_result_not_hung(api_data, monkeypatch):
    from orientscope.services import molecules as svc

    monkeypatch.setattr(svc, "SMARTS_TIMEOUT_S", -1.0)  # every search is already past its deadline
    monkeypatch.setattr(svc, "SMARTS_BLOCK", 100)
    partial = svc.list_molecules(api_data, "qm9", smarts="[#6]~[#6]~[#8;R0]")
    assert not partial.complete and partial.n_scanned == 100
    monkeypatch.setattr(svc, "SMARTS_TIMEOUT_S", 10.0)
    full = svc.list_molecules(api_data, "qm9", smarts="[#6]~[#6]~[#8;R0]")  # not cached as partial
    assert full.complete and full.total > partial.total > 0
