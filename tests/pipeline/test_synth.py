import json

import numpy as np
import pytest

from orientscope.core.dataset import MoleculeSet, concat_molecule_sets
from orientscope.loaders.detect import load_path
from orientscope.pipeline.synth import MANIFEST, SynthSpec, write_synth
from orientscope.science.frames import compute_frames
from orientscope.science.rotations import geodesic_angle, matrix_to_quaternion
from orientscope.science.so3_stats import kl_to_uniform


def _read(out) -> MoleculeSet:
    """All shards of a synth folder, in manifest order, through the ordinary NPZ loader."""
    manifest = json.loads((out / MANIFEST).read_text())
    return concat_molecule_sets([load_path(out / s["file"], "npz").mols for s in manifest["shards"]])


def _frames(mols: MoleculeSet):
    return compute_frames(mols.positions_angstrom, mols.offsets)


def test_tiles_qm9_with_unique_ids_smiles_and_properties(tmp_path, qm9_small):
    manifest = write_synth(tmp_path, SynthSpec(n=1000, shard_size=300, seed=4), source=qm9_small)
    assert [s["n_molecules"] for s in manifest["shards"]] == [300, 300, 300, 100]
    first = load_path(tmp_path / "shard-00000.npz", "npz").mols
    assert first.ids[0] == f"{qm9_small.ids[0]}_0"
    assert first.smiles[1] == qm9_small.smiles[1]
    np.testing.assert_array_equal(first.properties["gap"], qm9_small.properties["gap"].to_numpy()[:300])
    mols = _read(tmp_path)
    assert mols.n_molecules == 1000 and len(np.unique(mols.ids)) == 1000  # MoleculeSet also checks
    assert mols.ids[qm9_small.n_molecules] == f"{qm9_small.ids[0]}_1"
    # Every molecule keeps its shape: same atoms, same distances to its centroid.
    row = 7 + qm9_small.n_molecules  # second copy of row 7
    z0, p0 = qm9_small.atoms_of(7)
    z1, p1 = mols.atoms_of(row)
    np.testing.assert_array_equal(z1, z0)
    np.testing.assert_allclose(np.linalg.norm(p1 - p1.mean(0), axis=1), np.linalg.norm(p0 - p0.mean(0), axis=1))


def test_same_seed_same_set_whatever_the_shard_size(tmp_path, qm9_small):
    spec = SynthSpec(n=700, bias="qm9", seed=1, shard_size=700)
    write_synth(tmp_path / "a", spec, source=qm9_small)
    write_synth(tmp_path / "b", SynthSpec(n=700, bias="qm9", seed=1, shard_size=123), source=qm9_small)
    write_synth(tmp_path / "c", SynthSpec(n=700, bias="qm9", seed=2, shard_size=700), source=qm9_small)
    a, b, c = _read(tmp_path / "a"), _read(tmp_path / "b"), _read(tmp_path / "c")
    np.testing.assert_array_equal(a.positions_angstrom, b.positions_angstrom)
    np.testing.assert_array_equal(a.ids, b.ids)
    assert not np.allclose(a.positions_angstrom, c.positions_angstrom)


def test_uniform_bias_is_unbiased_and_qm9_bias_stays_aligned(tmp_path, qm9_small):
    n = 4000
    write_synth(tmp_path / "u", SynthSpec(n=n, bias="uniform", seed=0), source=qm9_small)
    write_synth(tmp_path / "q", SynthSpec(n=n, bias="qm9", blur_deg=10.0, seed=0), source=qm9_small)
    uniform, aligned = _frames(_read(tmp_path / "u")), _frames(_read(tmp_path / "q"))
    kl_u = kl_to_uniform(matrix_to_quaternion(uniform.rotations), n_bootstrap=0).value
    kl_q = kl_to_uniform(matrix_to_quaternion(aligned.rotations), n_bootstrap=0).value
    assert abs(kl_u) < 0.1
    assert kl_q > 1.0
    # The qm9 bias turns each pose by |N(0, 10°)|: the median turn is 10° * 0.674 = 6.7°.
    original = _frames(qm9_small)
    rows = np.arange(n) % qm9_small.n_molecules
    ok = ~aligned.degenerate & ~original.degenerate[rows]
    turned = np.rad2deg(geodesic_angle(aligned.rotations[ok], original.rotations[rows][ok]))
    assert np.median(turned) == pytest.approx(6.74, abs=0.6)


def test_bad_spec_is_refused():
    with pytest.raises(ValueError, match="expected one of"):
        SynthSpec(n=10, bias="tilted")
    with pytest.raises(ValueError, match="n must be"):
        SynthSpec(n=0)
