"""Format auto-detection (extension first, then sniffing the first bytes) and one entry point.

:func:`load_path` loads any supported file, a store-layout folder or an
archive of such files into one validated :class:`MoleculeSet`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

from orientscope.core.errors import DatasetError
from orientscope.core.limits import Limits
from orientscope.core.progress import Progress
from orientscope.loaders import registry
from orientscope.loaders.archive import extract_archive, is_archive
from orientscope.loaders.base import Collector, Loaded
from orientscope.loaders.formats import HEAD_BYTES, NO, Format

ARCHIVE = "archive"


def check_format(fmt: str) -> str:
    return registry.check_format(fmt)


def is_molecule_file(path: Path) -> bool:
    """Whether a file found in a folder of inputs is one to read: a format's extension, and that format's own
    test where it has one (``.json`` molecule records inside, not a folder's ``metadata.json``)."""
    found = registry.owners(path)
    return bool(found) and all(f.in_folder(Path(path)) for f in found if f.in_folder is not None)


def _archive(path: Path) -> bool:
    """A zip or tar of inputs; a format's own extension (an ``.npz`` is a zip) never is."""
    return not registry.owners(path) and is_archive(path)


def _sniffed(formats, head: bytes, path: Path) -> Format | None:
    """The format whose sniff says most (the first of equals); None if none says anything."""
    best, score = None, NO
    for f in formats:
        said = f.sniff(head, path)
        if said > score:
            best, score = f, said
    return best


def detect_format(path: Path) -> str:
    """The name of ``path``'s format, or "archive"; DatasetError naming what is accepted if unknown.

    The extension decides, among the formats that list it (by what their sniffs say of the content, else
    the format that lists it first: a ``.xyz`` of ``key=value`` comments is extended XYZ, a ``.json`` of
    ASE rows an ASE database); without a known extension, a format whose opening the file has (a magic
    number, an atom count line, a leading ``{``), else one whose marker it holds (SDF's ``M  END``).
    """
    path = Path(path)
    folder = registry.folder_format(path)
    if folder is not None:
        return folder.name
    if path.is_dir():
        hints = " or ".join(f.folder_hint for f in registry.FORMATS if f.reads_folder is not None)
        raise DatasetError(f"{path.name}: a folder must hold {hints}")
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    found = registry.owners(path)
    if found:
        return (_sniffed(found, head, path) or found[0]).name
    if is_archive(path):
        return ARCHIVE
    by_content = _sniffed(registry.FORMATS, head, path)
    if by_content is not None:
        return by_content.name
    raise DatasetError(
        f"{path.name}: cannot tell the format (extension {path.suffix or 'none'!r}); "
        f"accepted: {', '.join(registry.names())} files, a store folder, or a zip/tar of them"
    )


def load_path(
    path: Path,
    fmt: str = "auto",
    strict: bool = False,
    limits: Limits | None = None,
    progress: Progress | None = None,
    workdir: Path | None = None,
    id_prefix: str = "",
    options: Mapping[str, str] | None = None,
) -> Loaded:
    """Load a file, store folder or archive.

    Parameters
    ----------
    fmt : "auto" or a format's name (``registry.names()``); for an archive it applies to every member
    strict : fail on the first malformed record instead of skipping it
    workdir : where archives are extracted (a temporary folder if None)
    id_prefix : ids of records without one are ``<id_prefix><index in file>`` (archive members: ``<stem>_<index>``)
    options : the format's reading options (``name=value``, e.g. the CCD's ``coordinates``); with "auto",
        every file must be of a format that takes them
    """
    path = Path(path)
    check_format(fmt)
    options = registry.check_options(fmt, options)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    limits = limits or Limits()
    if path.is_file():
        limits.check_upload_bytes(path.stat().st_size, path.name)
    collector = Collector(path.name, strict, limits)
    collector.id_prefix = id_prefix
    kind = detect_format(path) if fmt == "auto" or _archive(path) else fmt
    if kind != ARCHIVE:
        _feed(registry.get(kind), path, collector, progress, options)
        return collector.finish(kind)
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=workdir, prefix="extract-") as tmp:
        members = extract_archive(path, Path(tmp), limits)
        folders = {m.parent for m in members if registry.folder_format(m.parent) is not None}
        files = [m for m in members if m.parent not in folders] + sorted(folders)
        formats = set()
        for k, member in enumerate(files):
            member_fmt = detect_format(member) if fmt == "auto" else fmt
            formats.add(member_fmt)
            collector.id_prefix = f"{member.stem}_"
            if progress is not None:
                progress(k / len(files), f"reading {member.name} ({k + 1} of {len(files)})")
            try:
                _feed(registry.get(member_fmt), member, collector, None, options)
            except DatasetError as err:
                raise DatasetError(f"{path.name}: {err}") from None
        return collector.finish("+".join(sorted(formats)) if len(formats) > 1 else formats.pop())


def _feed(fmt: Format, path: Path, collector: Collector, progress: Progress | None, options: Mapping[str, str]):
    """Read ``path`` as ``fmt`` into ``collector``; options ``fmt`` does not take are an error naming the file."""
    unknown = sorted(set(options) - {o.name for o in fmt.options})
    if unknown:
        raise DatasetError(
            f"{path.name} is {fmt.label} ({fmt.name}), which takes no option {', '.join(map(repr, unknown))}; "
            f"its options: {registry.options_help(fmt)}"
        )
    fmt.read(path, collector, progress, options)
