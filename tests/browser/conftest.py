"""Fixtures for real-browser tests: the dashboard served against the small QM9 store, and headless Chromium."""

from __future__ import annotations

import os

import pytest

from tests.browser.chrome import chromium_available, make_driver, quit_driver, serve

# Set by .ci/run (CI=true is also set by most CI runners): there the browser tests must run, not skip.
CI_ENVS = ("ORIENTSCOPE_CI", "CI")
NO_CHROMIUM = "needs /usr/bin/chromium and /usr/bin/chromedriver (apt-get install chromium chromium-driver)"


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


def under_ci() -> bool:
    return any(os.environ.get(name, "").lower() not in ("", "0", "false", "no") for name in CI_ENVS)


def require_chromium() -> None:
    """Skip on a machine without Chromium; under CI fail, so that CI cannot pass having run no browser test."""
    if not chromium_available():
        if under_ci():
            pytest.fail(f"{NO_CHROMIUM}; under CI ({' or '.join(CI_ENVS)} set) the browser tests must run")
        pytest.skip(NO_CHROMIUM)


@pytest.fixture(scope="module", autouse=True)
def chromium():
    """Every browser test needs Chromium (autouse: set up before the module's other fixtures, such as ``driver``)."""
    require_chromium()


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
    drv = make_driver(download_dir)
    yield drv
    quit_driver(drv)


@pytest.fixture
def without_scripts(driver):
    """The module's browser with every script file of Dash blocked: only the page HTML runs."""
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/_dash-component-suites/*", "*/assets/*.js*"]})
    yield driver
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
