"""The pinned comparison in real headless Chromium (frontend_assets/pins.js, app/pins.py): the molecule
panel's "Pin" button puts up to four molecules side by side under the map, each in one viewer that
switches between its stored and its canonical pose; a fifth is refused with a message; an unpin button
takes one off; the pins and their poses go into the URL ("1:c" a pin in its canonical pose) and come back on
reload and with the back button."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from selenium.webdriver.common.by import By

from orientscope.services.map_data import load_map_data
from tests.browser.pages import open_map, settle, text_of, wait_for

pytestmark = pytest.mark.browser

STRIP_JS = """
const s = document.getElementById('pin-strip');
if (!s) return null;
return {hidden: s.hidden, cards: Array.from(s.querySelectorAll('.pin-card')).map(c => {
  const v = c.querySelector('.pin-viewer'), cap = v.querySelector('.viewer-caption');
  return {molecule: c.dataset.molecule, pose: c.dataset.pose, drawn: v.dataset.molecule || null,
          drawnPose: v.dataset.pose || null, caption: cap ? cap.textContent : null,
          canvas: !!v.querySelector('canvas')};
})};
"""


def _pins_in_url(driver) -> list[str]:
    pins = parse_qs(urlparse(driver.current_url).query).get("pins", [""])[0]
    return [p for p in pins.split(",") if p]


def _strip(driver) -> list[dict]:
    return driver.execute_script(STRIP_JS)["cards"]


def _drawn(driver, ids: list[str], poses: list[str]) -> list[dict]:
    """The strip once it shows ``ids`` in that order, each in its pose of ``poses`` and drawn in it.

    The poses are part of the wait: after a pose toggle the card shows the same molecule, so waiting for the
    ids alone would return the old drawing at once.
    """
    return wait_for(
        lambda: (
            (cards := _strip(driver))
            and [c["molecule"] for c in cards] == ids
            and [c["pose"] for c in cards] == poses
            and all(c["drawn"] == c["molecule"] and c["drawnPose"] == c["pose"] and c["canvas"] for c in cards)
            and cards
        ),
        what=f"pins {ids} drawn in the poses {poses}",
    )


FIRST = "338"  # of the 400-molecule QM9 subset, an asymmetric molecule: its frame is full


def _message(driver) -> str:
    return driver.execute_script("return document.getElementById('pin-message').textContent")


def _open_a_neighbour(driver, besides: list[str]) -> str:
    """Click the first neighbour of the open molecule that is not in ``besides``; its id once it is open."""
    buttons = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#molecule-extra .link-button"), what="neighbours")
    for b in buttons:
        mol = b.text.split(" · ")[0]
        if mol not in besides:
            b.click()
            wait_for(lambda m=mol: text_of(driver, "molecule-id") == m, what=f"molecule {mol} to open")
            return mol
    pytest.fail(f"every neighbour is pinned already: {besides}")


def test_pin_four_toggle_a_pose_refuse_a_fifth_unpin_and_round_trip_the_url(driver, base_url):
    # 338, not methane (1): a molecule with a full frame has pose neighbours; a spherical top has none
    open_map(driver, base_url + f"/?dataset=qm9&view=map&molecule={FIRST}")
    wait_for(lambda: text_of(driver, "molecule-id") == FIRST, what=f"molecule {FIRST} to open")
    assert driver.execute_script(STRIP_JS)["hidden"]  # no pins: no strip
    driver.find_element(By.ID, "pin-molecule").click()
    cards = _drawn(driver, [FIRST], ["stored"])
    assert cards[0]["caption"].startswith("stored pose") and _message(driver) == ""
    wait_for(lambda: _pins_in_url(driver) == [FIRST], what="the pin in the URL")
    # the pose toggle redraws that viewer in the canonical pose
    driver.find_element(By.CSS_SELECTOR, "#pin-strip .pin-card .pin-pose").click()
    cards = _drawn(driver, [FIRST], ["canonical"])
    assert cards[0]["caption"].startswith("canonical pose")
    wait_for(lambda: _pins_in_url(driver) == [FIRST + ":c"], what="the pose in the URL")
    pinned = [FIRST]
    while len(pinned) < 4:
        pinned.append(_open_a_neighbour(driver, pinned))
        driver.find_element(By.ID, "pin-molecule").click()
        _drawn(driver, pinned, ["canonical"] + ["stored"] * (len(pinned) - 1))
    in_url = [FIRST + ":c", *pinned[1:]]
    wait_for(lambda: _pins_in_url(driver) == in_url, what="four pins in the URL")
    # a fifth is refused, with a message, and changes nothing
    fifth = _open_a_neighbour(driver, pinned)
    driver.find_element(By.ID, "pin-molecule").click()
    message = wait_for(lambda: (m := _message(driver)) and "At most 4" in m and m, what="the refusal")
    assert fifth in message
    settle(driver)  # the refusal's callback has answered: the pins would have changed by now
    assert [c["molecule"] for c in _strip(driver)] == pinned and _pins_in_url(driver) == in_url
    # unpin the second: the others stay, in order, and the URL follows
    driver.find_elements(By.CSS_SELECTOR, "#pin-strip .pin-card .pin-remove")[1].click()
    left = [pinned[0], *pinned[2:]]
    _drawn(driver, left, ["canonical", "stored", "stored"])
    wait_for(lambda: _pins_in_url(driver) == [in_url[0], *in_url[2:]], what="the unpin in the URL")
    # the back button brings the fourth pin back; a reload of the URL shows the same pins in the same poses
    driver.back()
    wait_for(lambda: _pins_in_url(driver) == in_url, what="the URL before the unpin")
    _drawn(driver, pinned, ["canonical", "stored", "stored", "stored"])
    open_map(driver, driver.current_url)
    cards = _drawn(driver, pinned, ["canonical", "stored", "stored", "stored"])
    assert cards[0]["caption"].startswith("canonical pose")
    # a pose toggle is a step of the history: back shows the pin in its pose before
    driver.find_elements(By.CSS_SELECTOR, "#pin-strip .pin-card .pin-pose")[2].click()
    wait_for(lambda: _pins_in_url(driver) == [*in_url[:2], pinned[2] + ":c", in_url[3]], what="the toggle in the URL")
    _drawn(driver, pinned, ["canonical", "stored", "canonical", "stored"])
    driver.back()
    wait_for(lambda: _pins_in_url(driver) == in_url, what="the URL before the toggle")
    _drawn(driver, pinned, ["canonical", "stored", "stored", "stored"])


def test_a_url_with_more_than_four_pins_keeps_four_and_says_so(driver, base_url, qm9_store):
    ids = [str(i) for i in load_map_data(qm9_store, "qm9").ids[:5]]
    open_map(driver, base_url + "/?dataset=qm9&view=map&pins=" + ",".join(ids))
    _drawn(driver, ids[:4], ["stored"] * 4)
    assert _pins_in_url(driver) == ids[:4]
    messages = wait_for(lambda: driver.find_element(By.ID, "messages").text, what="the warning")
    assert "at most 4" in messages
