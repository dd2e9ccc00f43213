"""Zip and tar archives of many dataset files, extracted safely.

Protection, checked while streaming each member to disk (never trusting the
sizes an archive declares):

* path traversal: absolute names, ``..`` components, drive letters,
  symlinks, hard links and device files are refused;
* zip bombs: extraction stops once a member's uncompressed bytes exceed
  ``max_archive_ratio`` times its compressed size (zip) or the archive's size
  on disk (tar), or once all members together exceed ``max_archive_bytes``;
* more than ``max_archive_members`` members are refused.
"""

from __future__ import annotations

import os
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from orientscope.core.errors import DatasetError
from orientscope.core.limits import LimitExceeded, Limits

CHUNK = 1 << 20
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
ZIP_MAGIC = b"PK\x03\x04"


def is_archive(path: Path) -> bool:
    """A zip or tar by its name, else by its content (callers ask only for files no format's extension names:
    an ``.npz`` is a zip too)."""
    name = Path(path).name.lower()
    if name.endswith(ARCHIVE_SUFFIXES):
        return True
    return tarfile.is_tarfile(path) if Path(path).is_file() else False


def safe_member_path(name: str, archive: str) -> PurePosixPath:
    """The relative path a member may be written to; DatasetError for traversal attempts."""
    norm = name.replace("\\", "/")
    p = PurePosixPath(norm)
    if norm.startswith("/") or p.is_absolute() or (p.parts and ":" in p.parts[0]) or ".." in p.parts:
        raise DatasetError(f"{archive}: member {name!r} points outside the archive (absolute path or '..'); refused")
    parts = [x for x in p.parts if x not in ("", ".")]
    if not parts:
        raise DatasetError(f"{archive}: member {name!r} has an empty path")
    return PurePosixPath(*parts)


class _Budget:
    def __init__(self, archive: str, archive_bytes: int, limits: Limits):
        self.archive = archive
        self.archive_bytes = max(archive_bytes, 1)
        self.limits = limits
        self.total = 0
        self.members = 0

    def member(self) -> None:
        self.members += 1
        if self.members > self.limits.max_archive_members:
            raise LimitExceeded(f"{self.archive}: more than {self.limits.max_archive_members:,} members")

    def copy(self, src, dest: Path, name: str, compressed_bytes: int) -> None:
        written = 0
        allowed = self.limits.max_archive_ratio * max(compressed_bytes, 1)
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "wb") as out:
            while chunk := src.read(CHUNK):
                written += len(chunk)
                self.total += len(chunk)
                if written > allowed and written > CHUNK:
                    raise LimitExceeded(
                        f"{self.archive}: member {name!r} expands more than {self.limits.max_archive_ratio:.0f}x "
                        "its compressed size (zip bomb?); refused"
                    )
                if self.total > self.limits.max_archive_bytes:
                    raise LimitExceeded(
                        f"{self.archive}: more than {self.limits.max_archive_bytes:,} bytes when extracted; refused"
                    )
                out.write(chunk)


def _skip(path: PurePosixPath) -> bool:
    """Metadata files that archivers add (macOS resource forks, hidden files)."""
    return any(part.startswith(".") or part == "__MACOSX" for part in path.parts)


def extract_archive(path: Path, dest: Path, limits: Limits | None = None) -> list[Path]:
    """Extract ``path`` into ``dest`` safely; the extracted data files, in archive order."""
    path, dest = Path(path), Path(dest)
    limits = limits or Limits()
    budget = _Budget(path.name, path.stat().st_size, limits)
    dest.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for rel, opener, compressed in _members(path, budget):
        target = dest / rel
        with opener() as src:
            budget.copy(src, target, str(rel), compressed)
        if not _skip(rel):
            out.append(target)
    if not out:
        raise DatasetError(f"{path.name}: the archive holds no data files")
    return out


def _members(path: Path, budget: _Budget) -> Iterator[tuple[PurePosixPath, object, int]]:
    name = path.name
    if zipfile.is_zipfile(path):
        try:
            zf = zipfile.ZipFile(path)
        except zipfile.BadZipFile as err:
            raise DatasetError(f"{name}: corrupt zip archive ({err})") from None
        with zf:
            for info in zf.infolist():
                budget.member()
                rel = safe_member_path(info.filename, name)
                if info.is_dir():
                    continue
                mode = (info.external_attr >> 16) & 0o170000
                if mode and mode != 0o100000:  # symlink or other special file
                    raise DatasetError(f"{name}: member {info.filename!r} is a link or special file; refused")
                yield rel, (lambda i=info: zf.open(i)), info.compress_size
        return
    try:
        tf = tarfile.open(path, mode="r:*")
    except (tarfile.TarError, OSError) as err:
        raise DatasetError(f"{name}: not a readable zip or tar archive ({err})") from None
    with tf:
        try:
            for info in tf:
                budget.member()
                rel = safe_member_path(info.name, name)
                if info.isdir():
                    continue
                if not info.isfile():
                    raise DatasetError(f"{name}: member {info.name!r} is a link or special file; refused")
                # A tar member's compressed size is unknown: bound it by the whole archive.
                yield rel, (lambda i=info: tf.extractfile(i)), os.path.getsize(path)
        except tarfile.TarError as err:
            raise DatasetError(f"{name}: corrupt tar archive ({err})") from None
