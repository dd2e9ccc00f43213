"""The report object: one JSON document per (dataset, parameters).

It is what ``orientscope report DATASET --json`` prints and what
``GET /api/datasets/{id}/summary`` serves. Each stage contributes a section
whose ``report`` keys go to the top level and whose ``control`` keys go to
``report["control"]``.
"""

from __future__ import annotations

from pathlib import Path

from orientscope import __version__
from orientscope.core.dataset import frame_dependent_properties
from orientscope.pipeline.stage import older_rule_stages
from orientscope.science import statistics_registry
from orientscope.science.alignment_words import orientation_note
from orientscope.science.so3_stats import ANGLE_HISTOGRAM_KEY, KS_KEY, haar_ratio_histogram
from orientscope.science.so3_stats import format_kl as format_kl  # the notebook's and the CLI's KL text
from orientscope.science.verdict import alignment_verdict, control_check
from orientscope.services.results import open_result
from orientscope.store import datasets as ds
from orientscope.store.results import IN_PROCESS_ENGINE, ResultStore


def build_report(data_dir: Path, dataset_id: str, params: dict | None = None) -> dict:
    meta = ds.read_meta(data_dir, dataset_id)
    store = open_result(data_dir, dataset_id, params)
    manifest = store.manifest()
    p = manifest["params"]
    report: dict = {
        "dataset": dataset_id,
        "name": meta.get("name", dataset_id),
        "source": meta.get("source", ""),
        "n_molecules": None,
        "n_degenerate": None,
        "seed": p["seed"],
        "frame": p["frame"],
        "sign_rule": p["sign"],
        "limit": p.get("limit"),
        "frame_dependent_properties": sorted(frame_dependent_properties(meta)),
        "result_key": store.key,
        "version": __version__,
    }
    control: dict = {"description": "every molecule rotated by a seeded Haar-uniform rotation"}
    hidden = statistics_registry.hidden_fields()  # bookkeeping the public report does not need
    for stage in manifest["stages"]:
        section = store.section(stage)
        report.update({k: v for k, v in section.get("report", {}).items() if k not in hidden})
        control.update({k: v for k, v in section.get("control", {}).items() if k not in hidden})
    report["control"] = control
    report["stages"] = {
        name: {"seconds": s["seconds"], "settings": s.get("settings", {})} for name, s in manifest["stages"].items()
    }
    report["engine"] = {name: s.get("engine", IN_PROCESS_ENGINE) for name, s in manifest["stages"].items()}
    report["skipped_stages"] = skipped_stages(store)
    older = older_rule_stages(store)
    report["stage_rules"] = {name: store.stage_rule(name) for name in manifest["stages"]}
    if older:
        report["older_rule"] = {"stages": older, "text": older_rule_text(older, dataset_id)}
    for figures in (report, control):
        figures["verdict"] = verdict(figures, report["n_molecules"])
        figures["orientation_note"] = orientation_note(figures.get("orientation_classes"))
        _add_haar_ratio(figures)
    # The self-check comes before any verdict, in the JSON as on every screen: with the header fields.
    check = control_check(control["verdict"], control, report["n_molecules"])
    report["verdict"] = {"control_check": check, **report.pop("verdict")}
    header = list(report)[: list(report).index("version") + 1]
    return {**{k: report[k] for k in header}, "control_check": check, **report}


def older_rule_text(older: dict, dataset_id: str) -> str:
    """The note on a result whose stages were made by an older rule (``pipeline.stage.older_rule_stages``)."""
    stages = ", ".join(f"{name} (rule {r['stored']}, now {r['current']})" for name, r in older.items())
    return (
        f"Computed under an older rule: {stages}. Under it, molecules with no orientation (single atoms, spherical "
        "tops) or only an axis (linear molecules, symmetric tops) counted as full poses in the SO(3) statistics. "
        f"`orientscope precompute {dataset_id}` (or `report`) recomputes what the rule changed."
    )


def _add_haar_ratio(figures: dict) -> None:
    """The angle histogram's observed/Haar ratio and uniform band (``haar_ratio``), where the KS test counted its angles."""
    hist, n = figures.get(ANGLE_HISTOGRAM_KEY), (figures.get(KS_KEY) or {}).get("n")
    if hist and n:
        ratio = haar_ratio_histogram(hist["bin_edges_rad"], hist["density"], n)
        figures[ANGLE_HISTOGRAM_KEY] = {**hist, "haar_ratio": ratio}


def skipped_stages(store: ResultStore) -> dict[str, str]:
    """{"<stage>" or "<stage>.<part>": reason} of one result.

    Results computed before the manifest recorded this keep the reason in each
    stage's section; those are read as a fallback.
    """
    manifest = store.manifest()
    if "skipped_stages" in manifest:
        return dict(manifest["skipped_stages"])
    out = {}
    for stage in manifest["stages"]:
        section = store.section(stage)
        if section.get("skipped"):
            out[stage] = section["skipped"]
    return out


def verdict(figures: dict, n_molecules: int | None) -> dict:
    """The calibrated verdict (``orientscope.science.verdict``) of one set's figures: the dataset's or its control's."""
    return alignment_verdict(
        n_molecules, **statistics_registry.verdict_figures(figures), orientation=figures.get("orientation_classes")
    )
