"""Every number in every sentence about alignment agrees with the field shown beside it (issue 40).

The grid (``tests/sentences.py``): QM9 subsets of 3, 30 and 300 molecules, the 300 Haar-rotated, 30
turned to one pose, and full-QM9-like reports; the sentences: the verdict and its badge, the control's,
the headline, each test's line, the notebook card, the CLI, the KL scale and the compare view.
"""

from __future__ import annotations

import re

import pytest

from orientscope.services.report_format import evidence_figures
from tests.sentences import GRID, PAIRS, Said, compare_sentences, problems, sentences


@pytest.mark.parametrize("name", GRID)
def test_every_number_in_every_sentence_agrees_with_its_field(sentence_grid, name):
    said = sentences(sentence_grid[name])
    assert {s.surface for s in said} >= {"verdict", "badge", "headline strength", "CLI verdict"}
    found = [p for s in said for p in problems(s)]
    assert found == []


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_the_compare_view_shows_every_figure_it_names(sentence_grid, a, b):
    (said,) = compare_sentences(sentence_grid[a], sentence_grid[b])
    assert problems(said) == []
    if sentence_grid[a]["n_molecules"] != sentence_grid[b]["n_molecules"]:
        # never "compare their KL at n below" when KL at n is not shown: its figures are in the sentence
        assert "below" not in said.text
        both = all(((sentence_grid[x].get("kl_at_n") or {}).get("value") is not None) for x in (a, b))
        assert ("compares them: A " in said.text) == both and ("--limit" in said.text) != both


@pytest.mark.parametrize("name", GRID)
def test_the_words_agree_with_the_verdict(sentence_grid, name):
    report = sentence_grid[name]
    for said in sentences(report):
        if said.surface not in ("verdict", "headline answer", "CLI verdict"):
            continue
        v = said.figures["verdict"]
        problems(said)  # fills said.facts: the tests it cites, the sizes and their words
        evidence = {e["test"]: e for e in v["evidence"]}
        assert all(evidence[t]["rejects"] for t in said.facts.get("cited", [])), said.text
        assert not any(t in said.text for t in (v.get("not_tests") or {}).get("tests", [])), said.text
        prefix = {"aligned": "Aligned:", "weakly_aligned": "Weakly aligned:", "not_detected": "Not detected:"}
        assert said.text.startswith(prefix.get(v["code"], ("Too few", "Not tested"))), said.text
        effect = {
            "strong": "The effect is strong: ",
            "small": "The effect is small",
            "uncertain": "effect size is uncertain",
        }
        assert all((phrase in said.text) == (v["effect"] == e) for e, phrase in effect.items()), said.text
    for said in sentences(report):
        if said.surface == "headline strength":
            problems(said)
            negative = any(x.startswith("-") for x in said.facts.get("kl_shown", []))
            assert ("An estimate below 0 is noise" in said.text) == negative, said.text


def test_the_grid_reads_as_the_truths_behind_it(sentence_grid):
    badge = {name: sentence_grid[name]["verdict"]["badge"] for name in GRID}
    assert badge["qm9-3"] == "Too few molecules" and badge["qm9-30"] == "Not detected"
    assert badge["haar-300"] == "Not detected" and sentence_grid["haar-300"]["verdict"]["effect"] is None
    # QM9's own poses: strong, and the classifier that did not pass is never the evidence
    assert badge["qm9-300"] == "Aligned — strong effect" and badge["full-qm9"] == "Aligned — strong effect"
    # 30 molecules turned to one pose: KL about 2 [1.5, 3] at N = 30 is strong, not "weakly" by its size; N counts
    # the molecules with a full frame, the only ones in the SO(3) statistics
    one_pose = sentence_grid["one-pose-30"]["verdict"]
    full = one_pose["orientation"]["full"]
    assert 25 <= full <= 30 and badge["one-pose-30"] == "Aligned — strong effect"
    assert f"at N = {full} lies above" in one_pose["text"]
    assert badge["across-the-bar"] == "Aligned — effect size uncertain" and badge["small-effect"] == "Weakly aligned"
    for name in GRID:  # the control, the same molecules Haar-rotated, is never detected
        assert sentence_grid[name]["control"].get("verdict", {}).get("code") in (None, "not_detected", "too_few")


def test_the_check_catches_a_wrong_number_a_stray_number_and_words_that_contradict_the_numbers(sentence_grid):
    report = sentence_grid["qm9-300"]
    text = report["verdict"]["text"]
    assert problems(Said("verdict", text, report)) == []
    # a KL estimate that is not the field's
    kl = re.search(r"KL (\d\.\d\d)", text).group(1)
    wrong = text.replace(f"KL {kl}", f"KL {float(kl) + 0.05:.2f}")
    assert any("KL" in p for p in problems(Said("verdict", wrong, report)))
    # a number no clause accounts for
    assert any("no clause" in p for p in problems(Said("verdict", text + " It took 3 s.", report)))
    # "lies above" beside a bound below the bar
    across = sentence_grid["across-the-bar"]
    lie = across["verdict"]["text"].replace("straddles", "lies above")
    assert any("lies above" in p for p in problems(Said("verdict", lie, across)))
    # a test cited as evidence that did not reject (issue 40's frame classifier: Holm p 0.012)
    frame = next(e for e in across["verdict"]["evidence"] if e["test"] == "frame classifier")
    atom = "the atom-order classifier's accuracy"
    cited = across["verdict"]["text"].replace(atom, f"the frame classifier's accuracy 61 % [58 %, 65 %] and {atom}", 1)
    assert not frame["rejects"] and any("did not reject" in p for p in problems(Said("verdict", cited, across)))


def test_a_set_where_only_bingham_rejects_cites_its_s(sentence_grid):
    # CO2 along z among Haar-rotated molecules: the verdict's one piece of evidence is Bingham's statistic,
    # named as such ("Bingham's S = 147.14"), not a bare number after the test's name.
    v = sentence_grid["axes-aligned"]["verdict"]
    assert [e["test"] for e in v["evidence"] if e["rejects"]] == ["Bingham axial"]
    assert "Bingham's S = " in v["text"] and "Bingham axial " not in v["text"]
    # Its size (rule 6): 30 axes within a few degrees of z read strong, not "uncertain", and the words and the
    # evidence line cite the axes' KL, which the clauses then check against the field.
    assert v["effect"] == "strong" and v["badge"] == "Aligned — strong effect"
    assert "The effect is strong: axial KL " in v["text"]
    line = next(e for e in evidence_figures(sentence_grid["axes-aligned"]) if e[0] == "Bingham axial")[1]
    assert line.startswith("S = ") and ", axial KL " in line
    said = Said("evidence line", f"Bingham axial: {line}", sentence_grid["axes-aligned"])
    assert problems(said) == []
    wrong = line.replace(", axial KL ", ", axial KL 9", 1)
    assert problems(Said("evidence line", f"Bingham axial: {wrong}", sentence_grid["axes-aligned"]))
