"""The Python API: verb-first functions over plain data (see docs/python.md).

A thin facade over the pipeline and the services that the CLI and the REST API use; it holds no science.
Re-exported lazily by ``orientscope`` itself, so ``import orientscope`` stays light. Each name is imported
with its own module on first use (``orientscope.load`` does not import the report's stages, nor
``orientscope.audit_model`` the dashboard's figures).
"""

from orientscope import _API

__all__ = sorted(_API)


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'orientscope.notebook' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"orientscope.notebook.{_API[name]}"), name)


def __dir__() -> list[str]:
    return __all__
