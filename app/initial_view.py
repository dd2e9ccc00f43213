"""The view a page load asks for, resolved on the server and shipped inside ``/_dash-layout``.

The page sends its own query string with its layout request (the ``X-OrientScope-Page`` header, added by
a script of the page: ``app/compat.py`` ``send_page_query_with_layout``). The layout then arrives with the
controls set and the map already in it, instead of a callback round trip from the URL to the view state
and another one to the map. Without the header the layout is the plain one and the callbacks resolve the
URL as before.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from orientscope.app import data
from orientscope.app.compat import PAGE_QUERY_HEADER
from orientscope.app.state import parse_query
from orientscope.core.settings import DEFAULT_DATASET
from orientscope.figures.state import ViewState
from orientscope.services.bytecache import ByteBudgetCache, shared_cache

LAYOUT_PATH = "/_dash-layout"
BASE_COLOR_OPTIONS = [
    {"label": "axis", "value": "axis"},
    {"label": "group", "value": "group"},
    {"label": "classifier score", "value": "score"},
]

_PAGE_QUERY: ContextVar[str | None] = ContextVar("page_query", default=None)


def page_query() -> str | None:
    """The query string of the page whose layout is being served (None if unknown)."""
    return _PAGE_QUERY.get()


PAGE_HEADER = PAGE_QUERY_HEADER.lower().encode("latin-1")
MAX_QUERY_CHARS = 8192  # longer than any page's query: a header past it is not one


def header_query(value: str | None) -> str | None:
    """'?…' (or '') of the page query header; None for a missing or malformed one."""
    if value is None or len(value) > MAX_QUERY_CHARS or (value and not value.startswith("?")):
        return None
    return value if value != "?" else ""


class PageQueryMiddleware:
    """Exposes the page's query string (its header) to the layout function of ``GET /_dash-layout``.

    With ``version`` (a cheap callable that changes whenever the stored datasets
    do), finished layouts are kept per (query, version) in the process's byte-bounded
    cache (about 2.5 MB each with a full-QM9 map): a page view costs about 0.1 s of
    server CPU to build and encode, a repeated one nothing.
    """

    def __init__(
        self, app: ASGIApp, version: Callable[[], Hashable] | None = None, cache: ByteBudgetCache | None = None
    ) -> None:
        self.app = app
        self.version = version
        self.cache = cache if cache is not None else shared_cache()
        self._own = object()  # keys of this app's layouts: another app may serve the same query

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or not scope["path"].endswith(LAYOUT_PATH):
            await self.app(scope, receive, send)
            return
        sent_query = next((v.decode("latin-1") for k, v in scope.get("headers") or [] if k == PAGE_HEADER), None)
        query = header_query(sent_query)
        key = None
        # A zoomed page is built afresh: each zoom is a URL of its own, and keeping their layouts
        # would fill the cache with one 2.5 MB layout per zoom. So is a selection's.
        one_off = {"zoom", "sel"} & dict(parse_qsl((query or "").lstrip("?"))).keys()
        if query is not None and self.version is not None and not one_off:
            key = (self._own, query, await anyio.to_thread.run_sync(self.version))  # reads dataset metadata
        hit = self.cache.get("first_view", key) if key is not None else None
        if hit is not None:
            await send({"type": "http.response.start", "status": 200, "headers": hit[0]})
            await send({"type": "http.response.body", "body": hit[1]})
            return
        token = _PAGE_QUERY.set(query)
        sent: dict = {"status": None, "headers": [], "body": []}

        async def capture(message) -> None:
            if message["type"] == "http.response.start":
                sent["status"], sent["headers"] = message["status"], list(message.get("headers", []))
            elif message["type"] == "http.response.body":
                sent["body"].append(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, capture if key is not None else send)
        finally:
            _PAGE_QUERY.reset(token)
        if key is not None and sent["status"] == 200:
            body = b"".join(sent["body"])
            self.cache.put("first_view", key, (sent["headers"], body), size=len(body))


def datasets_version(data_dir: Path) -> tuple:
    """Changes whenever a dataset is added, removed, renamed, recomputed or makes progress, or one of its
    model audits is added, finishes or fails (the layout lists them)."""
    return tuple(
        (
            i.id,
            i.name,
            i.n_molecules,
            i.status,
            i.message,
            i.result_key,
            tuple(i.stages),
            _audits_version(data_dir, i.id),
        )
        for i in data.list_datasets(data_dir)
    )


def _audits_version(data_dir: Path, dataset_id: str) -> tuple:
    try:
        return tuple((a["id"], a["state"]) for a in data.list_audits(data_dir, dataset_id))
    except data.OrientScopeError:  # a dataset being written or removed: its audits come with it
        return ()


def dataset_options(data_dir: Path) -> tuple[list[dict], list[str]]:
    """Dropdown options for every dataset, and the ids of the ready ones."""
    options, ready = [], []
    for info in data.list_datasets(data_dir):
        label = f"{info.name} ({info.n_molecules:,})"
        if info.status != data.READY:
            label += f" · {info.status}"
        options.append({"label": label, "value": info.id})
        if info.status == data.READY:
            ready.append(info.id)
    return options, ready


def color_options(data_dir: Path, dataset: str | None) -> list[dict]:
    """Colour choices for a dataset: the fixed ones, one per stored property, and the prediction shift
    of each property of each finished model audit."""
    try:
        props = data.property_names(data_dir, dataset) if dataset else []
        audits = [a for a in data.list_audits(data_dir, dataset) if a["state"] == "done"] if dataset else []
    except data.OrientScopeError:
        props, audits = [], []
    shifts = [
        {"label": f"prediction shift: {a['name']} · {p}", "value": f"shift:{a['id']}:{p}"}
        for a in audits
        for p in a.get("verdicts", {})
    ]
    return BASE_COLOR_OPTIONS + [{"label": f"property: {p}", "value": f"prop:{p}"} for p in props] + shifts


@dataclass(frozen=True)
class ResolvedView:
    """A URL's view with unknown datasets and molecules replaced, and what was replaced."""

    state: ViewState
    messages: list[str] = field(default_factory=list)
    dataset_options: list[dict] = field(default_factory=list)


def resolve_view(data_dir: Path, search: str | None) -> ResolvedView:
    """The view a URL query asks for, made valid: defaults filled in, unknown names reported."""
    options, ready = dataset_options(data_dir)
    st, messages = parse_query(search)
    fallback = DEFAULT_DATASET if DEFAULT_DATASET in ready else (ready[0] if ready else None)
    if st.dataset is None:
        st = st.with_(dataset=fallback)
    elif st.dataset not in {o["value"] for o in options}:
        messages.append(
            f"Unknown dataset {st.dataset!r}; showing {fallback or 'nothing'} instead. "
            f"Known datasets: {', '.join(o['value'] for o in options) or 'none'}."
        )
        st = st.with_(dataset=fallback, molecule=None, group=None)
    b_dataset, _, b_table = (st.compare or "").partition("::")
    if st.compare and (b_dataset not in ready or b_table not in ("", "control")):
        messages.append(
            f"Unknown dataset {st.compare!r} to compare with; known: {', '.join(ready) or 'none'} "
            "(a control is '<id>::control')."
        )
        st = st.with_(compare=None)
    if st.dataset and st.color != "axis":
        known = [o["value"] for o in color_options(data_dir, st.dataset)]
        if st.color not in known:
            messages.append(
                f"Unknown colour {st.color!r} for dataset {st.dataset!r}; coloured by axis instead. "
                f"Known: {', '.join(known)}."
            )
            st = st.with_(color="axis")
    if st.molecule and st.dataset:
        try:
            data.load_map_data(data_dir, st.dataset).row_of(st.molecule)
        except (KeyError, data.OrientScopeError):
            messages.append(f"Unknown molecule {st.molecule!r} in dataset {st.dataset!r}; nothing selected.")
            st = st.with_(molecule=None)
    return ResolvedView(st, messages, options)
