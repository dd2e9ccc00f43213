"""The controls say what they did, in real headless Chromium: the last shown axis cannot be unticked (with a
hint), and an unknown colour in the URL is named and replaced by the axis colouring."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from tests.browser.chrome import map_drawn
from tests.browser.pages import settle, text_of, wait_for


def _box(driver, axis: str):
    return driver.find_element(By.CSS_SELECTOR, f'#axes-select input[value="{axis}"]')


def test_the_last_shown_axis_cannot_be_unticked_and_says_why(driver, base_url):
    driver.get(base_url + "/?dataset=qm9&view=map")
    wait_for(lambda: map_drawn(driver), what="the map")
    settle(driver)
    for axis in ("2", "3"):
        _box(driver, axis).click()
        # the URL read once per poll
        wait_for(lambda a=axis: "axes=" in (u := driver.current_url) and a not in u.split("axes=")[1][:3],
                 what=f"axis {axis} to go")  # fmt: skip
    wait_for(lambda: not _box(driver, "1").is_enabled(), what="the last axis to be locked")
    assert "at least one axis" in text_of(driver, "axes-hint")
    assert _box(driver, "1").is_selected()
    wait_for(lambda: (m := map_drawn(driver)) and m["drawn"] > 0, what="the map of axis 1")
    _box(driver, "2").click()  # a second axis back: both can be unticked again
    wait_for(lambda: _box(driver, "1").is_enabled(), what="axis 1 to be free")
    assert text_of(driver, "axes-hint") == ""


def test_an_unknown_colour_in_the_url_is_named_and_the_map_coloured_by_axis(driver, base_url):
    driver.get(base_url + "/?dataset=qm9&view=map&color=prop:nope")
    wait_for(lambda: map_drawn(driver), what="the map")
    wait_for(lambda: "Unknown colour 'prop:nope'" in text_of(driver, "messages"), what="the warning")
    assert "axis" in driver.find_element(By.ID, "color-by").text


def test_chemistry_neighbours_leave_out_unrelated_molecules(driver, base_url):
    driver.get(base_url + "/?dataset=qm9&view=map&molecule=1")  # methane shares no fingerprint bit with the rest
    extra = wait_for(lambda: text_of(driver, "molecule-extra"), what="the neighbour lists")
    assert "Tanimoto 0.00" not in extra and "no molecule shares a fingerprint bit" in extra
    # a spherical top has no pose to be near: no pose neighbours, and the note says why
    assert "no full frame" in extra and "°" not in extra


NOTES_PROBE_JS = """
const notes = document.getElementById('map-notes');
window.__notes = [];
new MutationObserver(() => window.__notes.push(notes.textContent)).observe(notes, {subtree: true, childList: true,
                                                                             characterData: true});
"""


def test_a_new_smarts_pattern_says_it_is_searching_and_clears_the_last_patterns_error(driver, base_url):
    from selenium.webdriver.common.keys import Keys

    driver.get(base_url + "/?dataset=qm9&view=map&smarts=C(")
    wait_for(lambda: "SMARTS pattern not used" in text_of(driver, "map-notes"), what="the bad pattern's error")
    settle(driver)
    driver.execute_script(NOTES_PROBE_JS)
    box = driver.find_element(By.ID, "smarts")
    box.clear()
    box.send_keys("C=O", Keys.ENTER)
    wait_for(lambda: "smarts=C%3DO" in driver.current_url, what="the new pattern")
    wait_for(lambda: "SMARTS pattern not used" not in text_of(driver, "map-notes"), what="the error to go")
    seen = driver.execute_script("return window.__notes")
    # every change after the new pattern: the old error never shows again, and the search says it is searching
    # (clearing the box may first empty the notes, depending on how fast the page answers each keystroke)
    assert any("Searching for C=O…" in text for text in seen), seen
    assert not any("SMARTS pattern not used" in text for text in seen), seen
