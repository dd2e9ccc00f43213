"""Datasets generated from SMILES with RDKit's ETKDG conformer embedding.

RDKit's default embedding (distance geometry) returns coordinates in the
principal-axes frame of the metric matrix, so a default-ETKDG dataset comes
out axis-aligned; with ``useRandomCoords=True`` the embedding starts from
random coordinates and the poses are not aligned. Hydrogens are added before
embedding. Embedding is seeded (``randomSeed``) so a dataset is reproducible.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np

from orientscope.core.limits import Limits
from orientscope.core.progress import Progress
from orientscope.loaders.base import BadRecord, Collector, LineReader, Loaded, Record, open_text

MAX_EMBED_FAILURES = 0.5
EMBED_TIMEOUT_S = 10  # ETKDG gives up on one molecule after this long


def read_smiles_file(path: Path) -> Iterator[tuple[int, str, str | None]]:
    """(line number, SMILES, name or None) per non-empty, non-comment line ("SMILES [name]")."""
    with open_text(path) as fh:
        lines = LineReader(fh, Path(path).name)  # binary junk: DatasetError naming the line
        while (line := lines.next()) is not None:
            parts = line.split()
            if not parts or parts[0].startswith("#") or parts[0].lower() == "smiles":
                continue
            yield lines.line_no, parts[0], parts[1] if len(parts) > 1 else None


def embed_smiles(
    smiles: str, seed: int, random_coords: bool, max_atoms: int | None = None
) -> tuple[np.ndarray, np.ndarray, str] | str:
    """(atomic numbers, positions Å, canonical SMILES) of one embedded molecule, or an error message.

    A molecule of more than ``max_atoms`` atoms (hydrogens included) is refused before embedding,
    whose cost grows steeply with size.
    """
    from rdkit import Chem, RDLogger
    from rdkit.Chem import AllChem

    RDLogger.DisableLog("rdApp.*")  # failures are reported per record instead
    smiles = str(smiles)
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return f"RDKit cannot parse SMILES {smiles!r}"
    mol = Chem.AddHs(mol)
    if max_atoms is not None and mol.GetNumAtoms() > max_atoms:
        return f"{mol.GetNumAtoms():,} atoms with hydrogens; the limit is {max_atoms:,} (ORIENTSCOPE_MAX_ATOMS_PER_MOLECULE)"
    params = AllChem.ETKDGv3()
    params.timeout = EMBED_TIMEOUT_S
    params.randomSeed = int(seed)
    params.useRandomCoords = bool(random_coords)
    if AllChem.EmbedMolecule(mol, params) != 0:
        return f"ETKDG could not embed {smiles!r}"
    z = np.array([a.GetAtomicNum() for a in mol.GetAtoms()], dtype=np.int64)
    return z, mol.GetConformer().GetPositions(), Chem.MolToSmiles(Chem.RemoveHs(mol))


def generate(
    smiles: list[str] | Path,
    seed: int = 0,
    random_coords: bool = False,
    strict: bool = False,
    limits: Limits | None = None,
    progress: Progress | None = None,
) -> Loaded:
    """Embed every SMILES (a list, or a file with one "SMILES [name]" per line) with ETKDG.

    Every molecule uses the same ``seed`` (ETKDG's ``randomSeed``), so the
    result depends only on the inputs and the seed.
    """
    if isinstance(smiles, str | Path):
        source = Path(smiles).name
        entries = list(read_smiles_file(Path(smiles)))
    else:
        source = "SMILES list"
        entries = [(k + 1, s, None) for k, s in enumerate(smiles)]
    # Strained molecules that ETKDG cannot embed are not malformed input: tolerate more of them.
    limits = replace(
        limits or Limits(), max_bad_fraction=max((limits or Limits()).max_bad_fraction, MAX_EMBED_FAILURES)
    )
    collector = Collector(source, strict, limits)
    collector.limits.check_molecules(len(entries), source)
    for k, (line_no, smi, name) in enumerate(entries):
        where = f"line {line_no}" if source != "SMILES list" else f"SMILES {k + 1}"
        out = embed_smiles(smi, seed, random_coords, collector.limits.max_atoms_per_molecule)
        if isinstance(out, str):
            collector.add(BadRecord(where, out))
        else:
            collector.add(Record(where, out[0], out[1], id=name or str(line_no), smiles=out[2]))
        if progress is not None and k % 50 == 0:
            progress(k / max(len(entries), 1), f"embedded {k:,} of {len(entries):,}")
    return collector.finish("rdkit-etkdg")
