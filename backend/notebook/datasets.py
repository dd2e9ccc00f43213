"""Molecule sets of a Python session: :func:`read`, :func:`from_arrays`, :func:`from_ase`, :func:`from_pyg`
and :func:`load`.

A set made in Python keeps its molecules in memory when it fits (at most ``$ORIENTSCOPE_IN_MEMORY_MB``,
see :func:`~orientscope.core.settings.in_memory_bytes`). The first computation on it (``report``,
``audit_model``) writes it into a private store under the data folder, ``<data dir>/.unsaved/<nonce>/``
(a data folder of its own, never listed by the server), in the sharded layout ``ingest`` writes. A larger
set goes there at once, and a set read from larger files or from several files is ingested there shard by
shard, without holding it in memory. :meth:`Dataset.save` publishes that store into the data folder in one
rename. An unsaved store is removed when its set is garbage collected and when Python exits (Ctrl-C included).
"""

from __future__ import annotations

import glob
import shutil
import time
import uuid
import warnings
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from orientscope.core.dataset import MoleculeSet, check_frame_dependent, rows_of_ids
from orientscope.core.errors import DatasetError
from orientscope.core.settings import (
    DEFAULT_DATASET,
    display_name,
    in_memory_bytes,
    resolve_data_dir,
    slugify,
    validate_id,
)
from orientscope.notebook.progress import check_options, checked_options, progress_bar
from orientscope.store import datasets as ds
from orientscope.store.shards import read_shard, save_sharded, shard_refs

UNSAVED = ".unsaved"
READ_OPTIONS = [
    "name", "format", "format_options", "strict", "frame_dependent", "cluster", "shard_size", "data_dir", "progress"
]  # fmt: skip


class _UnsavedStore:
    """A private data folder under ``<data dir>/.unsaved/``, removed with its owner or at exit."""

    def __init__(self, data_dir: Path):
        self.root = Path(data_dir) / UNSAVED / uuid.uuid4().hex[:12]
        self.root.mkdir(parents=True)
        # finalize also runs at interpreter exit, which a Ctrl-C (KeyboardInterrupt) reaches too.
        self._remove = weakref.finalize(self, shutil.rmtree, str(self.root), True)

    def remove(self) -> None:
        self._remove()


class Dataset:
    """A molecule set: stored in the data folder (``saved``) or made in this session and not yet saved.

    Attributes
    ----------
    id : the dataset id (a temporary one until :meth:`save`)
    name : display name
    data_dir : the data folder it is (or will be) saved in
    saved : whether ``orientscope serve`` on ``data_dir`` lists it
    """

    def __init__(
        self,
        data_dir: Path,
        dataset_id: str,
        name: str,
        *,
        molecules: MoleculeSet | None = None,
        unsaved: _UnsavedStore | None = None,
        source: str = "",
        extra: dict | None = None,
    ):
        self.data_dir = Path(data_dir)
        self.id = dataset_id
        self.name = name
        self._molecules = molecules
        self._unsaved = unsaved
        self._source = source
        self._extra = extra or {}
        # A subset view: the set it is cut from and its rows there (sorted); see subset().
        self._parent: Dataset | None = None
        self._rows: np.ndarray | None = None

    @property
    def saved(self) -> bool:
        if self._parent is not None:
            return self._parent.saved
        return self._molecules is None and self._unsaved is None

    @property
    def is_subset(self) -> bool:
        """Whether this is a view on some molecules of another set (:meth:`subset`)."""
        return self._parent is not None

    @property
    def whole(self) -> Dataset:
        """The whole set: this one, or the set a subset view is cut from."""
        return self._parent or self

    def subset(self, ids) -> Dataset:
        """A view on the molecules with ``ids`` (in the set's order): it shares this set's store and results and
        recomputes nothing.

        ``audit_model``, ``rotated_copies``, ``assert_pose_robust`` and ``sweep`` take it and read only those
        molecules (classifier scores and regression come from the whole set's result, as an audit of the whole
        set would read them). ``report`` and ``save`` refuse it: a subset has no results of its own; make a set
        of it with ``orientscope.from_arrays`` on ``subset.molecules()`` to analyse it alone. ValueError naming
        ids the set lacks or repeats.
        """
        base = self._parent or self
        # A view's ids are its own: an id of the whole set outside the view is named as outside the view.
        what = f"dataset {self.id!r}" if self._rows is None else f"the subset view {self.name!r}"
        rows = rows_of_ids(self.ids, ids, what)
        if self._rows is not None:
            rows = self._rows[rows]
        view = Dataset(base.data_dir, base.id, f"{base.name} [{len(rows):,} of {base.n_molecules:,}]")
        view._parent, view._rows = base, rows
        return view

    def _refuse_subset(self, action: str) -> None:
        if self._parent is not None:
            raise ValueError(
                f"{action} takes a whole set, and {self.name!r} is a subset view of {self._parent.id!r} with no "
                "results of its own; use the whole set, or orientscope.from_arrays on subset.molecules()"
            )

    def location(self) -> tuple[Path, str]:
        """(data folder, dataset id) where the set is stored; an in-memory set is written to its private store first.

        A subset view answers its whole set's location."""
        if self._parent is not None:
            return self._parent.location()
        if self.saved:
            return self.data_dir, self.id
        if self._unsaved is None:
            store = _UnsavedStore(self.data_dir)
            save_sharded(store.root, self.id, self._molecules, self.name, self._source, self._extra)
            self._unsaved = store
        return self._unsaved.root, self.id

    def meta(self) -> dict:
        return ds.read_meta(*self.location())

    def molecules(self) -> MoleculeSet:
        """The whole set (or the subset view's molecules) in memory."""
        if self._parent is not None:
            return self._parent.molecules().subset(self._rows)
        return self._molecules if self._molecules is not None else ds.load_dataset(*self.location())

    def parts(self) -> Iterator[MoleculeSet]:
        """The molecules in order, one stored shard at a time (the whole set when it is in memory)."""
        for mols, _ in self.row_parts():
            yield mols

    def row_parts(self) -> Iterator[tuple[MoleculeSet, np.ndarray]]:
        """As :meth:`parts`, each part with its molecules' rows (n,) in the whole set (for a subset, its parent)."""
        if self._parent is not None:
            for mols, rows in self._parent.row_parts():
                lo, hi = np.searchsorted(self._rows, [rows[0], rows[-1] + 1])
                if hi > lo:  # rows of a part are consecutive, so the view's rows in it are one slice
                    picked = self._rows[lo:hi]
                    yield mols.subset(picked - rows[0]), picked
            return
        if self._molecules is not None:
            yield self._molecules, np.arange(self._molecules.n_molecules)
            return
        root, dataset_id = self.location()
        meta = ds.read_meta(root, dataset_id)
        start = 0
        for ref in shard_refs(root, dataset_id, meta):
            mols = read_shard(ref, meta)
            yield mols, np.arange(start, start + mols.n_molecules)
            start += mols.n_molecules

    @property
    def ids(self) -> np.ndarray:
        """(n_molecules,) str, the molecules' ids in the set's order."""
        if self._parent is not None:
            return self._parent.ids[self._rows]
        if self._molecules is not None:
            return self._molecules.ids
        return ds.read_molecule_columns(*self.location(), ["id"])["id"].to_numpy().astype(str)

    def __len__(self) -> int:
        """The number of molecules, as ``n_molecules`` (``len(ds)`` raised TypeError)."""
        return self.n_molecules

    @property
    def n_molecules(self) -> int:
        if self._parent is not None:
            return len(self._rows)
        if self._molecules is not None:
            return self._molecules.n_molecules
        return int(self.meta()["n_molecules"])

    @property
    def properties(self) -> list[str]:
        if self._parent is not None:
            return self._parent.properties
        if self._molecules is not None:
            return list(self._molecules.properties.columns)
        return list(self.meta().get("properties", []))

    def ensure_computed(self, progress: bool = True) -> float:
        """Run the default stages if the set has no result yet (what the dashboard and an audit read); seconds taken.

        A subset view runs its whole set's (it has none of its own)."""
        if self._parent is not None:
            return self._parent.ensure_computed(progress)
        root, dataset_id = self.location()
        if ds.read_meta(root, dataset_id).get("active_result"):
            return 0.0
        from orientscope.pipeline.precompute import make_params, precompute  # the stages' code only when they run

        t0 = time.perf_counter()
        with progress_bar(f"stages of {self.name}", progress) as bar:
            precompute(root, dataset_id, make_params(), progress=bar)
        return time.perf_counter() - t0

    def save(self, name: str | None = None, progress: bool = True) -> Dataset:
        """Publish the set into the data folder under ``name`` (its id derived from it), atomically; ``self``.

        Its stages run first if nothing was computed yet, so the dashboard shows it at once.
        """
        self._refuse_subset("save()")
        if self.saved:
            raise ValueError(f"dataset {self.id!r} is already saved in {self.data_dir}")
        from orientscope.pipeline.ingest import new_dataset_id, publish
        from orientscope.store.move import move_dataset

        name = display_name(name or self.name)
        self.ensure_computed(progress)
        root, old_id = self.location()
        new_id = new_dataset_id(self.data_dir, name)
        move_dataset(root, old_id, new_id, name)
        publish(root, self.data_dir, new_id)
        self._unsaved.remove()
        self._unsaved = self._molecules = None
        self.id, self.name = new_id, name
        return self

    def __repr__(self) -> str:
        where = f"saved in {self.data_dir}" if self.saved else "not saved"
        if self._parent is not None:
            return f"<orientscope.Dataset subset of {self.id!r}: {self.n_molecules:,} molecules, {where}>"
        return f"<orientscope.Dataset {self.id!r} ({self.name}): {self.n_molecules:,} molecules, {where}>"


def _in_memory(
    mols: MoleculeSet, name: str, data_dir, source: str, fmt: str, frame_dependent: Iterable[str] = (), **extra
) -> Dataset:
    from orientscope.pipeline.ingest import ingest_meta

    if frame_dependent:
        declared = check_frame_dependent(frame_dependent, mols.properties.columns)
        mols = replace(mols, frame_dependent=mols.frame_dependent | declared)
    name = display_name(name)
    meta = ingest_meta(fmt, extra.pop("n_skipped", 0), extra.pop("problems", []), **extra)
    dataset = Dataset(resolve_data_dir(data_dir), slugify(name), name, molecules=mols, source=source, extra=meta)
    if _nbytes(mols) > in_memory_bytes():
        dataset.location()  # too large to keep: into the private store now, and out of memory
        dataset._molecules = None
    return dataset


def _nbytes(mols: MoleculeSet) -> int:
    """Bytes a set takes in memory: its arrays, its property table, and its ids and SMILES as characters."""
    text = sum(map(len, mols.ids)) + (sum(map(len, mols.smiles)) if mols.smiles is not None else 0)
    arrays = mols.atomic_numbers.nbytes + mols.positions_angstrom.nbytes + mols.offsets.nbytes
    return arrays + int(mols.properties.memory_usage(index=False).sum()) + text


def _disk_bytes(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _expand(path_or_glob) -> list[Path]:
    text = str(path_or_glob)
    if any(ch in text for ch in "*?["):
        paths = [Path(p) for p in sorted(glob.glob(text))]
        if not paths:
            raise FileNotFoundError(f"no file matches {text!r}")
        return paths
    if not Path(text).exists():
        raise FileNotFoundError(f"no file or folder {text}")
    return [Path(text)]


def read(path_or_glob, **options) -> Dataset:
    """Read molecules from a file, a store folder, an archive, a folder of files or a glob, as ``ingest`` does.

    Options: ``name`` (default: the file's stem), ``format`` ("auto" or a format's name,
    ``orientscope.loaders.registry.choices()``), ``format_options`` (the format's reading options, e.g.
    ``{"coordinates": "model"}`` for the Chemical Component Dictionary), ``strict``, ``frame_dependent``
    (property names), ``cluster``, ``shard_size``, ``data_dir``, ``progress``.
    One file no larger than ``$ORIENTSCOPE_IN_MEMORY_MB`` is read into memory; a larger file, several files,
    a folder of files, ``cluster`` or ``shard_size`` make a sharded set, ingested into the private store
    (its stages run there on the engine ``cluster`` picks).
    """
    check_options("read", options, READ_OPTIONS)
    from orientscope.loaders import registry

    fmt = options.get("format", registry.AUTO)
    if fmt not in registry.choices():
        raise ValueError(f"read: unknown format {fmt!r}; allowed: {list(registry.choices())}")
    format_options = registry.check_options(fmt, options.get("format_options"))
    paths = _expand(path_or_glob)
    name = options.get("name") or paths[0].stem or "dataset"
    strict, show = bool(options.get("strict", False)), options.get("progress", True)
    cluster, shard_size = options.get("cluster"), options.get("shard_size")
    frame_dependent = list(options.get("frame_dependent") or ())
    data_dir = resolve_data_dir(options.get("data_dir"))
    single = len(paths) == 1 and cluster is None and shard_size is None
    folder = registry.folder_format(paths[0]) is not None
    if single and (paths[0].is_file() or folder) and _disk_bytes(paths[0]) <= in_memory_bytes():
        from orientscope.core.limits import Limits
        from orientscope.loaders.detect import load_path
        from orientscope.pipeline.ingest import staging_root

        staging_root(data_dir).mkdir(parents=True, exist_ok=True)
        with progress_bar(f"read {paths[0].name}", show) as bar:
            loaded = load_path(paths[0], fmt, strict=strict, limits=Limits.from_env(), progress=bar,
                               workdir=staging_root(data_dir), options=format_options)  # fmt: skip
        source = f"read {paths[0].name} ({loaded.format}) in Python"
        for text in loaded.warnings:  # renamed ids or properties, isotopes: said where the notebook shows it
            warnings.warn(text, stacklevel=2)
        return _in_memory(
            loaded.mols, name, data_dir, source, loaded.format, frame_dependent, n_skipped=loaded.n_skipped,
            problems=loaded.problems, warnings=loaded.warnings, tags=loaded.tags, original_filename=paths[0].name,
            strict=strict, **({"format_options": format_options} if format_options else {}),
        )  # fmt: skip
    from orientscope.pipeline.sharded_ingest import ingest_files

    store = _UnsavedStore(data_dir)
    try:
        with progress_bar(f"read {len(paths)} file(s)", show) as bar:
            meta = ingest_files(store.root, paths, name, fmt=fmt, strict=strict, cluster=cluster,
                                shard_size=shard_size, progress=bar, frame_dependent=frame_dependent,
                                format_options=format_options)  # fmt: skip
    except BaseException:
        store.remove()  # a failed read leaves nothing behind
        raise
    return Dataset(data_dir, meta["id"], meta["name"], unsaved=store)


def _as_numpy(value) -> np.ndarray:
    """A NumPy array from NumPy data or a tensor (``.detach().cpu().numpy()``), without importing torch."""
    for step in ("detach", "cpu"):
        if hasattr(value, step):
            value = getattr(value, step)()
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    return np.asarray(value)


def _per_molecule(numbers, positions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat (numbers, positions, offsets) from one array per molecule; DatasetError naming a mis-shaped molecule."""
    if len(numbers) != len(positions):
        raise DatasetError(f"{len(numbers)} arrays of atomic numbers but {len(positions)} arrays of positions")
    zs, ps = [], []
    for i, (z, p) in enumerate(zip(numbers, positions, strict=True)):
        try:
            z, p = _as_numpy(z), _as_numpy(p).astype(np.float64)
        except (ValueError, TypeError) as err:
            raise DatasetError(f"molecule {i}: its atoms do not form an array ({err})") from None
        if z.ndim != 1 or p.shape != (z.shape[0], 3):
            raise DatasetError(
                f"molecule {i}: {z.shape} atomic numbers and positions of shape {p.shape}; "
                "expected (n_atoms,) and (n_atoms, 3)"
            )
        zs.append(z)
        ps.append(p)
    counts = np.array([len(z) for z in zs], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    flat_z = np.concatenate(zs) if zs else np.zeros(0, np.int64)
    return flat_z, (np.concatenate(ps) if ps else np.zeros((0, 3))), offsets


def _property_table(properties, n: int) -> pd.DataFrame:
    if properties is None:
        return pd.DataFrame()
    table = pd.DataFrame({k: _as_numpy(v).reshape(-1) if not isinstance(v, pd.Series) else v.to_numpy()
                          for k, v in dict(properties).items()})  # fmt: skip
    if len(table.columns) and len(table) != n:
        raise DatasetError(f"properties have {len(table)} values for {n} molecules")
    for column in table.columns:
        if not pd.api.types.is_numeric_dtype(table[column]):
            raise DatasetError(f"property {column!r} is not numeric (dtype {table[column].dtype})")
    return table.astype(np.float64)


@checked_options
def from_arrays(
    numbers,
    positions,
    ids=None,
    smiles=None,
    properties=None,
    *,
    offsets=None,
    name: str = "arrays",
    property_units: Mapping[str, str] | None = None,
    frame_dependent: Iterable[str] = (),
    data_dir=None,
) -> Dataset:
    """A set from arrays: one per molecule, or flat arrays plus ``offsets``.

    Parameters
    ----------
    numbers : sequence of (n_atoms_i,) int atomic numbers, or (n_atoms_total,) with ``offsets``
    positions : sequence of (n_atoms_i, 3) float positions in ångström, or (n_atoms_total, 3) with ``offsets``
    ids : (n_molecules,) unique ids (default ``"0"``, ``"1"``, ...)
    smiles : (n_molecules,) str, optional
    properties : mapping name -> (n_molecules,) numbers, or a DataFrame
    offsets : (n_molecules + 1,) int, molecule ``i`` owns atoms ``offsets[i]:offsets[i+1]``
    """
    if offsets is not None:
        z, pos, off = _as_numpy(numbers), _as_numpy(positions), _as_numpy(offsets)
        if pos.ndim != 2 or pos.shape[-1] != 3:
            raise DatasetError(f"flat positions must have shape (n_atoms_total, 3), got {pos.shape}")
    elif isinstance(positions, np.ndarray) and positions.ndim == 2:
        raise DatasetError("flat positions (n_atoms_total, 3) need offsets=; or pass one array per molecule")
    else:
        z, pos, off = _per_molecule(list(numbers), list(positions))
    n = len(off) - 1
    mols = MoleculeSet(
        atomic_numbers=z,
        positions_angstrom=pos,
        offsets=off,
        ids=np.arange(n).astype(str) if ids is None else _as_numpy(ids).astype(str),
        smiles=None if smiles is None else np.asarray(smiles, dtype=object).astype(str),
        properties=_property_table(properties, n),
        property_units=dict(property_units or {}),
    )
    return _in_memory(mols, name, data_dir, "arrays from Python", "python", frame_dependent)


@checked_options
def from_ase(atoms_iterable, *, name: str = "ase", data_dir=None) -> Dataset:
    """A set from ASE ``Atoms`` objects; numeric scalars in ``atoms.info`` that every molecule has become properties,
    and ``atoms.info["id"]`` (else the position in the sequence) the id."""
    numbers, positions, ids, infos = [], [], [], []
    for i, atoms in enumerate(atoms_iterable):
        numbers.append(atoms.get_atomic_numbers())
        positions.append(atoms.get_positions())
        ids.append(str(atoms.info.get("id", i)))
        infos.append({k: v for k, v in atoms.info.items() if k != "id" and isinstance(v, int | float | np.number)})
    common = set.intersection(*(set(info) for info in infos)) if infos else set()
    properties = {k: [info[k] for info in infos] for k in sorted(common)}
    return from_arrays(numbers, positions, ids=ids, properties=properties or None, name=name, data_dir=data_dir)


@checked_options
def from_pyg(dataset, property_names: Sequence[str] | None = None, *, name: str = "pyg", data_dir=None) -> Dataset:
    """A set from any sequence of objects with ``.z`` and ``.pos`` (PyTorch Geometric ``Data``, tensors or NumPy).

    With ``property_names``, the columns of each object's ``.y`` become those properties. Ids come from
    ``.name`` or ``.idx`` when present, else the position in the sequence.
    """
    numbers, positions, ids, ys = [], [], [], []
    for i, item in enumerate(dataset):
        if not (hasattr(item, "z") and hasattr(item, "pos")):
            raise DatasetError(f"item {i} ({type(item).__name__}) has no .z and .pos")
        numbers.append(_as_numpy(item.z).reshape(-1))
        positions.append(_as_numpy(item.pos))
        label = getattr(item, "name", None)
        if not isinstance(label, str):
            idx = getattr(item, "idx", None)
            label = str(int(_as_numpy(idx).reshape(-1)[0])) if idx is not None else str(i)
        ids.append(label)
        if property_names:
            y = _as_numpy(getattr(item, "y", np.zeros(0))).reshape(-1)
            if y.size != len(property_names):
                raise DatasetError(f"item {i}: .y has {y.size} values for property_names {list(property_names)}")
            ys.append(y)
    properties = dict(zip(property_names, np.asarray(ys, np.float64).T, strict=True)) if property_names else None
    return from_arrays(numbers, positions, ids=ids, properties=properties, name=name, data_dir=data_dir)


@checked_options
def load(dataset_id: str = DEFAULT_DATASET, data_dir=None) -> Dataset:
    """A stored set (the built-in QM9 is written into the data folder on first use)."""
    root = resolve_data_dir(data_dir)
    if ds.has_dataset(root, validate_id(dataset_id)):  # stored: the pipeline's code (seconds of imports) is not needed
        meta = ds.require_current_layout(dataset_id, ds.read_meta(root, dataset_id))
    else:
        from orientscope.pipeline.precompute import ensure_dataset

        meta = ensure_dataset(root, dataset_id)
    return Dataset(root, dataset_id, meta.get("name", dataset_id))
