"""Format auto-detection (extension first, then sniffing the first bytes) and one entry point.

:func:`load_path` loads any supported file, a store-layout folder or an
archive of such files into one validated :class:`MoleculeSet`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from orientscope.core.errors import DatasetError
from orientscope.core.limits import Limits
from orientscope.core.progress import Progress
from orientscope.core.settings import DATASET_FORMATS, FORMAT_CHOICES, check_choice
from orientscope.loaders.archive import ZIP_MAGIC, extract_archive, is_archive
from orientscope.loaders.asedb import SQLITE_MAGIC
from orientscope.loaders.base import Collector, Loaded
from orientscope.loaders.parquet_orientations import PARQUET_MAGIC, STORE_TABLES, is_store_folder

EXTENSIONS = {
    ".xyz": "xyz",
    ".extxyz": "extxyz",
    ".exyz": "extxyz",
    ".sdf": "sdf",
    ".sd": "sdf",
    ".mol": "sdf",
    ".db": "asedb",
    ".aselmdb": "asedb",
    ".lmdb": "asedb",
    ".npz": "npz",
    ".parquet": "parquet",
    ".pq": "parquet",
}
# JSON molecule records, or (.json) an ASE JSON database: told apart by content (:func:`_json_kind`). Not in
# EXTENSIONS, which also names the formats an export's file name asks for: JSON is read, not written.
JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")


def check_format(fmt: str) -> str:
    return check_choice(fmt, FORMAT_CHOICES, "format")


def _looks_extxyz(head: str) -> bool:
    """A comment line of ``key=value`` pairs (``Properties=``, ``Lattice=`` or any other) marks extended XYZ.

    The server's own XYZ downloads are such lines too (``dataset=… pose=… units=… id=…``): the extended-XYZ
    reader takes them as they were written (``loaders/comment_line.py``).
    """
    lines = head.split("\n")  # only a newline ends a line in the file (not str.splitlines' U+2028 or \x1c)
    return len(lines) > 1 and "=" in lines[1]


def _json_kind(head: bytes) -> str:
    """A ``.json`` file: molecule records ("json") or an ASE JSON database ("asedb", rows of ``numbers``)."""
    if b'"elements"' not in head and (b'"nextid"' in head or b'"numbers"' in head):
        return "asedb"
    return "json"


def is_molecule_file(path: Path) -> bool:
    """Whether a file found in a folder of inputs is one to read: a molecule format's extension, and for
    ``.json`` molecule records inside (a folder's ``metadata.json`` or a manifest is not one)."""
    path = Path(path)
    if path.suffix.lower() not in JSON_SUFFIXES:
        return path.suffix.lower() in EXTENSIONS
    with open(path, "rb") as fh:
        return b'"elements"' in fh.read(4096)


def detect_format(path: Path) -> str:
    """One of DATASET_FORMATS, or "archive"; DatasetError naming what is accepted if unknown."""
    path = Path(path)
    if is_store_folder(path):
        return "parquet"
    if path.is_dir():
        raise DatasetError(f"{path.name}: a folder must hold {' and '.join(STORE_TABLES)}")
    with open(path, "rb") as fh:
        head = fh.read(4096)
    fmt = EXTENSIONS.get(path.suffix.lower())
    if fmt is None and is_archive(path):
        return "archive"
    if path.suffix.lower() in JSON_SUFFIXES or (
        fmt is None and head.lstrip()[:1] in (b"{", b"[") and b'"elements"' in head
    ):
        return _json_kind(head)
    # Without an extension, only a first line that is an atom count says "xyz" (not any leading digit).
    if (fmt == "xyz" and head[:20].lstrip()[:1].isdigit()) or (
        fmt is None and head.split(b"\n", 1)[0].strip().isdigit()
    ):
        text = head.decode("utf-8", errors="replace")
        return "extxyz" if _looks_extxyz(text) else "xyz"
    if fmt:
        return fmt
    if head.startswith(SQLITE_MAGIC):
        return "asedb"
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    if head.startswith(ZIP_MAGIC) and b".npy" in head:
        return "npz"
    if b"M  END" in head or b"V2000" in head or b"V3000" in head:
        return "sdf"
    raise DatasetError(
        f"{path.name}: cannot tell the format (extension {path.suffix or 'none'!r}); "
        f"accepted: {', '.join(DATASET_FORMATS)} files, a store folder, or a zip/tar of them"
    )


def _feeders() -> dict[str, Callable[[Path, Collector, Progress | None], None]]:
    from orientscope.loaders.asedb import read_asedb
    from orientscope.loaders.extxyz import read_extxyz
    from orientscope.loaders.json_records import read_json_records
    from orientscope.loaders.npz import feed_npz
    from orientscope.loaders.parquet_orientations import load_parquet_file, load_store_tables
    from orientscope.loaders.sdf import read_sdf
    from orientscope.loaders.xyz import read_xyz

    def records(read):
        def feed(path, collector, progress):
            for item in read(path, collector.limits, progress):
                collector.add(item)

        return feed

    def parquet(path, collector, progress):
        if is_store_folder(path):
            load_store_tables(path, collector)
        else:
            load_parquet_file(path, collector, progress)

    return {
        "xyz": records(read_xyz),
        "extxyz": records(read_extxyz),
        "sdf": records(read_sdf),
        "asedb": records(read_asedb),
        "npz": feed_npz,
        "parquet": parquet,
        "json": records(read_json_records),
    }


def load_path(
    path: Path,
    fmt: str = "auto",
    strict: bool = False,
    limits: Limits | None = None,
    progress: Progress | None = None,
    workdir: Path | None = None,
    id_prefix: str = "",
) -> Loaded:
    """Load a file, store folder or archive.

    Parameters
    ----------
    fmt : "auto" or one of DATASET_FORMATS; for an archive it applies to every member
    strict : fail on the first malformed record instead of skipping it
    workdir : where archives are extracted (a temporary folder if None)
    id_prefix : ids of records without one are ``<id_prefix><index in file>`` (archive members: ``<stem>_<index>``)
    """
    path = Path(path)
    check_format(fmt)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    limits = limits or Limits()
    if path.is_file():
        limits.check_upload_bytes(path.stat().st_size, path.name)
    feeders = _feeders()
    collector = Collector(path.name, strict, limits)
    collector.id_prefix = id_prefix
    kind = detect_format(path) if fmt == "auto" or is_archive(path) else fmt
    if kind != "archive":
        feeders[kind](path, collector, progress)
        return collector.finish(kind)
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=workdir, prefix="extract-") as tmp:
        members = extract_archive(path, Path(tmp), limits)
        stores = {m.parent for m in members if m.name in STORE_TABLES and is_store_folder(m.parent)}
        files = [m for m in members if m.parent not in stores] + sorted(stores)
        formats = set()
        for k, member in enumerate(files):
            member_fmt = detect_format(member) if fmt == "auto" else fmt
            formats.add(member_fmt)
            collector.id_prefix = f"{member.stem}_"
            if progress is not None:
                progress(k / len(files), f"reading {member.name} ({k + 1} of {len(files)})")
            try:
                feeders[member_fmt](member, collector, None)
            except DatasetError as err:
                raise DatasetError(f"{path.name}: {err}") from None
        return collector.finish("+".join(sorted(formats)) if len(formats) > 1 else formats.pop())
