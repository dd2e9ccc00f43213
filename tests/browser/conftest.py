"""Fixtures for real-browser tests: the dashboard served against the small QM9 store, and headless Chromium."""

from __future__ import annotations

import os
import re

import pytest

from tests.browser.chrome import chromium_available, console_errors, make_driver, quit_driver, serve
from tests.browser.pages import BUDGET

# Set by .ci/run (CI=true is also set by most CI runners): there the browser tests must run, not skip.
CI_ENVS = ("ORIENTSCOPE_CI", "CI")
NO_CHROMIUM = "needs /usr/bin/chromium and /usr/bin/chromedriver (apt-get install chromium chromium-driver)"


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(autouse=True)
def no_console_errors(request):
    """Every browser test fails on any console error or failed request of any browser it drove
    (crystaltoolkit's rule), whether it used the module's ``driver`` or made its own.

    A test that provokes an error on purpose declares it: ``@pytest.mark.console_errors(pattern, ...)``,
    regular expressions searched in the messages; each must match one, and nothing else may occur.
    Errors logged before the test starts (a module fixture's page, the previous test's page still
    answering) are the previous step's: they fail this test's setup.
    """
    before = console_errors()
    if before:
        pytest.fail("console errors before this test started:\n" + "\n".join(before))
    yield
    found = console_errors()
    expected = [re.compile(p) for mark in request.node.iter_markers("console_errors") for p in mark.args]
    unexpected = [m for m in found if not any(p.search(m) for p in expected)]
    missing = [p.pattern for p in expected if not any(p.search(m) for m in found)]
    if unexpected or missing:
        lines = [f"unexpected: {m}" for m in unexpected] + [f"declared but not logged: {p}" for p in missing]
        pytest.fail("the browser's console:\n" + "\n".join(lines))


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
def image_url(qm9_store):
    """The dashboard with a point budget below the store's points: the whole map is an image."""
    with serve(qm9_store, env={"ORIENTSCOPE_MAP_POINT_BUDGET": str(BUDGET)}) as url:
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
def without_scripts(driver, request):
    """The module's browser with every script file of Dash blocked: only the page HTML runs (its inline start of
    Dash then fails in the console, declared here)."""
    request.node.add_marker(pytest.mark.console_errors("DashRenderer is not defined"))
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/_dash-component-suites/*", "*/assets/*.js*"]})
    yield driver
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
