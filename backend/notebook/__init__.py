"""The Python API: verb-first functions over plain data (see docs/python.md).

A thin facade over the pipeline and the services that the CLI and the REST API use; it holds no science.
Re-exported lazily by ``orientscope`` itself, so ``import orientscope`` stays light.
"""

from orientscope.notebook.audit import ModelAudit, PredictError, assert_pose_robust, audit_model
from orientscope.notebook.batches import Batch, Poses, rotated_copies
from orientscope.notebook.canonical import Canonical, canonicalize
from orientscope.notebook.compare import AuditComparison, compare_audits, sweep
from orientscope.notebook.datasets import Dataset, from_arrays, from_ase, from_pyg, load, read
from orientscope.notebook.reports import Report, report
from orientscope.notebook.samples import sample_path

__all__ = [
    "AuditComparison", "Batch", "Canonical", "Dataset", "ModelAudit", "Poses", "PredictError", "Report",
    "assert_pose_robust", "audit_model", "canonicalize", "compare_audits", "from_arrays", "from_ase", "from_pyg",
    "load", "read", "report", "rotated_copies", "sample_path", "sweep",
]  # fmt: skip
