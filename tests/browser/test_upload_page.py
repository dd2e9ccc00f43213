"""The upload page in real headless Chromium: choose a file, upload, follow the job to done."""

from __future__ import annotations

import json
import urllib.request

import numpy as np
from selenium.webdriver.common.by import By

from orientscope.loaders.extxyz import write_extxyz
from tests.browser.chrome import serve
from tests.harness import wait_until


def test_upload_runs_the_pipeline_with_a_progress_bar(driver, writable_url, qm9_small, tmp_path):
    path = tmp_path / "page.extxyz"
    write_extxyz(path, qm9_small.subset(np.arange(80)))
    driver.get(f"{writable_url}/upload")
    page = wait_until(lambda: driver.find_elements(By.ID, "upload-page"))[0]
    wait_until(page.is_displayed)
    wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, "#upload-file input[type=file]"))[0].send_keys(str(path))
    wait_until(lambda: "page.extxyz" in driver.find_element(By.ID, "upload-drop-text").text)
    driver.find_element(By.ID, "upload-name").send_keys("From the page")
    driver.find_element(By.ID, "upload-submit").click()
    status = driver.find_element(By.ID, "upload-status")
    wait_until(lambda: status.text.startswith(("done", "failed")))
    assert status.text.startswith("done"), status.text
    assert driver.find_element(By.ID, "upload-progress").get_attribute("value") == "100"
    link = driver.find_element(By.ID, "upload-open")
    assert link.is_displayed() and link.get_attribute("href").endswith("/?dataset=from-the-page")
    with urllib.request.urlopen(f"{writable_url}/api/datasets/from-the-page") as r:
        assert json.load(r)["n_molecules"] == 80
    # the dataset list knows the new set without a reload
    driver.find_element(By.ID, "dataset-select").click()
    wait_until(
        lambda: [
            e for e in driver.find_elements(By.XPATH, "//*[contains(text(), 'From the page')]") if e.is_displayed()
        ]
    )


def test_upload_page_is_absent_when_read_only(driver, qm9_store):
    with serve(qm9_store, read_only=True) as url:
        driver.get(f"{url}/upload")
        wait_until(lambda: driver.find_elements(By.ID, "verdict"))
        assert driver.find_elements(By.ID, "upload-page") == []
        assert not driver.find_element(By.ID, "upload-link").is_displayed()


def test_upload_page_reads_cleanly_and_a_tiny_upload_lists_its_skipped_stages(driver, writable_url, tmp_path):
    from tests.molecules import WATER_METHANE_FORMALDEHYDE_XYZ

    driver.get(f"{writable_url}/upload")
    page = wait_until(lambda: driver.find_elements(By.ID, "upload-page"))[0]
    wait_until(page.is_displayed)
    assert "`" not in page.text and "orientscope ingest" in page.text
    button = driver.find_element(By.ID, "upload-submit")
    assert "button" in button.get_attribute("class").split()
    assert driver.execute_script("return getComputedStyle(arguments[0]).backgroundColor", button) == "rgb(0, 114, 178)"
    path = tmp_path / "three.xyz"
    path.write_text(WATER_METHANE_FORMALDEHYDE_XYZ)
    driver.find_element(By.CSS_SELECTOR, "#upload-file input[type=file]").send_keys(str(path))
    driver.find_element(By.ID, "upload-name").send_keys("three small")
    button.click()
    status = driver.find_element(By.ID, "upload-status")
    wait_until(lambda: status.text.startswith(("done", "failed")))
    assert status.text.startswith("done"), status.text
    # The status says in words what was not computed and why, not an API field name.
    assert "skipped_stages" not in status.text and "not computed: " in status.text, status.text
    assert "statistics" in status.text and "got 3" in status.text, status.text
    driver.find_element(By.ID, "upload-open").click()
    box = wait_until(lambda: [e for e in driver.find_elements(By.ID, "skipped-stages") if e.is_displayed()])[0]
    assert "statistics" in box.text and "got 3" in box.text and "models" in box.text
    # No empty log axis (10^-1 to 10^4) posing as a histogram: a note says why there is none.
    hist = wait_until(
        lambda: driver.execute_script(
            "var gd = document.querySelector('#angle-histogram .js-plotly-plot');"
            "return gd && gd.layout && gd.layout.annotations ? "
            "{n: gd.data.length, y: gd.layout.yaxis.visible, notes: gd.layout.annotations.map(a => a.text)} : null"
        )
    )
    assert hist["n"] == 0 and hist["y"] is False, hist
    assert any("Too few molecules" in note for note in hist["notes"]), hist


def test_a_failed_upload_turns_its_progress_bar_red_and_says_failed(driver, writable_url, tmp_path):
    path = tmp_path / "nan.xyz"
    path.write_bytes(b"3\nw\nO nan 0 0\nH 1 0 0\nH 0 1 0\n")  # accepted, then refused by the job
    driver.get(f"{writable_url}/upload")
    wait_until(lambda: driver.find_elements(By.ID, "upload-page"))
    wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, "#upload-file input[type=file]"))[0].send_keys(str(path))
    wait_until(lambda: "nan.xyz" in driver.find_element(By.ID, "upload-drop-text").text)
    driver.find_element(By.ID, "upload-name").send_keys("bad coordinates")
    driver.find_element(By.ID, "upload-submit").click()
    status = driver.find_element(By.ID, "upload-status")
    wait_until(lambda: status.text.startswith(("done", "failed")))
    assert status.text.startswith("failed") and "NaN" in status.text, status.text
    bar = driver.find_element(By.ID, "upload-progress")
    wait_until(lambda: "upload-failed" in bar.get_attribute("class"))
    assert bar.get_attribute("value") == "100" and bar.get_attribute("title") == "failed"
    accent = driver.execute_script("return getComputedStyle(arguments[0]).accentColor", bar)
    assert accent == "rgb(192, 57, 43)", accent


def test_an_upload_read_differently_from_its_file_says_so_on_the_page(driver, writable_url, tmp_path):
    """Renamed ids and properties, and D read as hydrogen, are in the status the page shows when the job is done."""
    from tests.molecules import READ_DIFFERENTLY

    path = tmp_path / "odd.extxyz"
    path.write_text(READ_DIFFERENTLY)
    driver.get(f"{writable_url}/upload")
    page = wait_until(lambda: driver.find_elements(By.ID, "upload-page"))[0]
    wait_until(page.is_displayed)
    wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, "#upload-file input[type=file]"))[0].send_keys(str(path))
    wait_until(lambda: "odd.extxyz" in driver.find_element(By.ID, "upload-drop-text").text)
    driver.find_element(By.ID, "upload-name").send_keys("read differently")
    driver.find_element(By.ID, "upload-submit").click()
    status = driver.find_element(By.ID, "upload-status")
    wait_until(lambda: status.text.startswith(("done", "failed")))
    assert status.text.startswith("done"), status.text
    assert "3 warning(s): " in status.text, status.text
    assert "'n_atoms' → 'prop_n_atoms'" in status.text and "'A_dup1' (CH4)" in status.text
    assert "read as hydrogen" in status.text
