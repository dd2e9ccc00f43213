"""The report object: one JSON document per (dataset, parameters).

It is what ``orientscope report DATASET --json`` prints and what
``GET /api/datasets/{id}/summary`` serves. Each stage contributes a section
whose ``report`` keys go to the top level and whose ``control`` keys go to
``report["control"]``.
"""

from __future__ import annotations

import math
from pathlib import Path

from orientscope import __version__
from orientscope.core.dataset import frame_dependent_properties
from orientscope.services.results import open_result
from orientscope.store import datasets as ds
from orientscope.store.results import IN_PROCESS_ENGINE, ResultStore

# Internal bookkeeping that the public report does not need.
_HIDDEN = {"reference_index"}


def format_number(x, fmt: str = ".3f") -> str:
    """``x`` in ``fmt``; '–' for missing or non-finite values; never a negative zero."""
    if not (isinstance(x, int | float) and math.isfinite(x)):
        return "–"
    text = format(x, fmt)
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def format_kl(section: dict | None, missing: str = "–") -> str:
    """A KL section (``value``, ``ci95``) as ``value [low, high]`` with 3 decimals; ``missing`` for absent numbers."""
    if not section:
        return missing
    ci = section.get("ci95") or [None, None]

    def num(x) -> str:
        return missing if x is None or not math.isfinite(x) else format_number(x)

    return f"{num(section.get('value'))} [{num(ci[0])}, {num(ci[1])}]"


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
    for stage in manifest["stages"]:
        section = store.section(stage)
        report.update({k: v for k, v in section.get("report", {}).items() if k not in _HIDDEN})
        control.update({k: v for k, v in section.get("control", {}).items() if k not in _HIDDEN})
    report["control"] = control
    report["stages"] = {
        name: {"seconds": s["seconds"], "settings": s.get("settings", {})} for name, s in manifest["stages"].items()
    }
    report["engine"] = {name: s.get("engine", IN_PROCESS_ENGINE) for name, s in manifest["stages"].items()}
    report["skipped_stages"] = skipped_stages(store)
    report["verdict"] = verdict(report)
    return report


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


def verdict(report: dict) -> dict:
    """Plain-words verdict from whatever figures the report has."""
    kl = (report.get("kl") or {}).get("value")
    ci = (report.get("kl") or {}).get("ci95") or [None, None]
    ks_p = (report.get("ks") or {}).get("pvalue")
    ctl = (report.get("control", {}).get("kl") or {}).get("value")
    if kl is None:
        return {"aligned": None, "text": "Not enough molecules for orientation statistics."}
    aligned = bool(ci[0] is not None and ci[0] > 0.05 and ks_p is not None and ks_p < 1e-3)
    by_features = {c.get("features"): c for c in report.get("classifiers", []) or []}
    frame = by_features.get("frame")
    if aligned:
        # Lead with what any model sees (the frame); the atom-order classifier also reads
        # file order, so its (usually higher) figure is named as such, never the headline.
        text = (
            f"Aligned: KL to uniform {format_number(kl, '.2f')} "
            f"(0 = uniform; control {format_number(ctl, '.2f')}; full QM9 ≈ 0.90)"
        )
        if frame and frame.get("pvalue", 1) < 1e-3:
            text += f"; the frame alone tells the stored pose from a random one {frame['accuracy']:.0%} of the time"
        order = by_features.get("atom-order")
        if order and order.get("pvalue", 1) < 1e-3:
            text += f" ({order['accuracy']:.0%} when atoms are read in file order)"
    else:
        text = (
            f"Not detectably aligned: KL {format_number(kl, '.2f')} "
            f"(control {format_number(ctl, '.2f')}), KS p = {ks_p:.2g}"
        )
    return {"aligned": aligned, "text": text}
