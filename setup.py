"""Maps backend/ onto the one import package ``orientscope``; the metadata lives in pyproject.toml.

backend/app and backend/frontend_assets are links to the top-level app/ and frontend_assets/, so the
dashboard installs as ``orientscope.app`` and its browser assets as package data.
"""

from setuptools import find_packages, setup

setup(
    package_dir={"orientscope": "backend"},
    packages=["orientscope", *(f"orientscope.{name}" for name in find_packages("backend"))],
)
