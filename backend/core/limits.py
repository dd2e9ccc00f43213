"""Limits on what a user may upload or ingest, enforced while streaming.

Every loader checks these as records arrive (never after reading a whole file
into memory); the API checks ``max_upload_bytes`` while it receives the request
body and answers 413 beyond it.

=========================  ==============  ====================================
limit                      default         environment override
=========================  ==============  ====================================
max_upload_bytes           2 GiB           ``ORIENTSCOPE_MAX_UPLOAD_MB``
max_molecules              2,000,000       ``ORIENTSCOPE_MAX_MOLECULES``
max_atoms_per_molecule     2,000           ``ORIENTSCOPE_MAX_ATOMS_PER_MOLECULE``
max_total_atoms            60,000,000      ``ORIENTSCOPE_MAX_TOTAL_ATOMS``
max_bad_fraction           0.05            (lenient mode only; see below)
max_archive_members        100,000
max_archive_ratio          250             uncompressed / compressed bytes
max_archive_bytes          8 GiB           total uncompressed archive content
max_prediction_rows        20,000,000      ``ORIENTSCOPE_MAX_PREDICTION_ROWS`` (model audits)
direct_export_max          200,000         ``ORIENTSCOPE_DIRECT_EXPORT_MAX``
=========================  ==============  ====================================

``direct_export_max`` is the largest dataset (in molecules) that ``GET
/api/datasets/{id}/export`` writes while the request waits; larger exports go
through the background job of ``POST /api/datasets/{id}/exports``.

Lenient mode (the default) skips a malformed record and counts it, but a file
whose malformed records exceed ``max_bad_fraction`` of all records fails: such
a file is broken rather than a large file with a stray bad record. Strict mode
fails on the first malformed record.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from orientscope.core.errors import OrientScopeError
from orientscope.core.settings import Settings, env_name, settings

MIB = 1024 * 1024
GIB = 1024 * MIB


UPLOAD_MB_ENV = env_name("max_upload_mb")
# The whole-number limits a setting overrides (the field has the setting's name): field -> variable.
COUNT_ENV = {
    name: env_name(name)
    for name in (
        "max_molecules",
        "max_atoms_per_molecule",
        "max_total_atoms",
        "max_prediction_rows",
        "direct_export_max",
    )
}


class LimitExceeded(OrientScopeError):
    """An upload or dataset is larger than a documented limit."""


def _exceeded(text: str, variable: str) -> LimitExceeded:
    return LimitExceeded(f"{text} (set {variable} to change it)")


@dataclass(frozen=True)
class Limits:
    max_upload_bytes: int = int(Settings.max_upload_mb * MIB)
    max_molecules: int = Settings.max_molecules
    max_atoms_per_molecule: int = Settings.max_atoms_per_molecule
    max_total_atoms: int = Settings.max_total_atoms
    max_bad_fraction: float = 0.05
    max_archive_members: int = 100_000
    max_archive_ratio: float = 250.0
    max_archive_bytes: int = 8 * GIB
    max_prediction_rows: int = Settings.max_prediction_rows
    direct_export_max: int = Settings.direct_export_max

    @classmethod
    def from_env(cls) -> Limits:
        """Defaults, overridden by the ``ORIENTSCOPE_MAX_*`` settings (read when called)."""
        current = settings()
        changes = {field: getattr(current, field) for field in COUNT_ENV}
        return replace(cls(), max_upload_bytes=int(current.max_upload_mb * MIB), **changes)

    def check_upload_bytes(self, n_bytes: int, what: str = "upload") -> None:
        if n_bytes > self.max_upload_bytes:
            text = f"{what} is larger than the upload limit of {self.max_upload_bytes:,} bytes"
            raise _exceeded(text, UPLOAD_MB_ENV)

    def check_molecules(self, n_molecules: int, source: str) -> None:
        if n_molecules > self.max_molecules:
            text = f"{source}: more than {self.max_molecules:,} molecules, the limit"
            raise _exceeded(text, COUNT_ENV["max_molecules"])

    def check_atoms(self, n_atoms: int, where: str) -> None:
        if n_atoms > self.max_atoms_per_molecule:
            text = f"{where}: {n_atoms:,} atoms in one molecule; the limit is {self.max_atoms_per_molecule:,}"
            raise _exceeded(text, COUNT_ENV["max_atoms_per_molecule"])

    def check_total_atoms(self, n_atoms: int, source: str) -> None:
        if n_atoms > self.max_total_atoms:
            text = f"{source}: more than {self.max_total_atoms:,} atoms in total, the limit"
            raise _exceeded(text, COUNT_ENV["max_total_atoms"])

    def check_prediction_rows(self, n_rows: int, source: str) -> None:
        if n_rows > self.max_prediction_rows:
            text = f"{source}: more than {self.max_prediction_rows:,} prediction rows, the limit"
            raise _exceeded(text, COUNT_ENV["max_prediction_rows"])
