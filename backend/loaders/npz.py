"""NPZ arrays: ``z`` (n_atoms_total,) atomic numbers, ``pos`` (n_atoms_total, 3) ångström,
``n_atoms`` (n_molecules,); optional ``ids``/``id`` and ``smiles`` (n_molecules,) and any
other numeric (n_molecules,) array as a property. The total charge per molecule is
``total_charge`` (NaN where unknown), else ``charge`` (which stays a property too).

Arrays are streamed from the zip member in chunks (``np.load`` would
decompress everything at once), and the declared shapes are checked against
the limits before any data are read. Molecules with bad coordinates or
elements are skipped and counted (or fail in strict mode).
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np

from orientscope.core.dataset import TOTAL_CHARGE
from orientscope.core.errors import DatasetError, OrientScopeError
from orientscope.core.progress import Progress, scaled
from orientscope.loaders.archive import ZIP_MAGIC
from orientscope.loaders.base import Collector, written_property_name
from orientscope.loaders.formats import NO, OPENING, Format, feeder

REQUIRED = ("z", "pos", "n_atoms")
OWN_ARRAYS = frozenset({*REQUIRED, "ids", "id", "smiles"})  # arrays that are never properties
CHUNK_BYTES = 64 << 20
MAX_ITEM_BYTES = 4096  # per array element: a string dtype of millions of characters is a memory bomb


def _read_header(fh) -> tuple[tuple, np.dtype, bool]:
    version = np.lib.format.read_magic(fh)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran, dtype = read(fh)
    return shape, dtype, fortran


def _header(zf: zipfile.ZipFile, member: str) -> tuple[tuple, np.dtype, bool]:
    with zf.open(member) as fh:
        return _read_header(fh)


def _read_array(zf: zipfile.ZipFile, member: str, source: str, progress=None, label: str = "") -> np.ndarray:
    """Read one .npy member chunk by chunk into a preallocated array."""
    shape, dtype, fortran = _header(zf, member)
    if dtype.hasobject:
        raise DatasetError(
            f"{source}: array {member!r} holds Python objects; only plain numeric/string arrays are read"
        )
    if dtype.itemsize > MAX_ITEM_BYTES:
        raise DatasetError(
            f"{source}: array {member!r} has {dtype.itemsize:,}-byte elements ({dtype}); at most {MAX_ITEM_BYTES:,} are read"
        )
    out = np.empty(shape, dtype=dtype, order="F" if fortran else "C")
    flat = out.reshape(-1, order="F" if fortran else "C")
    per_chunk = max(CHUNK_BYTES // max(dtype.itemsize, 1), 1)
    with zf.open(member) as fh:
        _read_header(fh)
        for start in range(0, flat.size, per_chunk):
            count = min(per_chunk, flat.size - start)
            buf = fh.read(count * dtype.itemsize)
            if len(buf) != count * dtype.itemsize:
                raise DatasetError(
                    f"{source}: array {member!r} is truncated ({start + len(buf) // dtype.itemsize:,} of {flat.size:,} values)"
                )
            flat[start : start + count] = np.frombuffer(buf, dtype=dtype)
            if progress is not None:
                progress((start + count) / max(flat.size, 1), f"reading {label or member}")
    return out


def feed_npz(path: Path, collector: Collector, progress: Progress | None = None) -> None:
    """Stream an NPZ file's molecules into ``collector``; DatasetError for a corrupt file."""
    try:
        _feed_npz(Path(path), collector, progress)
    except OrientScopeError:
        raise
    # A damaged zip or .npy member surfaces as any of these, from zipfile, zlib or numpy's header parser.
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError) as err:
        raise DatasetError(
            f"{Path(path).name}: corrupt NPZ file ({type(err).__name__}: {err}); expected arrays z, pos, n_atoms"
        ) from None


def _feed_npz(path: Path, collector: Collector, progress: Progress | None) -> None:
    source = path.name
    limits = collector.limits
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise DatasetError(f"{source}: not an NPZ (zip) file; expected arrays z, pos, n_atoms") from None
    with zf:
        members = {Path(n).stem: n for n in zf.namelist() if n.endswith(".npy")}
        missing = [k for k in REQUIRED if k not in members]
        if missing:
            raise DatasetError(
                f"{source}: missing arrays {missing}; an NPZ needs z, pos and n_atoms (found {sorted(members)})"
            )
        shapes = {k: _header(zf, m)[0] for k, m in members.items()}
        n_mol = shapes["n_atoms"][0] if len(shapes["n_atoms"]) == 1 else -1
        n_at = shapes["z"][0] if len(shapes["z"]) == 1 else -1
        if n_mol < 0 or n_at < 0 or shapes["pos"] != (n_at, 3):
            raise DatasetError(
                f"{source}: shapes z {shapes['z']}, pos {shapes['pos']}, n_atoms {shapes['n_atoms']}; "
                "expected (n_atoms_total,), (n_atoms_total, 3) and (n_molecules,)"
            )
        limits.check_molecules(n_mol, source)
        limits.check_total_atoms(n_at, source)
        counts = _read_array(zf, members["n_atoms"], source).astype(np.int64)
        if (counts < 0).any() or counts.sum() != n_at:
            raise DatasetError(
                f"{source}: n_atoms sums to {counts.sum():,} but z has {n_at:,} entries (wrong atom counts)"
            )
        if counts.size and counts.max() > limits.max_atoms_per_molecule:
            limits.check_atoms(int(counts.max()), f"{source}: molecule index {int(np.argmax(counts))}")
        z = _read_array(zf, members["z"], source, progress and scaled(progress, 0.0, 0.2), "z").astype(np.int64)
        pos = _read_array(zf, members["pos"], source, progress and scaled(progress, 0.2, 0.9), "pos")
        pos = pos.astype(np.float64, copy=False)
        extra = {}
        for key, member in members.items():
            if key in REQUIRED or shapes[key][:1] != (n_mol,) or len(shapes[key]) != 1:
                continue
            extra[key] = _read_array(zf, member, source)
    ids_arr = extra.pop("ids", extra.pop("id", None))
    if ids_arr is not None:
        ids = ids_arr.astype(str)
    elif collector.id_prefix:  # several files in one dataset: "<file stem>:<index>", as for record formats
        ids = np.char.add(collector.id_prefix, np.arange(n_mol).astype(str))
    else:
        ids = np.arange(1, n_mol + 1).astype(str)
    smiles = extra.pop("smiles", None)
    charges = _charges(extra)
    props = {k: v.astype(np.float64) for k, v in extra.items() if v.dtype.kind in "biuf"}

    smiles_list = list(smiles.astype(str)) if smiles is not None and smiles.dtype.kind in "US" else None
    collector.add_bulk(z, pos, counts, ids, props, smiles_list, charges)


def _charges(extra: dict[str, np.ndarray]) -> np.ndarray | None:
    """The per-molecule ``total_charge`` array (taken out of the properties), else ``charge`` (which stays one)."""
    charges = extra.pop(TOTAL_CHARGE, None)
    if charges is None:
        charges = extra.get("charge")
    return charges if charges is not None and charges.dtype.kind in "biuf" else None


def write_npz(path: Path, mols) -> None:
    """``z``, ``pos``, ``n_atoms``, ``ids``, ``smiles`` (if known) and one array per property."""
    arrays = {
        "z": mols.atomic_numbers,
        "pos": mols.positions_angstrom,
        "n_atoms": mols.n_atoms,
        "ids": mols.ids.astype(str),
    }
    if mols.smiles is not None:
        arrays["smiles"] = mols.smiles.astype(str)
    if mols.charges is not None:
        arrays[TOTAL_CHARGE] = mols.charges
    for col in mols.properties.columns:
        arrays[written_property_name(str(col), OWN_ARRAYS)] = mols.properties[col].to_numpy(np.float64)
    with open(path, "wb") as fh:
        np.savez_compressed(fh, **arrays)


def _sniff(head: bytes, path: Path) -> int:
    return OPENING if head.startswith(ZIP_MAGIC) and b".npy" in head else NO


FORMAT = Format(
    name="npz",
    label="NPZ",
    extensions=(".npz",),
    read=feeder(feed_npz),
    description="NumPy arrays `z`, `pos` (Å) and `n_atoms`; optional `ids`, `smiles` and one array per property",
    sniff=_sniff,
    write=write_npz,
)
