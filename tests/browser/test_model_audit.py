"""The "Model audit" section in real headless Chromium: upload a predictions file, read the table."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from orientscope.store.datasets import load_dataset
from tests.harness import wait_until


def test_upload_predictions_then_the_table_shows_the_verdict(driver, writable_url, qm9_store, tmp_path):
    mols = load_dataset(qm9_store, "qm9")
    gap = mols.properties["gap"].to_numpy()
    path = tmp_path / "predictions.csv"  # an invariant model: the same prediction for every pose
    path.write_text(
        "id,property,stored,rotated\n" + "".join(f"{i},gap,{g},{g}\n" for i, g in zip(mols.ids, gap, strict=True))
    )
    driver.get(f"{writable_url}/?dataset=qm9")
    wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, "#audit-file input[type=file]"))[0].send_keys(str(path))
    wait_until(lambda: "predictions.csv" in driver.find_element(By.ID, "audit-drop-text").text)
    driver.find_element(By.ID, "audit-name").send_keys("page model")
    driver.find_element(By.ID, "audit-submit").click()
    status = driver.find_element(By.ID, "audit-status")
    wait_until(lambda: status.text.startswith(("done", "failed", "Refused")))
    assert status.text.startswith("done"), status.text
    table = driver.find_element(By.ID, "audit-table")
    wait_until(lambda: "invariant" in table.text)
    assert "gap" in table.text and "pose alone predicts" in table.text and "rotation shift median" in table.text
    assert "Invariant" in driver.find_element(By.ID, "audit-text").text
    assert "Tiers by audit rule 3 (margin ±1.0 %" in driver.find_element(By.ID, "audit-text").text


STATUS_LOG_JS = """
window.__status = [];
const status = document.getElementById('audit-status');
new MutationObserver(() => window.__status.push(status.textContent))
  .observe(status, {subtree: true, childList: true, characterData: true});
"""


def test_a_second_audit_never_shows_the_first_ones_done_message(driver, writable_url, qm9_store, tmp_path):
    """Issue 40: while the second file was sent, the status still read the first audit's "done"."""
    mols = load_dataset(qm9_store, "qm9")
    gap = mols.properties["gap"].to_numpy()
    driver.get(f"{writable_url}/?dataset=qm9")
    status = wait_until(lambda: driver.find_elements(By.ID, "audit-status"))[0]
    done = []
    for k in range(2):
        path = tmp_path / f"predictions{k}.csv"
        path.write_text(
            "id,property,stored,rotated\n"
            + "".join(f"{i},gap,{g},{g + k}\n" for i, g in zip(mols.ids, gap, strict=True))
        )
        upload = wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, "#audit-file input[type=file]"))[0]
        upload.send_keys(str(path))
        wait_until(lambda p=path: p.name in driver.find_element(By.ID, "audit-drop-text").text)
        driver.execute_script(STATUS_LOG_JS)
        driver.find_element(By.ID, "audit-submit").click()
        # the status read once per poll: read twice, the old "done" and then "sending …" once passed as a new end
        ended = wait_until(lambda: (t := status.text).startswith(("done", "failed", "Refused")) and t not in done and t)
        done.append(ended)
        shown = driver.execute_script("return window.__status")
        # from the click on, the status says what this audit does: first that its file is on its way
        assert shown[0] == f"sending {path.name}…", shown
    # the statuses in the message: a failed or refused audit says why (a CI run once ended here with no reason)
    assert all(text.startswith("done: audit ") for text in done) and done[0] != done[1], done
