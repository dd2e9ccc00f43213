"""What a file format is: the one declaration its module makes, and the registry (``loaders/registry.py``) lists.

A format module (``loaders/xyz.py``, ``loaders/ccd.py`` …) ends with ``FORMAT = Format(...)``: its name, its
extensions, how its content is recognised, its reader, and where it has them its writers, media type and
options. Detection (``loaders/detect.py``), the CLI's and API's choices, export, the downloads and the docs'
format table read these declarations, so a new format is its module and one line in the registry.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from orientscope.core.dataset import MoleculeSet
from orientscope.core.progress import Progress
from orientscope.loaders.base import BadRecord, Collector, Record

# How strongly a file's first bytes say it is a format (Format.sniff). Openings (a magic number, an atom-count
# line, a leading "{") exclude one another; a marker found further in (SDF's "M  END") counts only when no
# format's opening matched.
NO = 0
MARKER = 1
OPENING = 2
HEAD_BYTES = 4096  # what a sniff sees of a file

Feed = Callable[[Path, Collector, "Progress | None", Mapping[str, str]], None]
RecordReader = Callable[..., Iterator[Record | BadRecord]]


def _no_graph() -> str:
    return ""


@dataclass(frozen=True)
class MoleculeChemistry:
    """What the server knows of one molecule beyond its atoms, for a one-molecule writer (``write_molecule``).

    charge : total charge in e as the file gave it (NaN: unknown, not written)
    graph_smiles : ``() -> str``, the SMILES of the graph the chemistry stage built ("" without one); called only
        by a writer that writes bonds, and only when the file gave no SMILES
    perceive : ``(atomic_numbers, positions_angstrom) -> RDKit molecule or None``, the guarded bond perception at
        ``charge`` (``science.perception``; loaders do not import the science layer), or None
    """

    charge: float = math.nan
    graph_smiles: Callable[[], str] = _no_graph
    perceive: Callable | None = None


NO_CHEMISTRY = MoleculeChemistry()


@dataclass(frozen=True)
class FormatOption:
    """A reading option of one format (``--format-option name=value``), e.g. the CCD's ``coordinates``."""

    name: str
    choices: tuple[str, ...]
    default: str
    help: str


def no_sniff(head: bytes, path: Path) -> int:
    return NO


@dataclass(frozen=True)
class Format:
    """One file format, as its module declares it.

    name : what ``--format`` and ``format=`` take
    label : its name in sentences ("extended XYZ")
    extensions : lower-case suffixes, the first being the one written; a suffix two formats list (``.xyz``,
        ``.json``) goes to the one whose :attr:`sniff` says more, else to the one that lists it first
    read : feeds a file's molecules into a collector (``records(reader)`` for a reader of records)
    description : one line for the docs' format table
    sniff : ``(first bytes, path) -> NO | MARKER | OPENING``, how strongly the content says it is this format
    write : ``(path, molecule set)``, for ``export``
    write_molecule : one molecule as text, ``(atomic_numbers, positions_angstrom (n, 3), id, smiles,
        properties, tags, chemistry: MoleculeChemistry) -> str``, for ``GET …/molecules/{mol_id}?format=``
    media_type : the type of a file in this format, as the API serves it
    options : the reading options it takes
    reads_folder : whether a folder is one dataset in this format (with ``folder_hint``: what it holds)
    in_folder : whether a file with one of the extensions, found in a folder of inputs, is one to read
    """

    name: str
    label: str
    extensions: tuple[str, ...]
    read: Feed
    description: str
    sniff: Callable[[bytes, Path], int] = no_sniff
    write: Callable[[Path, MoleculeSet], None] | None = None
    write_molecule: Callable[..., str] | None = None
    media_type: str = "application/octet-stream"
    options: tuple[FormatOption, ...] = ()
    reads_folder: Callable[[Path], bool] | None = None
    folder_hint: str = ""
    in_folder: Callable[[Path], bool] | None = None

    @property
    def suffix(self) -> str:
        """The extension its files are written with."""
        return self.extensions[0]


def records(read: RecordReader) -> Feed:
    """The feed of a reader that yields records: ``read(path, limits, progress, **options)``."""

    def feed(path: Path, collector: Collector, progress: Progress | None, options: Mapping[str, str]) -> None:
        for item in read(path, collector.limits, progress, **options):
            collector.add(item)

    return feed


def feeder(feed: Callable[[Path, Collector, Progress | None], None]) -> Feed:
    """The feed of a format that fills the collector itself and takes no options."""
    return lambda path, collector, progress, options: feed(path, collector, progress)


def first_line(head: bytes) -> bytes:
    """The first line of a file's head; only a newline ends a line (not str.splitlines' U+2028 or \\x1c)."""
    return head.split(b"\n", 1)[0]
