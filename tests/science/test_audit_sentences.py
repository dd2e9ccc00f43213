"""Every number in the model audit's sentences is a field shown beside it (the sentence-number idea of the
words-and-numbers issue, for the audit's texts): QM9 (a stored audit of real QM9 molecules, re-read by the
current rule), a memoriser and a negative reliance, under several margins and max_shift values.

A number in a text passes when some field of its entry, written by ``orientscope.core.numbers`` the way the
texts write numbers, gives the same token.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from orientscope.core.numbers import format_count, format_number, format_p, format_percent
from orientscope.science import model_audit as sci
from orientscope.science.audit_verdict import Decision, verdict
from orientscope.services.audit_table import format_audit, provenance

NUMBER = re.compile(r"(?<![\w.])[+-]?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?")
# Words that hold digits but are no figure: the 95th percentile, 95 % CI, α's name, rule numbers.
LABELS = {"95"}
RULE2_AUDIT = Path(__file__).resolve().parents[1] / "data" / "audit_rule2"
SETTINGS = sci.AuditSettings(n_bootstrap=300, n_permutations=20_000)


def _writings(x) -> set[str]:
    if x is None:
        return set()
    out = {format_number(x, ".3g"), format_number(x, "+.3g"), format_number(x, "g"), format_p(x)}
    out |= {format_percent(x), format_percent(x, signed=False), format_count(x) if float(x).is_integer() else ""}
    return out


def allowed_tokens(entry: dict) -> set[str]:
    """Every token the entry's fields give when written as the texts write them."""
    v = entry["verdict"]
    values = [entry.get(k) for k in (
        "n", "n_train", "mse_stored", "mse_rotated", "reliance", "pvalue_holm", "shift_median", "shift_p95",
        "shift_max", "shift_tolerance", "regression_improvement", "mse_floor",
    )]  # fmt: skip
    values.append(entry["mse_rotated"] - entry["mse_stored"])
    values += [*(entry["ci95"].get("reliance") or []), *(entry.get("shift_median_ci95") or [])]
    values += [*(entry.get("shift_p95_ci95") or []), v["alpha"], v["max_shift"]]
    tokens = set(LABELS)
    for x in values:
        for text in _writings(x):
            tokens |= set(NUMBER.findall(text))
    margin = format_percent(v["margin"], signed=False).split()[0]
    return tokens | {margin, f"+{margin}", f"-{margin}", "1,000", "+1,000"}


def check_numbers(entry: dict) -> None:
    allowed = allowed_tokens(entry)
    found = NUMBER.findall(entry["verdict"]["text"])
    stray = [t for t in found if t not in allowed]
    assert not stray, f"numbers without a field beside them: {stray}\n{entry['verdict']['text']}"


def _entry(errors: sci.MoleculeErrors, decision: Decision, split=None, unit="Ha", **more) -> dict:
    f = {**sci.audit_figures(errors, SETTINGS, seed=0), "unit": unit, "split": split, **more}
    f["pvalue_holm"] = f["pvalue"]
    f["verdict"] = verdict(f, f["pvalue_holm"], False, more.get("regression"), decision, split)
    return f


def _memoriser(rng) -> sci.MoleculeErrors:
    true = rng.normal(size=300)
    return sci.molecule_errors(np.repeat(np.arange(300), 3), np.repeat(true, 3),
                               np.repeat(true, 3) + rng.normal(0, 0.05, 900), np.repeat(true, 3))  # fmt: skip


def _negative(rng) -> sci.MoleculeErrors:
    """A model trained on rotated copies only: a little worse on the stored poses than on random ones."""
    true = rng.normal(size=2000)
    stored = true + rng.normal(0, 1.1, 2000)
    rotated = np.repeat(true, 4) + rng.normal(0, 1.0, 8000)
    return sci.molecule_errors(np.repeat(np.arange(2000), 4), np.repeat(stored, 4), rotated, np.repeat(true, 4))


DECISIONS = [Decision(), Decision(margin=0.05), Decision(margin=0.2, max_shift=0.5), Decision(max_shift=1e-3)]


@pytest.mark.parametrize("decision", DECISIONS)
@pytest.mark.parametrize("case", ["memoriser", "memoriser-train", "negative", "leaning"])
def test_every_number_of_a_constructed_audit_text_is_a_field(case, decision):
    rng = np.random.default_rng(5)
    if case.startswith("memoriser"):
        entry = _entry(_memoriser(rng), decision, split="train" if case.endswith("train") else None, n_train=200)
        assert "+100000000" not in entry["verdict"]["text"]
    elif case == "negative":
        entry = _entry(_negative(rng), decision)
        assert entry["reliance"] < 0 and "would settle it" not in entry["verdict"]["text"]
    else:
        true = rng.normal(size=500)
        e = sci.molecule_errors(np.arange(500), true + rng.normal(0, 1, 500), true + rng.normal(0, 1.4, 500), true)
        entry = _entry(e, decision, regression_improvement=0.3,
                       regression={"improvement": 0.3, "improvement_std": 0.01})  # fmt: skip
    check_numbers(entry)


def test_a_small_audit_says_its_shift_percentile_has_no_upper_bound():
    # 25 molecules: the 95th percentile's distribution-free upper bound needs 72, and the text once read
    # "95th percentile 0.0016 [0.00114, –]", a dash like a missing figure.
    rng = np.random.default_rng(3)
    true = rng.normal(size=25)
    stored = true + rng.normal(0, 0.3, 25)
    e = sci.molecule_errors(np.repeat(np.arange(25), 2), np.repeat(stored, 2), np.repeat(stored, 2) + rng.normal(0, 0.01, 50),
                            np.repeat(true, 2))  # fmt: skip
    entry = _entry(e, Decision())
    low, high = entry["shift_p95_ci95"]
    assert low is not None and high is None
    text = entry["verdict"]["text"]
    assert f"95th percentile {format_number(entry['shift_p95'], '.3g')} Ha [{format_number(low, '.3g')}, no upper " \
           "bound from 25 molecules]" in text  # fmt: skip
    assert "–" not in text
    check_numbers(entry)


def test_every_number_of_qm9_audit_texts_is_a_field(qm9_store, tmp_path):
    """A stored audit of 400 real QM9 molecules (audit rule 2), re-read with the rotation shift, three margins."""
    from orientscope.services.model_audits import get_audit
    from orientscope.store import audits as store

    data_dir = tmp_path / "data"
    shutil.copytree(qm9_store / "datasets", data_dir / "datasets")
    for margin, max_shift in ((0.01, None), (0.1, 0.02), (0.5, 1e-4)):
        record = store.read_json(RULE2_AUDIT / "audit.json")
        audit_id = f"asentences{int(margin * 100):03d}"
        record["decision"] = {"margin": margin, "max_shift": max_shift}
        folder = data_dir / "datasets" / "qm9" / "audits" / audit_id
        folder.mkdir(parents=True)
        shutil.copy(RULE2_AUDIT / "molecules.parquet", folder / "molecules.parquet")
        store.atomic_write_json(folder / "audit.json", {**record, "id": audit_id})
        got = get_audit(data_dir, "qm9", audit_id)
        for entry in got["properties"]:
            check_numbers(entry)
        assert provenance(got) in format_audit(got)
