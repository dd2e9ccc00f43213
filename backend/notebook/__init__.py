"""The Python API: verb-first functions over plain data (see docs/python.md).

A thin facade over the pipeline and the services that the CLI and the REST API use; it holds no science.
Re-exported lazily by ``orientscope`` itself, so ``import orientscope`` stays light.
"""

from orientscope.notebook.audit import Batch, ModelAudit, PredictError, audit_model
from orientscope.notebook.datasets import Dataset, from_arrays, from_ase, from_pyg, load, read
from orientscope.notebook.reports import Report, report

__all__ = [
    "Batch", "Dataset", "ModelAudit", "PredictError", "Report",
    "audit_model", "from_arrays", "from_ase", "from_pyg", "load", "read", "report",
]  # fmt: skip
