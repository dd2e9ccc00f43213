"""Counter-based random draws: every value is a pure function of (seed, stream, counter).

A sequential generator gives molecule ``i`` a value that depends on how many
draws came before it, so the result would change with the shard size, the
worker count or the order in which shards finish. Here each draw is a hash of
its coordinates instead: a 64-bit key from (seed, stream name) and the
molecule's counter go through two rounds of the SplitMix64 finaliser
(Steele, Lea & Flood 2014; the same mixer that seeds xoshiro). Any cut of the
molecules into chunks gives identical draws, and two stream names give
unrelated values for the same molecule.

Every function takes ``index``: (n,) the molecules' counters, either int (>= 0) global molecule indices
(the dataset's own stages) or the uint64 :func:`id_counters` of their ids (draws that must not change with
a subset, an order or a cut of the set, such as a rotated copy's rotation).
"""

from __future__ import annotations

import hashlib

import numpy as np

from orientscope.science.rotations import quaternion_to_matrix

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 2.0**-53


def stream_keys(seed: int, stream: str) -> tuple[np.uint64, np.uint64]:
    """Two 64-bit keys of one (seed, stream); stable across processes and platforms."""
    digest = hashlib.sha256(f"{int(seed)}:counter:{stream}".encode()).digest()
    return np.uint64(int.from_bytes(digest[:8], "little")), np.uint64(int.from_bytes(digest[8:16], "little"))


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, in place on a uint64 array (wrap-around multiplication is intended)."""
    x ^= x >> np.uint64(30)
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


def id_counters(ids) -> np.ndarray:
    """(n,) uint64 counters of molecule ids: the first 8 bytes (little-endian) of BLAKE2b-64 of each id's UTF-8.

    A draw keyed by these is a function of the molecule's identity alone: the same in any subset, order
    or shard cut. Two distinct ids share a counter with probability about 2**-64.
    """
    values = np.asarray(ids).reshape(-1)
    out = np.empty(len(values), dtype=np.uint64)
    for k, text in enumerate(values.astype(str).tolist()):
        digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
        out[k] = int.from_bytes(digest, "little")
    return out


def _counters(index) -> np.ndarray:
    """(n,) uint64 from int indices (>= 0) or from :func:`id_counters`."""
    values = np.asarray(index).reshape(-1)
    if values.dtype == np.uint64:
        return values
    idx = values.astype(np.int64)
    if idx.size and idx.min() < 0:
        raise ValueError(f"global molecule indices must be >= 0, got {int(idx.min())}")
    return idx.astype(np.uint64)


def random_bits(seed: int, stream: str, index, n_draws: int = 1) -> np.ndarray:
    """(n, n_draws) uint64: the ``n_draws`` raw draws of each molecule in ``index``."""
    key, key2 = stream_keys(seed, stream)
    with np.errstate(over="ignore"):
        # Id counters wrap around when multiplied by n_draws: two molecules share a draw only if their
        # counters differ by one of about n_draws**2 values, which random 64-bit counters do with p ~ 2**-60.
        counter = _counters(index)[:, None] * np.uint64(n_draws) + np.arange(n_draws, dtype=np.uint64)[None, :]
        x = _mix(counter * _GOLDEN + key)
        x ^= key2
        return _mix(x)


def uniforms(seed: int, stream: str, index, n_draws: int = 1) -> np.ndarray:
    """(n, n_draws) float64 uniform on the open interval (0, 1), 53 random bits each."""
    bits = random_bits(seed, stream, index, n_draws) >> np.uint64(11)
    return (bits.astype(np.float64) + 0.5) * _TO_UNIT


def normals(seed: int, stream: str, index, n_draws: int = 1) -> np.ndarray:
    """(n, n_draws) float64 standard normal (Box–Muller on two uniforms per draw)."""
    u = uniforms(seed, stream, index, 2 * n_draws)
    return np.sqrt(-2.0 * np.log(u[:, :n_draws])) * np.cos(2.0 * np.pi * u[:, n_draws:])


def haar_quaternions(seed: int, stream: str, index) -> np.ndarray:
    """(n, 4) Haar-uniform unit quaternions (x, y, z, w) by Shoemake's method (1992)."""
    u1, u2, u3 = uniforms(seed, stream, index, 3).T
    a, b = np.sqrt(1.0 - u1), np.sqrt(u1)
    t2, t3 = 2.0 * np.pi * u2, 2.0 * np.pi * u3
    return np.stack([a * np.sin(t2), a * np.cos(t2), b * np.sin(t3), b * np.cos(t3)], axis=1)


def haar_rotations(seed: int, stream: str, index) -> np.ndarray:
    """(n, 3, 3) Haar-uniform rotation matrices."""
    return quaternion_to_matrix(haar_quaternions(seed, stream, index)).reshape(-1, 3, 3)


def unit_vectors(seed: int, stream: str, index) -> np.ndarray:
    """(n, 3) directions uniform on the unit sphere (Archimedes: z uniform on [-1, 1])."""
    u, v = uniforms(seed, stream, index, 2).T
    z = 2.0 * u - 1.0
    r = np.sqrt(np.maximum(1.0 - z * z, 0.0))
    phi = 2.0 * np.pi * v
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def axis_angle_rotations(axes: np.ndarray, angles_rad: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotations by ``angles_rad`` (n,) about unit ``axes`` (n, 3) (Rodrigues)."""
    k = np.asarray(axes, dtype=np.float64)
    t = np.asarray(angles_rad, dtype=np.float64)[:, None, None]
    cross = np.zeros((len(k), 3, 3))
    cross[:, 0, 1], cross[:, 0, 2], cross[:, 1, 2] = -k[:, 2], k[:, 1], -k[:, 0]
    cross -= np.transpose(cross, (0, 2, 1))
    return np.eye(3) + np.sin(t) * cross + (1.0 - np.cos(t)) * (cross @ cross)


def half_split(seed: int, stream: str, index) -> np.ndarray:
    """(n,) bool: molecule in half A (True) or B, each with probability 1/2, independently."""
    return (random_bits(seed, stream, index)[:, 0] >> np.uint64(63)).astype(bool)


def subsample(seed: int, stream: str, index, m: int) -> np.ndarray:
    """The (at most) ``m`` indices of ``index`` with the smallest draws, sorted.

    Keeping the m smallest of each shard, then the m smallest of their union,
    gives the m smallest overall: the selection is an associative merge, so a
    seeded subsample of m molecules does not depend on how the set is cut.
    """
    idx = np.asarray(index, dtype=np.int64).reshape(-1)
    if m >= idx.size:
        return np.sort(idx)
    keys = random_bits(seed, stream, idx)[:, 0]
    # Ties (equal 64-bit keys) break by index, so the choice stays a function of the set alone.
    order = np.lexsort((idx, keys))[:m]
    return np.sort(idx[order])
