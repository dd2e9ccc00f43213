"""Pydantic models of every request and response body (OpenAPI documents them all)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from orientscope.core.groups import GROUP_KINDS
from orientscope.services.canonicalize import MAX_ATOMS
from orientscope.services.molecules import MAX_PAGE
from orientscope.services.neighbors import MAX_K
from orientscope.services.statistics import report_fields

Vector3 = list[float]
Matrix3 = list[list[float]]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------- errors
class ErrorPublic(_Model):
    """An error that is not about the shape of the request (unknown id, result not computed)."""

    detail: str = Field(description="What is wrong, naming the dataset, molecule or stage.")


# ---------------------------------------------------------------- health
class HealthPublic(_Model):
    """Liveness of the server."""

    status: Literal["ok"] = Field(description="Always 'ok' when the server answers.")
    version: str = Field(description="OrientScope version.")
    read_only: bool = Field(description="True if the server refuses every write.")


# ---------------------------------------------------------------- datasets
class DatasetPublic(_Model):
    """One stored dataset."""

    id: str = Field(description="Dataset id (lowercase letters, digits, '-' and '_').")
    name: str = Field(description="Human-readable name.")
    n_molecules: int = Field(description="Number of molecules stored.")
    source: str = Field(description="Where the molecules come from.")
    status: Literal["ready", "computing", "failed", "needs_migration"] = Field(
        description="ready: results can be read; computing: the pipeline is running; failed: see message; "
        "needs_migration: stored before the sharded layout, `orientscope migrate ID` converts it (reads answer 409)."
    )
    message: str = Field(description="Why the dataset is computing or failed ('' when ready).")
    result_key: str | None = Field(description="Key of the active result (frame-sign-seed[-limit]), null if none yet.")
    stages: list[str] = Field(description="Pipeline stages stored for the active result.")
    skipped_stages: dict[str, str] = Field(
        default_factory=dict,
        description="Stages ('models') or parts of stages ('chemistry.similarity') that could not run on this "
        "dataset, each with the reason (e.g. too few molecules, no SMILES, no properties).",
    )


class EffectSizePublic(BaseModel):
    """A test's effect size judged against its bar: only a test that rejected sizes the verdict's effect."""

    measure: str = Field(
        description="accuracy (a classifier's), KL (at this N), 'KL at n' (at a fixed n) or 'axial KL' (Bingham's: "
        "the KL in nats of the Watson law fitted to the axis-only molecules' axes)."
    )
    value: float = Field(description="The estimate.")
    ci95: list[float] | None = Field(description="Its 95 % interval, null if none was computed.")
    bar: float = Field(description="The value from which the effect counts as strong.")
    kind: Literal["number", "percent"] = Field(description="How the words write it.")
    reading: Literal["strong", "small", "uncertain"] = Field(
        description="strong: the interval lies at or above the bar; small: wholly below; uncertain: across it "
        "(or no interval)."
    )
    n: int | None = Field(
        default=None, description="The N (KL; axes for axial KL) or subsample size n (KL at n) the estimate is at."
    )


class EvidencePublic(BaseModel):
    """One test of "each pose is Haar-uniform" behind the verdict."""

    test: str = Field(description="KL, KS or '<feature set> classifier'.")
    statistic: float = Field(description="KL estimate, KS D, or held-out classifier accuracy.")
    ci95: list[float] | None = Field(default=None, description="The statistic's 95 % interval, where it has one.")
    pvalue: float = Field(description="The test's own p-value.")
    p_holm: float = Field(description="Holm-adjusted over every test in the evidence.")
    rejects: bool | None = Field(default=None, description="True when p_holm is below the verdict's alpha.")
    role: str = Field(description="What the test reads.")
    size: EffectSizePublic | None = Field(default=None, description="Its effect size against a bar, where it has one.")
    n: int | None = Field(default=None, description="Molecules behind the KL estimate (KL only).")


class ControlCheckPublic(BaseModel):
    """The self-check: the random-rotation control must come out not_detected."""

    passed: bool | None = Field(description="True if the control is not_detected, false if not, null if too few.")
    control_code: str | None = Field(default=None, description="The control's own verdict code.")
    text: str = Field(default="", description="Said before the verdict when the check failed, with the likely cause.")
    causes: list[str] = Field(default_factory=list, description="Likely causes, most likely first.")


class VerdictPublic(BaseModel):
    """The verdict: one calibrated rule (backend/science/verdict.py) shown by every surface."""

    model_config = ConfigDict(extra="allow")

    control_check: ControlCheckPublic | None = Field(
        default=None, description="The control's self-check; every surface shows a failed one before the verdict."
    )

    code: str = Field(
        default="too_few",
        description="aligned (detected; effect strong or uncertain, see effect), weakly_aligned (detected, small "
        "effect), not_detected, or too_few (below the minimum for any test, or no test could run).",
    )
    aligned: bool | None = Field(
        description="True for aligned and weakly_aligned, false for not_detected, null for too_few."
    )
    effect: Literal["strong", "uncertain", "small"] | None = Field(
        default=None,
        description="How strong, from the effect sizes of the tests that rejected: strong (one interval above its "
        "bar), small (every one below), uncertain (otherwise); null when nothing rejected. aligned is strong or "
        "uncertain, weakly_aligned is small.",
    )
    badge: str | None = Field(
        default=None,
        description="The verdict in a few words for the first screen: 'Aligned — strong effect', 'Aligned — "
        "effect size uncertain', 'Weakly aligned', 'Not detected', 'Too few molecules' or 'Not tested'.",
    )
    text: str = Field(
        description="The verdict in words: each test that rejected with its estimate, interval and Holm p, then "
        "the effect size against its bar."
    )
    evidence: list[EvidencePublic] = Field(default_factory=list, description="Every test, with its Holm p.")
    alpha: float | None = Field(default=None, description="Family-wise error rate of the Holm-adjusted tests.")
    rule_version: int | None = Field(default=None, description="Version of the decision rule that made it.")
    n_molecules: int | None = Field(default=None, description="Molecules in the set the verdict is about.")
    min_molecules: int | None = Field(default=None, description="The fewest molecules any test needs.")
    not_tests: dict | None = Field(
        default=None,
        description="Classifiers left out of the family, with the reason: a model that predicted one class for "
        "every held-out molecule (too few molecules to learn a split) tests nothing.",
    )


class SummaryBase(BaseModel):
    """The report's fields that are not a statistic's (:func:`summary_model` adds those from the registry)."""

    model_config = ConfigDict(extra="allow")

    dataset: str = Field(description="Dataset id.")
    name: str = Field(description="Dataset name.")
    source: str = Field(description="Where the molecules come from.")
    n_molecules: int | None = Field(description="Molecules in the result.")
    n_degenerate: int | None = Field(description="Molecules whose canonical frame is degenerate.")
    seed: int = Field(description="Seed of the control rotations, splits and bootstrap.")
    frame: str = Field(description="Frame method: pca, pca-mass or inertia.")
    sign_rule: str = Field(description="Sign rule: max or count.")
    limit: int | None = Field(description="Subset size, or null for the whole dataset.")
    frame_dependent_properties: list[str] = Field(
        default_factory=list,
        description="Properties the dataset declares lab-frame dependent (e.g. alpha_xx): they change with the "
        "orientation by definition, so an orientation-only regression gain on them is expected, not a leak.",
    )
    result_key: str = Field(description="Key of the result.")
    version: str = Field(description="OrientScope version that built the report.")
    control: dict[str, Any] = Field(description="The same figures for the random-rotation control copy.")
    stages: dict[str, Any] = Field(description="Per stage: seconds spent and settings.")
    skipped_stages: dict[str, str] = Field(
        description="Stages ('models') or parts of stages ('chemistry.similarity') that could not run, with the reason."
    )
    orientation_classes: dict[str, Any] | None = Field(
        default=None,
        description="Molecules by the orientation their symmetry defines: none (single atoms, spherical tops), axis "
        "(linear molecules, symmetric tops) and full, with by_symmetry counts. KL, KS and the classifiers read "
        "full frames only.",
    )
    control_check: ControlCheckPublic | None = Field(
        default=None, description="The control's self-check (also inside verdict); shown before the verdict."
    )
    older_rule: dict[str, Any] | None = Field(
        default=None, description="Stages computed under an older rule, with a note; a re-run recomputes them."
    )
    verdict: VerdictPublic = Field(description="Plain-words verdict.")


SUMMARY_DOC = """The report object, exactly what `orientscope report ID --json` prints.

Besides the fields below, each pipeline stage adds its own keys (e.g. n_atoms_total, groups, chemistry).
"""


def summary_model() -> type[BaseModel]:
    """``SummaryPublic``: the report's own fields and every registered statistic's report fields (each optional: a
    stage that did not run leaves its statistics out), built now, so that a statistic registered later is in it."""
    fields = {f.name: (f.type | None, Field(default=None, description=f.description)) for f in report_fields()}
    return create_model("SummaryPublic", __base__=SummaryBase, __doc__=SUMMARY_DOC, **fields)


# ---------------------------------------------------------------- molecules
class MoleculeSummaryPublic(_Model):
    """A molecule as listed in a page of results."""

    id: str = Field(description="Molecule id, unique within its dataset.")
    smiles: str | None = Field(description="SMILES, null where the dataset has none.")
    formula: str = Field(description="Hill formula.")
    n_atoms: int = Field(description="Number of atoms.")
    classifier_score: float | None = Field(
        description="Out-of-fold probability that this pose is the stored (not a random) one; null without the models stage."
    )
    degenerate: bool = Field(description="True if the canonical frame is ill-defined (see degenerate_reason).")
    groups: dict[str, str | None] = Field(
        description="Group code per grouping (formula always; scaffold and cluster with the chemistry stage); "
        "null where the molecule is in no group (e.g. unclustered)."
    )
    group_labels: dict[str, str] = Field(
        description="What each group code means: the formula, the scaffold SMILES or the cluster representative's "
        "SMILES; 'unclustered' (or the grouping's ungrouped name) where the code is null."
    )


class MoleculesPublic(_Model):
    """One page of molecules."""

    total: int = Field(description="Number of molecules matching the filters (all pages).")
    offset: int = Field(description="Index of the first item in the filtered, sorted list.")
    limit: int = Field(description=f"Page size asked for (at most {MAX_PAGE}).")
    items: list[MoleculeSummaryPublic] = Field(description="The molecules of this page.")
    complete: bool = Field(
        True, description="False if a SMARTS scan stopped at its time limit: total counts the molecules scanned so far."
    )
    n_scanned: int | None = Field(None, description="Molecules the SMARTS scan covered (null without smarts).")


class AxisLonLat(_Model):
    """Direction of one canonical axis on the sphere."""

    axis: int = Field(description="Axis number 1..3 (1 = largest variance).")
    lon_deg: float = Field(description="Longitude in degrees, (-180, 180].")
    lat_deg: float = Field(description="Latitude in degrees, [-90, 90].")


class PropertyValue(_Model):
    """One stored molecular property."""

    name: str = Field(description="Property name, e.g. 'gap'.")
    value: float | None = Field(description="Value; null if missing.")
    unit: str | None = Field(description="Unit, e.g. 'Ha'; null if unknown.")


class MoleculePublic(MoleculeSummaryPublic):
    """Everything stored about one molecule."""

    elements: list[str] = Field(description="Element symbol per atom.")
    positions: list[Vector3] = Field(description="Stored pose, (n_atoms, 3) in ångström.")
    canonical_positions: list[Vector3] = Field(description="Canonical pose R·(x - centroid), (n_atoms, 3) in ångström.")
    rotation: Matrix3 = Field(description="Canonical frame R, 3x3, rows = principal axes in lab coordinates.")
    quaternion: list[float] = Field(description="R as a unit quaternion (x, y, z, w), w >= 0.")
    eigenvalues: list[float] = Field(description="Eigenvalues of the second-moment tensor (Å², descending for PCA).")
    degenerate_reason: str | None = Field(
        description="';'-joined codes (single_atom, linear, eigen_gap_12, eigen_gap_23, sign_tie_1, sign_tie_2) or null."
    )
    orientation: dict[str, Any] | None = Field(
        default=None,
        description="What the molecule's symmetry leaves of its pose: class (none, axis or full), defined_axis "
        "(1 or 3 for the axis class) and symmetry (single_atom, spherical_top, linear, prolate_top, oblate_top, "
        "or null for a full frame).",
    )
    axes_lonlat: list[AxisLonLat] = Field(description="Longitude and latitude of the three axes.")
    chemistry: dict[str, Any] | None = Field(
        default=None,
        description="What the chemistry stage made of the molecule: graph (bool), smiles (its graph's), source "
        "(smiles or 3d), and where it has no graph no_graph_reason (metal, charge, charge_unknown, budget, valence, "
        "element, rdkit) and message (RDKit's words); null without the chemistry stage.",
    )
    properties: list[PropertyValue] = Field(description="Stored properties with units.")
    result_key: str = Field(description="Key of the result these values come from.")


# ---------------------------------------------------------------- orientations
class OrientationRow(BaseModel):
    """One molecule's orientation in the orientations download (JSON form; CSV and Parquet have the same columns)."""

    id: str = Field(description="Molecule id.")
    r00: float = Field(description="R[0][0]; r00..r22 are the rows of R (rows = principal axes).")
    r01: float = Field(description="R[0][1].")
    r02: float = Field(description="R[0][2].")
    r10: float = Field(description="R[1][0].")
    r11: float = Field(description="R[1][1].")
    r12: float = Field(description="R[1][2].")
    r20: float = Field(description="R[2][0].")
    r21: float = Field(description="R[2][1].")
    r22: float = Field(description="R[2][2].")
    qx: float = Field(description="Quaternion x.")
    qy: float = Field(description="Quaternion y.")
    qz: float = Field(description="Quaternion z.")
    qw: float = Field(description="Quaternion w (>= 0).")
    ev1: float = Field(description="First eigenvalue.")
    ev2: float = Field(description="Second eigenvalue.")
    ev3: float = Field(description="Third eigenvalue.")
    degenerate: bool = Field(description="True if the frame is ill-defined.")
    degenerate_reason: str = Field(description="';'-joined degeneracy codes, '' if well defined.")
    lon1: float = Field(description="Longitude of axis 1 (degrees).")
    lat1: float = Field(description="Latitude of axis 1 (degrees).")
    lon2: float = Field(description="Longitude of axis 2 (degrees).")
    lat2: float = Field(description="Latitude of axis 2 (degrees).")
    lon3: float = Field(description="Longitude of axis 3 (degrees).")
    lat3: float = Field(description="Latitude of axis 3 (degrees).")
    classifier_score: float | None = Field(description="Classifier score, null without the models stage.")


# ---------------------------------------------------------------- groups
class GroupPublic(_Model):
    """One group of molecules."""

    group: str = Field(description="Group code, as the chemistry stage numbers the groups (or the formula itself).")
    label: str = Field(
        description="What the group is: its formula (C7H10O2), its scaffold SMILES (C1CC1) or its cluster "
        "representative's SMILES. `group=` filters accept the code or the label."
    )
    size: int = Field(description="Number of molecules in the group.")
    n_degenerate: int = Field(description="Molecules of the group with a degenerate frame.")
    mean_classifier_score: float | None = Field(description="Mean classifier score, null without the models stage.")
    statistics: dict[str, Any] = Field(description="Per-group statistics computed by the chemistry stage (e.g. KL).")


class UngroupedPublic(_Model):
    """Molecules outside every group of one kind (e.g. unclustered: no cluster leader within the threshold)."""

    label: str = Field(
        description="What they are called: 'unclustered', 'no scaffold (no chemical graph, or a single atom)' ..."
    )
    size: int = Field(description="How many molecules are in no group.")


class GroupsPublic(_Model):
    """The groups of one kind, largest first."""

    by: Literal[GROUP_KINDS] = Field(description="The grouping.")
    total: int = Field(description="Number of groups.")
    groups: list[GroupPublic] = Field(description="The groups (the largest 1000 at most).")
    ungrouped: UngroupedPublic = Field(description="Molecules in no group, reported apart from the groups.")


# ---------------------------------------------------------------- neighbours
class NeighborPublic(_Model):
    """One neighbouring molecule."""

    id: str = Field(description="Molecule id.")
    smiles: str | None = Field(description="SMILES, null where unknown.")
    degenerate: bool = Field(description="True if this neighbour's frame is ill-defined.")
    angle_deg: float | None = Field(
        description="Geodesic angle between the two canonical frames (degrees), for by=pose."
    )
    tanimoto: float | None = Field(description="Tanimoto similarity of the fingerprints (0..1), for by=chemistry.")


class NeighborsPublic(_Model):
    """The nearest molecules to one molecule."""

    id: str = Field(description="The query molecule.")
    by: Literal["pose", "chemistry"] = Field(description="pose: geodesic angle; chemistry: Tanimoto.")
    metric: Literal["angle_deg", "tanimoto"] = Field(description="Which distance field is filled.")
    k: int = Field(description=f"Number of neighbours asked for (at most {MAX_K}).")
    items: list[NeighborPublic] = Field(
        description="Neighbours, nearest first; by=pose, only molecules with a full frame (see the README, "
        "Orientation by symmetry)."
    )
    note: str | None = Field(
        default=None, description="Why the list is empty: by=pose, the molecule has no full frame."
    )


# ---------------------------------------------------------------- canonicalize
class CanonicalizeRequest(_Model):
    """A molecule to canonicalise: give elements and positions, or xyz text."""

    # Strict: 0 is not false and "1.5" is not a number, as the schema says.
    model_config = ConfigDict(extra="forbid", strict=True)

    elements: list[str | int] | None = Field(
        default=None,
        description=f"Element symbols (or atomic numbers), one per atom; 1..{MAX_ATOMS} atoms by default.",
        examples=[["O", "H", "H"]],
    )
    positions: list[list[float]] | None = Field(
        default=None,
        description="Cartesian coordinates in ångström, (n_atoms, 3), finite.",
        examples=[[[0.0, 0.0, 0.0], [0.96, 0.0, 0.0], [-0.24, 0.93, 0.0]]],
    )
    xyz: str | None = Field(
        default=None,
        description="XYZ text (atom count, comment line, 'symbol x y z' lines); instead of elements and positions.",
    )
    method: Literal["pca", "pca-mass", "inertia"] = Field(
        default="pca", description="pca: covariance; pca-mass: mass-weighted covariance; inertia: inertia tensor."
    )
    sign_rule: Literal["max", "count"] = Field(
        default="max", description="How the axis signs are fixed: the farthest atom ('max') or a majority ('count')."
    )
    mass_weighted: bool | None = Field(
        default=None, description="true turns method 'pca' into 'pca-mass'; false requires method 'pca'."
    )


class CanonicalizePublic(_Model):
    """The canonical frame of the submitted molecule (same code as the pipeline)."""

    method: str = Field(description="Frame method used.")
    sign_rule: str = Field(description="Sign rule used.")
    n_atoms: int = Field(description="Number of atoms.")
    rotation: Matrix3 = Field(description="R, 3x3, rows = principal axes in the submitted coordinates.")
    quaternion: list[float] = Field(description="R as a unit quaternion (x, y, z, w), w >= 0.")
    eigenvalues: list[float] = Field(description="Eigenvalues (Å² for PCA, Da·Å² for inertia).")
    centroid: Vector3 = Field(description="Centre used (Å; mass-weighted where the method is).")
    canonical_positions: list[Vector3] = Field(description="R·(x - centroid), (n_atoms, 3) in ångström.")
    degenerate: bool = Field(description="True if the frame is ill-defined; then it is not rotation-equivariant.")
    degenerate_reason: str | None = Field(description="';'-joined degeneracy codes, or null.")


# ---------------------------------------------------------------- map
class MapViewportPublic(_Model):
    """A region of the Mollweide plane and its pixel grid."""

    x0: float = Field(description="Left edge, Mollweide x.")
    x1: float = Field(description="Right edge, Mollweide x.")
    y0: float = Field(description="Bottom edge, Mollweide y.")
    y1: float = Field(description="Top edge, Mollweide y.")
    width: int = Field(description="Pixel columns of the grid.")
    height: int = Field(description="Pixel rows of the grid.")


class MapPointsPublic(_Model):
    """The real points of a region (points mode), in the map's draw order."""

    id: list[str] = Field(description="Molecule id of each point.")
    x: list[float] = Field(description="Mollweide x.")
    y: list[float] = Field(description="Mollweide y.")
    axis: list[int] = Field(description="Canonical axis (1, 2, 3) the point shows.")
    color: list[float | None] = Field(description="Category code into scale.labels, or the value on the colour scale.")
    match: list[bool] | None = Field(description="SMARTS match per point; null without a pattern.")


class MapPublic(_Model):
    """The orientation map of one view in one viewport."""

    mode: Literal["image", "points"] = Field(description="image above the point budget, else points.")
    kind: Literal["color", "density"] = Field(description="color: points coloured by the view; density: counts.")
    n_points: int = Field(description="Shown points inside the viewport.")
    n_drawn: int = Field(description="Distinct molecules with at least one shown point inside the viewport.")
    n_molecules: int = Field(description="Molecules that pass the group filter.")
    n_matches: int | None = Field(description="Of them, SMARTS matches; null without a pattern.")
    viewport: MapViewportPublic = Field(description="The region drawn and its pixel grid.")
    image_viewport: MapViewportPublic | None = Field(
        None,
        description="The image's own region and pixel grid (image mode): the viewport's, or for a wide region of "
        "many points one around it whose pixel edges fall on the map's fixed cell grid; null in points mode.",
    )
    scale: dict[str, Any] = Field(
        description="Colours: {kind: categorical, labels, colors} or {kind: continuous, title, colors, cmin, cmax}; "
        "with a SMARTS pattern (kind=color) {kind: highlight, title, labels, colors}: the view's colours are set "
        "aside, code 0 the other molecules (grey), 1 the matches."
    )
    notes: list[str] = Field(description="Why the view differs from the request (e.g. a colour not computed).")
    image: str | None = Field(description="data:image/png;base64 image of the viewport (image mode).")
    points: MapPointsPublic | None = Field(description="The region's points (points mode).")


class MapNearestPublic(_Model):
    """The shown point nearest to a click, within 5 pixels; every field null when none is."""

    id: str | None = Field(description="Molecule id.")
    axis: int | None = Field(description="Axis (1, 2, 3) of the point.")
    x: float | None = Field(description="Mollweide x of the point.")
    y: float | None = Field(description="Mollweide y of the point.")
    distance_px: float | None = Field(description="Distance from the click in pixels.")
    shared: int | None = Field(None, description="Molecules with a shown point in that point's pixel, itself included.")


class MapSharedMolecule(_Model):
    """One molecule of a shared pixel, as the chooser lists it."""

    id: str = Field(description="Molecule id.")
    formula: str = Field(description="Hill formula.")
    value: str | float | None = Field(description="What the map's colour shows for it: a category or a number.")
    value_text: str = Field(description="The value as a person reads it (4 significant digits, or 'no value').")


class MapMoleculePublic(MapSharedMolecule):
    """One molecule as a view of the map shows it: the hover preview's caption."""

    axis: int | None = Field(None, description="The axis (1, 2, 3) of the point described; null if none is shown.")
    color: str = Field(description="What the map is coloured by.")


class MapPixelPickPublic(_Model):
    """What the picked point's pixel holds, counted on the same pixel grid as `shared`."""

    count: int = Field(description="Shown points in the pixel.")
    molecules: int = Field(description="Distinct molecules among them (= shared).")
    dominant: str | None = Field(None, description="Most frequent category (colour by axis or group).")
    mean: float | None = Field(None, description="Mean value (colour by property or score).")
    ratio: float | None = Field(None, description="Density relative to uniform (kind=density).")
    matches: int | None = Field(None, description="SMARTS matches in the pixel.")


class MapPreviewPublic(MapNearestPublic):
    """What a hover shows: the shown point nearest to it (as /map/nearest), its preview card and its pixel."""

    caption: MapMoleculePublic | None = Field(
        description="The card's caption of the picked point (its axis and value); null when no point is near."
    )
    depiction: str | None = Field(description="The card's 2D depiction (SVG text); null when no point is near.")
    pixel: MapPixelPickPublic | None = Field(
        None, description="The picked point's pixel, on the viewport's grid; null when no point is near."
    )
    text: str | None = Field(None, description="The hover's words beside the cursor; null when no point is near.")


class MapSharedPublic(_Model):
    """A page of the molecules sharing the pixel a click picks, the molecule the click opens first."""

    total: int = Field(description="Molecules in the pixel.")
    offset: int = Field(description="Index of this page's first molecule among them.")
    limit: int = Field(description="Most molecules on one page.")
    color: str = Field(description="What the map is coloured by.")
    molecules: list[MapSharedMolecule] = Field(description="This page's molecules, the one a click opens first.")


class MapPixelPublic(_Model):
    """What one pixel of the aggregated image holds."""

    count: int = Field(description="Points in the pixel.")
    dominant: str | None = Field(None, description="Most frequent category (colour by axis or group).")
    mean: float | None = Field(None, description="Mean value (colour by property or score).")
    ratio: float | None = Field(None, description="Density relative to uniform (kind=density).")
    matches: int | None = Field(None, description="SMARTS matches in the pixel.")


class ScatterNearestPublic(_Model):
    """The scatter view's molecule nearest to a click, within 5 pixels; every field null when none is."""

    id: str | None = Field(description="Molecule id.")
    x: float | None = Field(description="The axis coordinate of the molecule.")
    y: float | None = Field(description="Its property value.")
    distance_px: float | None = Field(description="Distance from the click in pixels.")
    formula: str | None = Field(None, description="Its Hill formula.")
    color: str | None = Field(None, description="What the view is coloured by.")
    value: str | float | None = Field(None, description="What the colour shows for it: a category or a number.")
    shared: int | None = Field(
        None, description="Molecules in its pixel of the region shown, itself included (null without the region)."
    )


class ScatterPreviewPublic(ScatterNearestPublic):
    """What a hover on the scatter view shows: the molecule nearest to it (as /scatter/nearest) and its card."""

    caption: MapMoleculePublic | None = Field(description="The card's caption; null when no point is near.")
    depiction: str | None = Field(description="The card's 2D depiction (SVG text); null when no point is near.")
    text: str | None = Field(None, description="The hover's words beside the cursor; null when no point is near.")


# ---------------------------------------------------------------- what the dashboard draws of the map
# A plotly figure ({"data": [...], "layout": {...}}, arrays as plotly's typed arrays) and Dash components
# ({"type", "namespace", "props"}) are the browser libraries' own formats: passed through as JSON objects.


class MapPanelPublic(_Model):
    """The molecule panel of the map: what the dashboard shows of a clicked molecule."""

    molecule_id: str = Field(description="Molecule id.")
    info: Any = Field(description="Its info table as Dash html components (JSON).")
    viewer: dict[str, Any] | None = Field(description="Its 3D viewer spec (scenes of XYZ text and axis arrows).")


class FirstPaintImage(_Model):
    """An image placed on the map, in map units (SVG's y: down)."""

    source: str = Field(description="PNG as a data URL.")
    x: float = Field(description="Left edge.")
    y: float = Field(description="Top edge.")
    width: float = Field(description="Width, map units.")
    height: float = Field(description="Height, map units.")


class FirstPaintHook(_Model):
    """The map's test hook once drawn."""

    mode: str = Field(description="image or points.")
    drawn: int = Field(description="Distinct molecules drawn.")
    token: str | None = Field(None, description="The drawing's token: a new one for each map drawn anew.")


class FirstPaintSphereColor(_Model):
    """How the sphere's points are coloured: ``kind`` categorical (``code`` into ``palette``, legend ``labels``),
    highlight (a SMARTS search: code 1 a match, 0 the others, grey and faded), continuous (``values`` on the colour
    bar ``scale``, ``ticks`` its words) or none (every point ``palette[0]``)."""

    kind: Literal["categorical", "highlight", "continuous", "none"] = Field(description="The colour kind.")
    code: list[int] | None = Field(None, description="Index into palette, per point (not continuous).")
    palette: list[str] | None = Field(None, description="The colours the codes index (CSS).")
    labels: list[str] | None = Field(None, description="The legend's label per palette colour.")
    values: list[float | None] | None = Field(
        None, description="Per point, its place on the colour bar, 0 to 1 (null: no value, drawn grey)."
    )
    scale: list[str] | None = Field(None, description="The colour bar's evenly spaced stops (CSS), low to high.")
    missing: str | None = Field(None, description="The colour of a point with no value (CSS).")
    title: str | None = Field(None, description="The colour bar's title.")
    ticks: list[tuple[float, str]] | None = Field(None, description="The colour bar's labels: [place 0-1, words].")


class _ReferenceAxis(_Model):
    """A reference orientation's axis, drawn on the map (a star) or on the sphere."""

    label: str = Field(description="Which axis of the reference orientation it is.")
    color: str = Field(description="Its colour (CSS).")


class FirstPaintReference(_ReferenceAxis):
    """A reference orientation's axis on the sphere."""

    v: list[float] = Field(description="Its unit vector [x, y, z].")


class FirstPaintSphere(_Model):
    """The 3D sphere's points as unit vectors, drawn by frontend_assets/map_sphere.js from plotly's default camera."""

    vectors: list[float] = Field(description="The points' unit vectors, flat: x0, y0, z0, x1, ... (rounded to 1e-3).")
    ids: list[str] = Field(description="Each point's molecule id.")
    keys: list[int] = Field(description="Each point's tie-break key, 3 × molecule index + axis − 1 (lowest wins).")
    color: FirstPaintSphereColor = Field(description="How the points are coloured, with the legend.")
    size: float = Field(description="A point's diameter, px.")
    outline: str | None = Field(description="A point's outline colour (null: none).")
    fade: dict[str, float] = Field(
        description="Opacity of a point behind the sphere (back) and of a SMARTS non-match (muted)."
    )
    reference: list[FirstPaintReference] = Field(description="The reference orientation's axes.")
    ring: list[list[float | None]] = Field(
        description="The selected molecule's axes [x, y, z], ringed (null: an axis its symmetry leaves undefined)."
    )


class FirstPaintStar(_ReferenceAxis):
    """A reference orientation's axis on the map."""

    x: float = Field(description="Map x of the axis, map units.")
    y: float = Field(description="Map y of the axis, map units, y down.")
    title: str | None = Field(None, description="What a hover on it says: the axis, its longitude and latitude.")


class FirstPaintPoints(_Model):
    """Points drawn over a density map too sparse to bin (map units, y down)."""

    x: list[float] = Field(description="Map x per point, map units.")
    y: list[float] = Field(description="Map y per point, map units, y down.")
    color: list[str] = Field(description="Colour per point (CSS).")
    r: float = Field(description="Marker radius, map units.")
    stroke: str | None = Field(description="Marker outline colour (null: no outline).")
    stroke_width: float = Field(description="Marker outline width, map units.")


class MapLegendItem(_Model):
    """One swatch of a map's legend."""

    label: str = Field(description="What the colour stands for.")
    color: str | None = Field(description="Its colour (CSS).")
    symbol: str = Field(description="The marker drawn: circle, star, or ring (an open circle).")


class MapTick(_Model):
    """A value marked on a colour bar."""

    value: float = Field(description="The value.")
    text: str = Field(description="Its words on the bar.")


class MapColorbar(_Model):
    """A continuous colour scale's bar."""

    title: str = Field(description="What the colours show.")
    colors: list[str] = Field(description="The scale's colour stops, low to high, evenly spaced.")
    cmin: float | None = Field(description="The value of the lowest colour.")
    cmax: float | None = Field(description="The value of the highest colour.")
    ticks: list[MapTick] = Field(description="Values marked on the bar and their words.")


class MapLegend(_Model):
    """A map's legend: categorical swatches and/or a continuous colour bar."""

    items: list[MapLegendItem] = Field(description="Swatches in drawing order.")
    colorbar: MapColorbar | None = Field(description="The continuous colour bar (null: none).")


class MapPointsLayer(_Model):
    """Points of one colour, drawn on the renderer's canvas (map units, y down)."""

    kind: Literal["points", "highlight"] = Field(description="The view's points, or SMARTS matches drawn over them.")
    x: dict[str, str] = Field(description="Map x per point: a typed array {dtype: 'i2', bdata: base64 int16}.")
    y: dict[str, str] = Field(description="Map y per point, y down, the same encoding.")
    n: int = Field(description="Points in the layer.")
    color: str | None = Field(description="Fill colour (CSS); a ring's outline colour.")
    size: float = Field(description="Marker diameter, screen pixels.")
    opacity: float = Field(description="Fill opacity, 0–1.")
    stroke: str | None = Field(description="Outline colour (null: none).")
    stroke_width: float = Field(description="Outline width, screen pixels.")
    ring: bool = Field(description="An open circle (SMARTS matches), not a filled dot.")
    range: list[float | None] | None = Field(
        None, description="The values its colour stands for (a continuous colour's bin: low, high; null: open)."
    )


class MapRegion(_Model):
    """A region of the Mollweide plane (the map spans x ±2√2, y ±√2)."""

    x0: float = Field(description="Left edge, Mollweide x.")
    x1: float = Field(description="Right edge.")
    y0: float = Field(description="Bottom edge, Mollweide y.")
    y1: float = Field(description="Top edge.")


class FirstPaintDensityMap(_Model):
    """One density map: its cells as an image, their values for the hover, the reference stars."""

    title: str = Field(description="The map's title.")
    image: FirstPaintImage = Field(description="The cells drawn as an image.")
    grid: dict[str, Any] = Field(description="The cells: x0, dx, y0, dy, nx, ny and z (row-major from the bottom).")
    stars: list[FirstPaintStar] = Field(description="The reference orientation's axes.")
    points: FirstPaintPoints | None = Field(
        description="Points drawn instead of cells where the set is too sparse to bin (null: none)."
    )
    legend: MapLegend | None = Field(None, description="Its colour bar (density relative to uniform).")


class MapPaintPublic(_Model):
    """What the map's renderer (frontend_assets/map_draw.js) draws of a region: the flat map's image or points, or
    the density view's two maps, with the outline, graticule, reference stars and legend."""

    view: Literal["map", "density"] = Field(description="The view drawn.")
    settings: dict[str, Any] = Field(description="What its clicks and hover ask the REST API for.")
    hook: FirstPaintHook = Field(description="The test hook the drawn map sets.")
    region: MapRegion = Field(description="The region shown, Mollweide units.")
    frame: dict[str, list[list[float] | None]] = Field(
        description="outline and graticule polylines, map units, y down; null breaks the line."
    )
    title: str | None = Field(None, description="The flat map's title (view=map).")
    image: FirstPaintImage | None = Field(None, description="The aggregated image (view=map above the point budget).")
    layers: list[MapPointsLayer] | None = Field(None, description="The points, one layer per colour (view=map).")
    stars: list[FirstPaintStar] | None = Field(None, description="The reference orientation's axes (view=map).")
    legend: MapLegend | None = Field(None, description="The flat map's legend (view=map).")
    maps: list[FirstPaintDensityMap] | None = Field(None, description="The dataset's and its control's (view=density).")


class FirstPaintPanel(_Model):
    """The molecule panel as the page first shows it."""

    layout: Any = Field(description="The panel as Dash html components (JSON).")
    viewer: dict[str, Any] | None = Field(description="The shown molecule's 3D viewer spec (null: none).")


class FirstPaintPublic(_Model):
    """Everything the page's first paint draws before Dash has loaded; ``view`` null when it draws nothing
    (a zoomed map, a points map, a view with no static picture)."""

    view: Literal["map", "sphere", "density"] | None = Field(description="The view drawn.")
    settings: dict[str, Any] | None = Field(None, description="What its clicks and hover ask the REST API for.")
    hook: FirstPaintHook | None = Field(None, description="The test hook the drawn map sets (null: nothing drawn).")
    title: str | None = Field(None, description="The view's title.")
    frame: dict[str, list[list[float] | None]] | None = Field(
        None, description="outline and graticule polylines, map units, y down; null breaks the line."
    )
    image: FirstPaintImage | None = Field(None, description="The map's aggregated image (view=map).")
    region: MapRegion | None = Field(None, description="The region shown, Mollweide units (view=map, density).")
    layers: list[MapPointsLayer] | None = Field(None, description="The map's points (view=map, points mode).")
    stars: list[FirstPaintStar] | None = Field(None, description="The reference orientation's axes (view=map).")
    legend: MapLegend | None = Field(None, description="The map's legend (view=map).")
    sphere: FirstPaintSphere | None = Field(None, description="The sphere's points (view=sphere).")
    maps: list[FirstPaintDensityMap] | None = Field(None, description="The dataset's and its control's (view=density).")
    panel: FirstPaintPanel | None = Field(None, description="The molecule panel beside the view.")
