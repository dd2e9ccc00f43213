"""A control that fails is loud: in real headless Chromium, the failed self-check stands above the verdict."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from tests.browser.chrome import serve
from tests.browser.pages import open_page, wait_for
from tests.constructed_stores import PARAMS, store_a_failing_control

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def failing_url(tmp_path_factory):
    data = tmp_path_factory.mktemp("failing-control")
    report = store_a_failing_control(data)
    assert report["control_check"]["passed"] is False and PARAMS["seed"] == report["seed"]
    with serve(data) as url:
        yield url, report


def test_the_failed_self_check_is_shown_above_the_verdict(driver, failing_url):
    url, report = failing_url
    open_page(driver, url + "/?dataset=forced")
    box = wait_for(lambda: driver.find_elements(By.ID, "verdict-warnings"), what="the self-check warning")[0]
    assert box.text == report["control_check"]["text"] and box.text.startswith("Control check failed")
    badge = driver.find_element(By.ID, "verdict-badge")  # the first screen's verdict; its sentences are collapsed
    assert badge.text.startswith(("Aligned", "Weakly aligned"))
    assert box.location["y"] + box.size["height"] <= badge.location["y"]  # read before the verdict
    line = box.find_element(By.CSS_SELECTOR, "p.warning")
    assert line.value_of_css_property("border-left-color") == "rgba(155, 28, 28, 1)"  # red, not the notes' orange
