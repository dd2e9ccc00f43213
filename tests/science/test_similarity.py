import numpy as np
from scipy.spatial.transform import Rotation

from orientscope.science.chemistry import pack_bits
from orientscope.science.similarity import coupling, neighbour_pairs


def _planted(n_families=40, per=6, seed=0):
    """Families of near-identical fingerprints whose members share a pose (within ~6°)."""
    rng = np.random.default_rng(seed)
    n_bits, bits, rots = [], [], []
    centers = Rotation.random(n_families, random_state=rng)
    for f in range(n_families):
        core = np.arange(20 * f, 20 * f + 20)
        for _ in range(per):
            b = np.unique(np.concatenate([core, rng.choice(np.arange(1000, 2048), 1)]))
            n_bits.append(len(b))
            bits.extend(b)
            rots.append((Rotation.from_rotvec(rng.normal(0, 0.05, 3)) * centers[f]).as_matrix())
    return pack_bits(np.array(n_bits), np.array(bits)), np.array(rots)


def test_planted_coupling_is_enriched_and_shuffled_poses_are_not():
    words, R = _planted()
    q, nn, sim = neighbour_pairs(words, n_sample=10_000, seed=0)
    assert len(q) == len(words) and (nn // 6 == q // 6).all() and (sim > 0.8).all()
    res = coupling(R, q, nn, seed=1, n_permutations=500)
    assert res["nn_within_30deg"] == 1.0
    assert res["enrichment"] > 20 and res["pvalue"] < 1e-12 and res["pvalue_permutation"] < 0.01
    assert np.isclose(sum(res["histograms"]["nn"]), 1.0)
    shuffled = R[np.random.default_rng(2).permutation(len(R))]
    null = coupling(shuffled, q, nn, seed=1, n_permutations=500)
    assert 0.3 < null["enrichment"] < 3 and null["pvalue"] > 1e-3


def test_sample_is_seeded_and_excludes_pool_outsiders():
    words, _ = _planted()
    pool = np.ones(len(words), bool)
    pool[::6] = False
    a = neighbour_pairs(words, n_sample=50, seed=3, pool=pool)
    b = neighbour_pairs(words, n_sample=50, seed=3, pool=pool)
    assert (a[0] == b[0]).all() and len(a[0]) == 50
    assert pool[a[0]].all() and pool[a[1]].all() and (a[0] != a[1]).all()
