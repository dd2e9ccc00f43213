"""OrientScope: is your molecular dataset aligned?

``import orientscope`` loads nothing heavy: the Python API (``orientscope.read``, ``report``,
``audit_model``, ``rotated_copies``, ``canonicalize``, ... from :mod:`orientscope.notebook`) is imported on
first use.
"""

__version__ = "0.1.0"

# name -> the module that defines it
_API = {
    "read": "datasets", "from_arrays": "datasets", "from_ase": "datasets", "from_pyg": "datasets",
    "load": "datasets", "Dataset": "datasets", "report": "reports", "Report": "reports",
    "audit_model": "audit", "ModelAudit": "audit", "PredictError": "audit", "assert_pose_robust": "audit",
    "Batch": "batches", "Poses": "batches", "rotated_copies": "batches",
    "canonicalize": "canonical", "Canonical": "canonical",
    "compare_audits": "compare", "sweep": "compare", "AuditComparison": "compare",
    "sample_path": "samples",
}  # fmt: skip
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'orientscope' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"orientscope.notebook.{_API[name]}"), name)


def __dir__() -> list[str]:
    return sorted(__all__)
