import numpy as np
import pytest

from orientscope.science.chemistry import pack_bits
from orientscope.science.clustering import (
    ShardedTanimotoScan,
    TanimotoIndex,
    leader_clusters,
    leader_clusters_naive,
    pairwise_tanimoto,
    popcounts,
    sampled_leader_clusters,
)


def _families(n_per=30, seed=0):
    """Two families: members share a family core of 16 bits plus 2 private random bits."""
    rng = np.random.default_rng(seed)
    cores = [np.arange(16), np.arange(100, 116)]
    n_bits, bits = [], []
    for core in cores:
        for _ in range(n_per):
            b = np.unique(np.concatenate([core, rng.choice(np.arange(500, 2048), 2, replace=False)]))
            n_bits.append(len(b))
            bits.extend(b)
    return pack_bits(np.array(n_bits), np.array(bits))


def test_index_and_pairwise_tanimoto_known_values():
    w = pack_bits(np.array([2, 3, 0]), np.array([1, 2, 1, 2, 3]))
    assert np.allclose(TanimotoIndex(w).similarities(0), [1.0, 2 / 3, 0.0])
    assert np.allclose(pairwise_tanimoto(w, w)[1], [2 / 3, 1.0, 0.0])


def test_leader_matches_naive_and_separates_families():
    w = _families()
    order = np.random.default_rng(1).permutation(len(w))
    fast, leaders = leader_clusters(w, 0.6, order=order)
    naive, naive_leaders = leader_clusters_naive(w, 0.6, order=order)
    assert (fast == naive).all() and (leaders == naive_leaders).all()
    assert len(leaders) == 2 and len(set(fast[:30])) == 1 and fast[0] != fast[30]


def test_leader_matches_naive_on_random_fingerprints():
    rng = np.random.default_rng(4)
    n_bits = rng.integers(5, 25, 300)
    w = pack_bits(n_bits, rng.integers(0, 300, n_bits.sum()))  # duplicates within a row are fine
    for t in (0.3, 0.5, 0.7):
        assert (leader_clusters(w, t)[0] == leader_clusters_naive(w, t)[0]).all()
    with pytest.raises(ValueError, match="threshold"):
        leader_clusters(w, 1.5)


def test_sampled_leader_assigns_everyone_to_their_family():
    w = _families(50)
    labels, leaders, sim = sampled_leader_clusters(w, 0.6, sample_size=10, seed=0)
    assert (labels >= 0).all() and len(set(labels[:50])) == 1 and labels[0] != labels[50]
    assert (sim >= 0.6).all()


def test_index_nearest_excludes_self_and_non_candidates():
    w = pack_bits(np.array([3, 3, 2, 3]), np.array([1, 2, 3, 1, 2, 4, 1, 2, 1, 2, 3]))
    nn, sim = TanimotoIndex(w).nearest([0, 1])
    assert nn.tolist() == [3, 2] and np.isclose(sim[0], 1.0)
    nn, _ = TanimotoIndex(w, candidates=np.array([True, True, False, False])).nearest([0])
    assert nn.tolist() == [1]


def test_index_most_similar_ranks_and_excludes_self():
    w = pack_bits(np.array([3, 3, 2, 3]), np.array([1, 2, 3, 1, 2, 4, 1, 2, 1, 2, 3]))
    idx, sim = TanimotoIndex(w).most_similar(0, k=2)
    assert idx.tolist() == [3, 2] and np.allclose(sim, [1.0, 2 / 3])
    with pytest.raises(IndexError, match="row 9"):
        TanimotoIndex(w).most_similar(9, k=2)
    assert TanimotoIndex(w[:1]).most_similar(0, k=3)[0].tolist() == []


def _rdkit_fingerprints(smiles):
    from rdkit import Chem, DataStructs
    from rdkit.Chem import rdFingerprintGenerator

    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    fps = [gen.GetFingerprint(Chem.MolFromSmiles(s)) for s in smiles]
    hex_fps = "".join(DataStructs.BitVectToFPSText(fp) for fp in fps)  # little-endian, as the chemistry stage packs
    words = np.frombuffer(bytes.fromhex(hex_fps), np.uint8).reshape(len(fps), 256).view(np.uint64)
    return fps, words


def test_index_agrees_with_rdkit_bulk_tanimoto(qm9_small):
    from rdkit import DataStructs

    smiles = [str(s) for s in qm9_small.smiles[:150]]
    fps, words = _rdkit_fingerprints(smiles)
    index = TanimotoIndex(words)
    for i in (0, 7, 42, 149):
        expected = np.array(DataStructs.BulkTanimotoSimilarity(fps[i], fps))
        np.testing.assert_allclose(index.similarities(i), expected, rtol=0, atol=1e-12)
        expected = np.round(expected, 12)  # RDKit's division may differ in the last bit: ties stay ties
        expected[i] = -np.inf
        order = np.lexsort((np.arange(len(expected)), -expected))[:5]  # best first, ties to the lower row
        rows, sims = index.most_similar(i, 5)
        assert rows.tolist() == order.tolist()
        np.testing.assert_allclose(sims, expected[order], atol=1e-12)
    nn, best = index.nearest(np.arange(len(smiles)))
    for i in range(len(smiles)):
        expected = np.round(DataStructs.BulkTanimotoSimilarity(fps[i], fps), 12)
        expected[i] = -1.0
        assert nn[i] == int(np.argmax(expected)) and np.isclose(best[i], expected.max())


def _tied_fingerprints(seed: int) -> np.ndarray:
    """(300, 2) uint64: sparse short random fingerprints (many tied similarities), exact copies, empty rows."""
    rng = np.random.default_rng(seed)
    bits = rng.random((300, 128)) < 0.05
    bits[17] = bits[150] = False  # empty fingerprints: Tanimoto 0 with everything, even each other
    bits[200:260] = bits[rng.integers(0, 40, 60)]  # copies of early rows: ties at Tanimoto 1 across shards
    bits[[5, 99, 299]] = bits[3]
    return np.packbits(bits, axis=1, bitorder="little").view(np.uint64)


@pytest.mark.parametrize("cuts", [[300], [1, 120, 179], [100, 100, 100], [7] * 42 + [6]])
@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_sharded_scan_answers_as_the_index(cuts, n_threads):
    for seed in (7, 8):
        words = _tied_fingerprints(seed)
        shards = np.split(words, np.cumsum(cuts)[:-1])
        index = TanimotoIndex(words)
        counted = ShardedTanimotoScan(shards, n_threads=n_threads)
        given = ShardedTanimotoScan(shards, counts=[popcounts(s) for s in shards], n_threads=n_threads)
        assert len(counted) == 300
        for i in (0, 3, 5, 17, 99, 100, 150, 201, 299):
            for k in (1, 2, 5, 40, 299, 500):
                want = index.most_similar(i, k)
                for scan in (counted, given):
                    got = scan.most_similar(i, k)
                    np.testing.assert_array_equal(got[0], want[0])
                    np.testing.assert_array_equal(got[1], want[1])  # bit for bit
    with pytest.raises(IndexError):
        counted.most_similar(300, 3)
    with pytest.raises(ValueError, match="row for row"):
        ShardedTanimotoScan(shards, counts=[popcounts(s)[:-1] for s in shards])


def test_sharded_scan_answers_as_the_index_on_subsets_and_supersets():
    # Subsets and supersets of a few parents: their Tanimoto to one another equals the bound
    # min(|a|, |b|) / max(|a|, |b|) exactly, so pruning on bit counts must keep exactly the
    # rows that can still enter the top-k.
    rng = np.random.default_rng(11)
    parents = rng.random((40, 512)) < 0.05
    bits = parents[rng.integers(0, 40, 3000)]
    bits[:1500] &= rng.random((1500, 512)) > 0.1
    bits[1500:] |= rng.random((1500, 512)) < 0.004
    words = np.packbits(bits, axis=1, bitorder="little").view(np.uint64)
    index = TanimotoIndex(words)
    scan = ShardedTanimotoScan(np.array_split(words, 7), n_threads=2)
    for i in rng.choice(3000, 25, replace=False):
        for k in (1, 10, 100):
            got, want = scan.most_similar(int(i), k), index.most_similar(int(i), k)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
