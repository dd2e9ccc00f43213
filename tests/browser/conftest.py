"""Fixtures for real-browser tests: the dashboard served against the small QM9 store, and headless Chromium."""

from __future__ import annotations

import pytest

from tests.browser.chrome import chromium_available, make_driver, quit_driver, serve


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="module")
def base_url(qm9_store):
    with serve(qm9_store) as url:
        yield url


@pytest.fixture(scope="module")
def writable_url(qm9_store, tmp_path_factory):
    """The dashboard over a private copy of the store, for tests that upload."""
    import shutil

    data_dir = tmp_path_factory.mktemp("writable") / "data"
    shutil.copytree(qm9_store, data_dir)
    with serve(data_dir) as url:
        yield url


@pytest.fixture(scope="module")
def download_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def driver(download_dir):
    if not chromium_available():
        pytest.skip("needs /usr/bin/chromium and /usr/bin/chromedriver (apt-get install chromium chromium-driver)")
    drv = make_driver(download_dir)
    yield drv
    quit_driver(drv)
