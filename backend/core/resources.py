"""Files the server reads (browser assets, Swagger UI), found as package data of ``orientscope``.

They ship inside the wheel, so a non-editable install serves the same dashboard as a checkout.
"""

from __future__ import annotations

import importlib
from importlib import resources
from pathlib import Path


def package_path(*parts: str) -> Path:
    """A file or folder of the installed ``orientscope`` package, as a filesystem path.

    The package is always installed unzipped (wheel or editable), so the traversable is a real path,
    which Dash's assets folder and Starlette's StaticFiles need.
    """
    return Path(str(resources.files("orientscope").joinpath(*parts)))


def frontend_asset(name: str = "") -> Path:
    """``frontend_assets/NAME`` (the folder itself when no name is given)."""
    return package_path("frontend_assets", name) if name else package_path("frontend_assets")


class LazyModule:
    """A module imported at its first attribute access: for heavy imports (the pipeline's scikit-learn,
    RDKit and SciPy; datashader's 1.5 s) that a server start, the CLI or the tests need not pay up front."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)


# scipy.stats takes about half a second to import. The science modules that need it (the verdict, the model
# audit, the KS test) are imported by every report reader, the server's routes included, before the server
# answers; they reach it through this handle, which imports it on first use.
scipy_stats = LazyModule("scipy.stats")
# The axial effect size's root-finder and special functions (science.axial), on first use likewise.
scipy_optimize = LazyModule("scipy.optimize")
scipy_special = LazyModule("scipy.special")
