"""Without Chromium the browser tests skip on a developer's machine and fail under CI (.ci/run sets ORIENTSCOPE_CI)."""

from __future__ import annotations

import pytest

from tests.browser import conftest


@pytest.fixture
def no_chromium(monkeypatch):
    monkeypatch.setattr(conftest, "chromium_available", lambda: False)
    for name in conftest.CI_ENVS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_without_chromium_a_browser_test_skips(no_chromium):
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
        conftest.require_chromium()


@pytest.mark.parametrize(("name", "value"), [("ORIENTSCOPE_CI", "1"), ("CI", "true")])
def test_without_chromium_under_ci_a_browser_test_fails(no_chromium, name, value):
    no_chromium.setenv(name, value)
    with pytest.raises(pytest.fail.Exception, match="must run"):
        conftest.require_chromium()


def test_a_false_ci_variable_is_not_ci(no_chromium):
    no_chromium.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception):
        conftest.require_chromium()
