"""The model audit as a table a person reads: the same cells in the CLI, the dashboard and the notebook.

Every number is written by :mod:`orientscope.core.numbers` (reliance in percent everywhere, the rotation
shift in the property's unit, p-values with their floor), and the provenance line says which rules made the
audit: the audit rule its tiers come from, the one they were stored under, and the rotation rule of its copies.
"""

from __future__ import annotations

from orientscope.core.numbers import (
    MISSING,
    format_count,
    format_interval,
    format_number,
    format_p,
    format_percent,
)
from orientscope.science.audit_verdict import AUDIT_RULE_VERSION, DEFAULT_MARGIN, percent_digits
from orientscope.science.copy_rotations import ROTATION_RULE_VERSION, RULES, rule_version

SIGNIFICANT = ".3g"
# (key, header) of every column, in order; the CLI leaves out the wide ones (WIDE).
COLUMNS = (
    ("property", "property"),
    ("split", "split"),
    ("n", "molecules"),
    ("pose_alone", "pose alone predicts"),
    ("mse_stored", "MSE stored"),
    ("mse_rotated", "MSE rotated"),
    ("mae_stored", "MAE stored"),
    ("mae_rotated", "MAE rotated"),
    ("reliance", "reliance"),
    ("reliance_ci", "reliance 95 % CI"),
    ("pvalue_holm", "p (Holm)"),
    ("shift_median", "rotation shift median"),
    ("shift_p95", "shift 95th pct"),
    ("shift_p95_ci", "shift 95th pct 95 % CI"),
    ("tier", "tier"),
)
WIDE = ("pose_alone", "mae_stored", "mae_rotated")


def _num(x) -> str:
    return format_number(x, SIGNIFICANT)


def _in_unit(x, unit: str) -> str:
    text = _num(x)
    return f"{text} {unit}" if unit and text != MISSING else text


def audit_rows(record: dict) -> list[dict]:
    """One row of formatted cells per property (and split) of an audit record."""
    rows = []
    for p in record.get("properties", []):
        ci = (p.get("ci95") or {}).get("reliance") or [None, None]
        shift_ci = p.get("shift_p95_ci95") or [None, None]
        unit = p.get("unit") or ""
        # The decimals of the tier's text, so a bound beside the margin reads on the side the tier says.
        margin = p["verdict"].get("margin")
        digits = percent_digits(ci if None not in ci else None, DEFAULT_MARGIN if margin is None else margin)
        rows.append({
            "property": p["property"],
            "split": p.get("split") or "all",
            "n": format_count(p["n"]),
            "pose_alone": format_percent(p.get("regression_improvement")),
            "mse_stored": _num(p["mse_stored"]),
            "mse_rotated": _num(p["mse_rotated"]),
            "mae_stored": _in_unit(p.get("mae_stored"), unit),
            "mae_rotated": _in_unit(p.get("mae_rotated"), unit),
            "reliance": format_percent(p.get("reliance"), digits),
            "reliance_ci": format_interval(ci[0], ci[1], "percent", digits=digits),
            "pvalue_holm": format_p(p.get("pvalue_holm")),
            "shift_median": _in_unit(p.get("shift_median"), unit),
            "shift_p95": _in_unit(p.get("shift_p95"), unit),
            "shift_p95_ci": format_interval(shift_ci[0], shift_ci[1], "number", fmt=SIGNIFICANT),
            "tier": p["verdict"]["code"],
        })  # fmt: skip
    return rows


def provenance(record: dict) -> str:
    """Which rules made the audit: its tiers' rule (and the one it was stored under), the margin, its rotations."""
    made_by = record.get("made_by_rule") or record.get("audit_rule_version") or AUDIT_RULE_VERSION
    decision = record.get("decision") or {}
    margin = format_percent(decision.get("margin", 0.01), signed=False)
    max_shift = decision.get("max_shift")
    text = f"Tiers by audit rule {AUDIT_RULE_VERSION} (margin ±{margin}"
    text += f", max_shift {_num(max_shift)})" if max_shift is not None else ", no max_shift)"
    if made_by != AUDIT_RULE_VERSION:
        text += (
            f"; stored under audit rule {made_by} and re-read from its stored figures (the rotation shift from "
            "its per-molecule table)"
        )
    source = record.get("input") or {}
    rule = source.get("rotation_rule")
    if rule:
        version = source.get("rotation_rule_version") or rule_version(rule)
        purpose = f", purpose {source['purpose']}" if source.get("purpose") else ""
        text += f". Rotated copies by rotation rule {version or '?'} ({RULES.get(version, rule)}{purpose}"
        text += f", seed {record.get('seed')})"
        if version != ROTATION_RULE_VERSION:
            text += f"; the current rule is {ROTATION_RULE_VERSION}"
    else:
        text += ". Rotated copies: those of the predictions file"
    ids = record.get("ids")
    if ids:
        text += f". Audited ids: {format_count(ids['n_ids'])} given"
        if ids.get("n_ids_without_predictions"):
            text += f", {format_count(ids['n_ids_without_predictions'])} of them without predictions"
    return text + "."


def text_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """Columns padded to their widest cell and separated by ' | ', under a header and a rule."""
    widths = [max(len(str(row[j])) for row in (header, *rows)) for j in range(len(header))]

    def line(cells) -> str:
        return " | ".join(f"{str(c):<{w}}" for c, w in zip(cells, widths, strict=True)).rstrip()

    return [line(header), "-+-".join("-" * w for w in widths), *(line(row) for row in rows)]


def format_audit(record: dict) -> str:
    """The audit as text: a header, the table (property by split), each property's tier text, warnings, rules."""
    columns = [(k, h) for k, h in COLUMNS if k not in WIDE]
    rows = [tuple(row[k] for k, _ in columns) for row in audit_rows(record)]
    lines = [
        f"audit {record.get('id', '')} ({record['name']}) of {record['dataset']}: "
        f"{format_count(record['n_molecules'])} molecules, {format_count(record['n_unknown_ids'])} unknown ids, "
        f"seed {record['seed']}",
        *text_table(tuple(h for _, h in columns), rows),
        "",
        *(f"{p['property']}: {p['verdict']['text']}" for p in record["properties"] if p["split"] is None),
        *(f"warning: {w}" for w in record.get("warnings", [])),
        provenance(record),
    ]
    return "\n".join(lines)
