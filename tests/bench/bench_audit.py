"""Model-audit benchmark (issue 18): one million prediction rows audited end to end.

100,000 molecules × 5 rotated copies × 2 properties, as a CSV, against a
stored dataset of 100,000 one-atom molecules (the audit reads only ids and
property values, never atoms). Timed: reading and validating the file,
matching the ids, the per-molecule errors, the bootstrap (1000 resamples) and
the sign-flip tests, and writing the stored audit. Above 2,000 molecules the
sign-flip test uses its normal approximation; the second figure forces
10,000 Monte Carlo sign flips per property instead.

Run alone: ``python -m tests.bench.bench_audit``.
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from orientscope.core.dataset import MoleculeSet
from orientscope.pipeline.model_audit import run_audit
from orientscope.science.model_audit import AuditSettings
from orientscope.store.datasets import read_molecule_columns
from orientscope.store.shards import save_sharded
from tests.bench.common import write_section

N_MOLECULES = 100_000
N_COPIES = 5
PROPERTIES = ("p1", "p2")


def _dataset(data_dir: Path, rng: np.random.Generator) -> None:
    n = N_MOLECULES
    mols = MoleculeSet(
        atomic_numbers=np.full(n, 6),
        positions_angstrom=np.zeros((n, 3)),
        offsets=np.arange(n + 1),
        ids=np.array([str(i + 1) for i in range(n)]),
        properties=pd.DataFrame({p: rng.normal(size=n) for p in PROPERTIES}),
    )
    save_sharded(data_dir, "bench", mols, name="bench", source="synthetic")


def _predictions(path: Path, data_dir: Path, rng: np.random.Generator) -> int:
    truth = read_molecule_columns(data_dir, "bench", ["id", *PROPERTIES])
    frames = []
    for p, extra in zip(PROPERTIES, (0.0, 0.2), strict=True):  # p2: a model that leans a little
        y = truth[p].to_numpy()
        stored = y + rng.normal(0, 0.5, len(y))
        for k in range(N_COPIES):
            rotated = y + rng.normal(0, 0.5 + extra, len(y))
            frames.append(
                pd.DataFrame({"id": truth["id"], "property": p, "copy": k, "stored": stored, "rotated": rotated})
            )
    rows = pd.concat(frames, ignore_index=True)
    rows.to_csv(path, index=False, float_format="%.9g")
    return len(rows)


def main() -> None:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as d:
        data_dir = Path(d)
        _dataset(data_dir, rng)
        path = data_dir / "predictions.csv"
        n_rows = _predictions(path, data_dir, rng)
        size_mb = path.stat().st_size / 2**20
        t0 = time.perf_counter()
        record = run_audit(data_dir, "bench", path, "bench")
        default_s = time.perf_counter() - t0
        forced = AuditSettings(n_permutations=10_000, max_permutation_molecules=N_MOLECULES)
        t0 = time.perf_counter()
        forced_record = run_audit(data_dir, "bench", path, "bench-permutations", settings=forced)
        forced_s = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    verdicts = ", ".join(
        f"{p['property']}: {p['verdict']['code']} (reliance {p['reliance']:+.3f})" for p in record["properties"]
    )
    methods = {p["test"]["method"] for p in record["properties"]} | {
        p["test"]["method"] for p in forced_record["properties"]
    }
    print(
        f"{n_rows:,} rows ({size_mb:.0f} MB CSV): {default_s:.1f} s; with 10^4 permutations {forced_s:.1f} s; peak RSS {peak:.0f} MB"
    )
    print(verdicts, sorted(methods))
    write_section(
        "audit",
        f"""## Model audit (issue 18)

{n_rows:,} prediction rows ({N_MOLECULES:,} molecules × {N_COPIES} copies × {len(PROPERTIES)} properties, a
{size_mb:.0f} MB CSV) audited end to end by `run_audit` (read, validate, match ids, per-molecule errors,
1000 bootstrap resamples per property, sign-flip test, Holm, write): **{default_s:.1f} s** (target ≤ 30 s),
sign-flip test by its normal approximation (above 2,000 molecules). Forcing 10,000 Monte Carlo sign flips
per property instead: {forced_s:.1f} s. Peak RSS of the process {peak:.0f} MB. Verdicts: {verdicts}.
The machine is shared by several jobs; timings are noisy.""",
    )


if __name__ == "__main__":
    main()
