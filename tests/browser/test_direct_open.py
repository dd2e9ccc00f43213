"""A dataset page opened directly or reloaded shows what the API shows, in real headless Chromium: the
server keeps finished layouts per page URL, and a model audit added since must not be hidden by one."""

from __future__ import annotations

import json
import urllib.request
import uuid

from selenium.webdriver.common.by import By

from orientscope.store.datasets import load_dataset
from tests.browser.pages import wait_for
from tests.harness import wait_until


def _post_audit(base: str, csv: str, name: str) -> dict:
    boundary = uuid.uuid4().hex
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\n{name}\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="predictions.csv"\r\n'
        f"Content-Type: text/csv\r\n\r\n{csv}\r\n--{boundary}--\r\n"
    ).encode()
    request = urllib.request.Request(
        base + "/api/datasets/qm9/model-audits",
        data=body,
        method="POST",
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    with urllib.request.urlopen(request, timeout=60) as r:
        return json.load(r)


def _audits(base: str) -> list[dict]:
    with urllib.request.urlopen(base + "/api/datasets/qm9/model-audits", timeout=30) as r:
        return json.load(r)


def test_an_audit_added_after_the_page_was_served_is_listed_when_it_is_opened_again(driver, writable_url, qm9_store):
    page = f"{writable_url}/?dataset=qm9&view=map"
    driver.get(page)  # the server now keeps this page's layout
    options = lambda: driver.find_element(By.ID, "audit-select").text  # noqa: E731
    wait_for(lambda: "no audit of this dataset yet" in options(), what="the empty audit list")
    mols = load_dataset(qm9_store, "qm9")
    gap = mols.properties["gap"].to_numpy()
    csv = "id,property,stored,rotated\n" + "".join(f"{i},gap,{g},{g}\n" for i, g in zip(mols.ids, gap, strict=True))
    accepted = _post_audit(writable_url, csv, "direct open model")
    done = lambda: any(a["id"] == accepted["audit_id"] and a["state"] == "done" for a in _audits(writable_url))  # noqa: E731
    wait_until(done, timeout_s=120, what="the audit to be done", poll_s=0.5)
    driver.get(page)  # opened again (a reload, a bookmark): the audit is listed
    wait_for(lambda: "direct open model" in options(), what="the new audit in the list")
