"""``orientscope.report``: the orientation-bias report of a set, as ``orientscope report --json`` has it.

Every number comes from :func:`orientscope.services.report.build_report` on the stored result, and every
figure from the dashboard's own builders, so a notebook shows what the CLI, the REST API and the
dashboard show.
"""

from __future__ import annotations

import base64
import copy
import html
from functools import cache

import pandas as pd

from orientscope.core.numbers import format_count
from orientscope.core.resources import frontend_asset
from orientscope.notebook.datasets import Dataset
from orientscope.notebook.progress import checked_options, progress_bar
from orientscope.pipeline.engine import parse_cluster
from orientscope.pipeline.precompute import make_params, precompute
from orientscope.services.report import build_report, format_kl
from orientscope.services.report_format import evidence_figures, headline, left_out_note, warnings
from orientscope.services.statistics import ANGLE_HISTOGRAM_KEY, CLASSIFIERS_KEY, KL_KEY, REGRESSION_KEY
from orientscope.store import datasets as ds
from orientscope.store.results import ResultStore

FIGURES = ("map", "sphere", "angles")
CARD_MAP_PIXELS = (480, 240)


@checked_options
def report(
    dataset: Dataset, frame: str = "pca", sign: str = "max", seed: int = 0, cluster: str | None = None,
    progress: bool = True,
) -> Report:  # fmt: skip
    """Compute whatever is missing for ``dataset`` with these parameters and return its :class:`Report`.

    ``cluster``: ``in-process``, ``local:W`` or ``tcp://HOST:PORT`` (the set's stages run there), as the
    CLI's ``--cluster``.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"report() takes an orientscope Dataset (read, from_arrays, load ...), not {type(dataset)}")
    dataset._refuse_subset("report()")
    params = make_params(frame, sign, seed)
    if cluster is not None:
        parse_cluster(cluster)  # a bad value fails before anything is written
    root, dataset_id = dataset.location()
    with progress_bar(f"report {dataset.name}", progress) as bar:
        precompute(root, dataset_id, params, progress=bar, cluster=cluster)
    return Report(dataset, params)


class Report:
    """The report of one (dataset, frame, sign, seed).

    Attributes
    ----------
    verdict : the plain-words verdict; ``aligned`` : True, False or None (too few molecules)
    kl, kl_ci95, control_kl : KL divergence from uniform, its 95 % CI and the random-rotation control's KL
    classifiers : DataFrame, one row per feature set (accuracy, CI, AUC, p-value)
    regression : DataFrame, the orientation-only regression table (one row per property)
    """

    def __init__(self, dataset: Dataset, params: dict):
        self.dataset = dataset
        self.params = dict(params)
        self._report = build_report(*dataset.location(), self.params)

    # ------------------------------------------------------------------ numbers
    def to_dict(self) -> dict:
        """The report as ``orientscope report --json`` prints it."""
        return copy.deepcopy(self._report)

    @property
    def verdict(self) -> str:
        return self._report["verdict"]["text"]

    @property
    def aligned(self) -> bool | None:
        return self._report["verdict"]["aligned"]

    @property
    def kl(self) -> float | None:
        return (self._report.get(KL_KEY) or {}).get("value")

    @property
    def kl_ci95(self) -> tuple[float, float] | None:
        ci = (self._report.get(KL_KEY) or {}).get("ci95")
        return tuple(ci) if ci else None

    @property
    def control_kl(self) -> float | None:
        return ((self._report["control"].get(KL_KEY)) or {}).get("value")

    @property
    def classifiers(self) -> pd.DataFrame:
        return pd.DataFrame(self._report.get(CLASSIFIERS_KEY) or [])

    @property
    def regression(self) -> pd.DataFrame:
        """One row per property; ``attrs["note"]`` names the properties left out (constant or missing)."""
        table = pd.DataFrame(self._report.get(REGRESSION_KEY) or [])
        table.attrs["note"] = left_out_note(self._report)
        return table

    @property
    def frames(self) -> pd.DataFrame:
        """One row per molecule: id, its frame (rotation, quaternion, axes' map coordinates) and degeneracy flags."""
        root, dataset_id = self.dataset.location()
        return ResultStore(root, dataset_id, self.params).table("frames", "original").to_pandas()

    # ------------------------------------------------------------------ figures
    def _activate(self) -> tuple:
        """The dashboard draws a dataset's active result: make it this report's (nothing is recomputed)."""
        root, dataset_id = self.dataset.location()
        if ds.read_meta(root, dataset_id).get("active_params") != self.params:
            precompute(root, dataset_id, self.params)
        return root, dataset_id

    def figure(self, kind: str = "map"):
        """The dashboard's plotly figure: ``map`` (Mollweide map of the three axes), ``sphere`` or ``angles``
        (angle to the reference orientation as the ratio to the Haar density, with the control and the band
        where 95 % of uniform sets keep every bar)."""
        if kind not in FIGURES:
            raise ValueError(f"unknown figure {kind!r}; allowed: {list(FIGURES)}")
        if kind == "angles":
            from orientscope.figures.plots import angle_histogram_figure

            r = self._report
            return angle_histogram_figure(r.get(ANGLE_HISTOGRAM_KEY), r["control"].get(ANGLE_HISTOGRAM_KEY))
        from orientscope.figures.mapfigure import map_figure
        from orientscope.figures.state import ViewState

        root, dataset_id = self._activate()
        return map_figure(root, ViewState(dataset=dataset_id, view=kind))[0]

    def map_png(self, width: int = CARD_MAP_PIXELS[0], height: int = CARD_MAP_PIXELS[1]) -> bytes:
        """The whole orientation map as a PNG, aggregated on the pixel grid as the dashboard's image layer."""
        from orientscope.services.map_raster import render_view, whole_map_viewport
        from orientscope.services.map_view import MapQuery

        root, dataset_id = self._activate()
        return render_view(root, MapQuery(dataset=dataset_id), whole_map_viewport(width, height), budget=0).png()

    def molecule(self, molecule_id, width: int = 800, height: int = 400):
        """A py3Dmol view of one molecule: its stored pose (lab axes) beside its canonical pose (principal axes),
        rotations linked, drawn by the 3Dmol.js bundled with OrientScope (works offline)."""
        import py3Dmol

        from orientscope.figures.viewer import molecule_scenes
        from orientscope.services.molecules import molecule_detail

        root, dataset_id = self._activate()
        scenes = molecule_scenes(molecule_detail(root, dataset_id, str(molecule_id)))
        view = py3Dmol.view(width=width, height=height, viewergrid=(1, len(scenes)), linked=True, js=_local_3dmol())
        for col, scene in enumerate(scenes):
            cell = (0, col)
            view.addModel(scene["xyz"], "xyz", viewer=cell)
            view.setStyle({"stick": {"radius": 0.15}, "sphere": {"scale": 0.25}}, viewer=cell)
            for arrow in scene["arrows"]:
                start, end = (dict(zip("xyz", arrow[k], strict=True)) for k in ("start", "end"))
                view.addArrow({"start": start, "end": end, "color": arrow["color"], "radius": 0.04}, viewer=cell)
                at = dict(zip("xyz", arrow["label_at"], strict=True))
                view.addLabel(arrow["label"], {"position": at, "fontSize": 11}, viewer=cell)
            view.addLabel(scene["title"], {"useScreen": True, "position": {"x": 5, "y": 5}}, viewer=cell)
            view.zoomTo(viewer=cell)
        return view

    def save(self, name: str | None = None) -> Report:
        """Save the dataset (with this report's result) so that ``orientscope serve`` lists it; ``self``."""
        self.dataset.save(name)
        self._activate()
        self._report = build_report(*self.dataset.location(), self.params)
        return self

    # ------------------------------------------------------------------ display
    def _repr_html_(self) -> str:
        r, esc = self._report, html.escape
        h = headline(r)
        image = ""
        if self.kl is not None:
            png = base64.b64encode(self.map_png()).decode()
            image = (
                f"<img alt='orientation map of {esc(self.dataset.name)}' src='data:image/png;base64,{png}' "
                f"style='max-width:100%;background:#fff'>"
            )
        rows = [
            ("molecules", f"{format_count(r['n_molecules'])} ({format_count(r['n_degenerate'])} degenerate frames)"),
            ("KL to uniform [95 % CI]", format_kl(r.get(KL_KEY))),
            ("control KL", format_kl(r["control"].get(KL_KEY))),
            *evidence_figures(r),
            (
                "parameters",
                f"frame {r['frame']}/{r['sign_rule']}, seed {r['seed']}, result {r['result_key']}, "
                f"verdict rule {h.rule_version}",
            ),
        ]
        table = "".join(f"<tr><th style='text-align:left'>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
        code = {True: "aligned", False: "not_aligned", None: "too_few"}[h.aligned]
        return (
            f"<div class='orientscope-report' data-verdict='{code}'>"
            f"<h3>OrientScope: {esc(str(r['name']))} ({esc(r['dataset'])})</h3>"
            + "".join(f"<p style='color:#9B1C1C'><strong>{esc(w)}</strong></p>" for w in warnings(r))
            + f"<p><strong>{esc(h.badge)}</strong></p><p>{esc(h.answer)}</p><p>{esc(h.strength)}</p>"
            f"<table>{table}</table>{image}</div>"
        )

    def __repr__(self) -> str:
        return f"<orientscope.Report {self._report['dataset']!r} [{self._report['result_key']}]: {self.verdict}>"


@cache
def _local_3dmol() -> str:
    """The bundled 3Dmol.js as a data URL: py3Dmol would fetch it from a CDN, which fails offline."""
    code = frontend_asset("3Dmol-min.js").read_bytes()
    return "data:text/javascript;base64," + base64.b64encode(code).decode()
