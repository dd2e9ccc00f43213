"""The ``orientscope`` command line."""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from tqdm import tqdm

from orientscope.core.errors import OrientScopeError
from orientscope.core.resources import LazyModule
from orientscope.core.settings import DEFAULT_SEED, SettingsError, check_choice, resolve_data_dir, settings
from orientscope.loaders import registry
from orientscope.store import datasets as ds

pipeline = LazyModule("orientscope.pipeline.precompute")
reports = LazyModule("orientscope.services.report")
export_mod = LazyModule("orientscope.pipeline.export")
ingest_mod = LazyModule("orientscope.pipeline.ingest")
synth_mod = LazyModule("orientscope.pipeline.synth")
datasets_svc = LazyModule("orientscope.services.datasets")
audit_mod = LazyModule("orientscope.pipeline.model_audit")
ids_mod = LazyModule("orientscope.loaders.ids")
verdict_mod = LazyModule("orientscope.science.audit_verdict")
audit_table = LazyModule("orientscope.services.audit_table")
sharded_ingest = LazyModule("orientscope.pipeline.sharded_ingest")
map_stage = LazyModule("orientscope.pipeline.map_stage")
results_svc = LazyModule("orientscope.services.results")
migrate_mod = LazyModule("orientscope.pipeline.migrate")

app = typer.Typer(help="OrientScope: is your molecular dataset aligned?", no_args_is_help=True, add_completion=False)

DataDir = Annotated[
    Path | None, typer.Option("--data-dir", help="store folder (default: $ORIENTSCOPE_DATA_DIR or ./data)")
]
Frame = Annotated[str, typer.Option("--frame", help="pca | pca-mass | inertia")]
Sign = Annotated[str, typer.Option("--sign", help="sign rule: max | count")]
Seed = Annotated[int, typer.Option("--seed", help="seed for the control rotations, splits and bootstrap")]
Limit = Annotated[int | None, typer.Option("--limit", help="use an evenly spread subset of N molecules")]
Cluster = Annotated[
    str | None,
    typer.Option(
        "--cluster",
        help="in-process | local:W | tcp://HOST:PORT (default: $ORIENTSCOPE_CLUSTER, else by the dataset's size)",
    ),
]

ShardSize = Annotated[
    int | None,
    typer.Option("--shard-size", min=1, help="molecules per shard (default: $ORIENTSCOPE_SHARD_SIZE or 250000)"),
]


class _ProgressBar:
    """The CLI's view of a :class:`orientscope.core.progress.Progress`: one tqdm bar for the whole task.

    The bar appears at the first report of progress, so a task with nothing to
    compute (or one that fails first, e.g. on an unknown dataset) prints none.
    """

    def __init__(self, desc: str):
        self.desc, self.bar = desc, None

    def __call__(self, fraction: float, message: str, stage: str = "") -> None:
        if self.bar is None:
            bar_format = "{desc}: {percentage:3.0f}%|{bar}| {elapsed} {postfix}"
            self.bar = tqdm(total=100, desc=self.desc, file=sys.stderr, bar_format=bar_format)
        self.bar.n = int(round(100 * fraction))
        self.bar.set_postfix_str((f"{stage}: {message}" if stage else message)[:60])

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    # A with-block closes the bar before an error is printed (the error then reads on its own line).
    def __enter__(self) -> _ProgressBar:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_BAD_INPUT = (OrientScopeError, ValueError, FileNotFoundError)


@contextmanager
def _failing(errors: tuple[type[Exception], ...] = _BAD_INPUT) -> Iterator[None]:
    """End the command on any of ``errors`` (default: a bad input or store): its message on stderr, exit 2."""
    try:
        yield
    except errors as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from err


def _precompute(root: Path, dataset: str, params: dict, **options):
    """``pipeline.precompute`` with a progress bar; its ResultStore."""
    with _ProgressBar(f"precompute {dataset}") as bar:
        return pipeline.precompute(root, dataset, params, progress=bar, **options)


@app.command("precompute")
def precompute_cmd(
    dataset: str,
    data_dir: DataDir = None,
    frame: Frame = "pca",
    sign: Sign = "max",
    seed: Seed = DEFAULT_SEED,
    limit: Limit = None,
    force: Annotated[bool, typer.Option("--force", help="recompute stages that are already stored")] = False,
    cluster: Cluster = None,
) -> None:
    """Compute and store every result for DATASET (reuses what is already stored).

    A dataset stored before the sharded layout is refused: `orientscope migrate DATASET` converts it.
    """
    with _failing():
        params = pipeline.make_params(frame, sign, seed, limit)
        store = _precompute(resolve_data_dir(data_dir), dataset, params, force=force, cluster=cluster)
    typer.echo(f"stored {dataset} [{store.key}] in {store.dir}")


@app.command("map")
def map_cmd(
    dataset: str,
    data_dir: DataDir = None,
    table: Annotated[
        list[str] | None, typer.Option("--table", help="original | control (repeat for both; default both)")
    ] = None,
) -> None:
    """Run the map stage on DATASET's active result: store its orientation map (projected axes, the banded
    default view) in the result, if not there and current. Precompute runs it too; this is for a result stored
    before the stage, so a server memory-maps the map at start instead of building it (a minute or two at 10M)."""
    with _failing():
        root = resolve_data_dir(data_dir)
        store = results_svc.open_result(root, dataset)
        tables = tuple(table or map_stage.TABLES)
        for name in tables:
            check_choice(name, map_stage.TABLES, "table")
        folders = map_stage.write_maps(store, None, tables)
    for folder in folders:
        typer.echo(f"stored the map of {dataset} in {folder}")


@app.command("migrate")
def migrate_cmd(
    dataset: str,
    data_dir: DataDir = None,
    shard_size: ShardSize = None,
) -> None:
    """Bring DATASET to the current store format: a dataset stored before the sharded layout is made sharded
    (its results re-cut, not recomputed), and every result gets its memory-mapped columns and map arrays
    (written if missing or stale).

    The only command that reads the old single-folder layout; every other one refuses it and names this one.
    """
    with _failing():
        root = resolve_data_dir(data_dir)
        if not migrate_mod.needs_migration(root, dataset):
            meta = ds.read_meta(root, dataset)  # NotFoundError for an unknown dataset
            typer.echo(f"{dataset} is already sharded ({len(meta['shards'])} shards)")
        else:
            with _ProgressBar(f"migrate {dataset}") as bar:
                meta = migrate_mod.migrate_dataset(root, dataset, shard_size=shard_size, progress=bar)
            typer.echo(f"migrated {dataset}: {meta['n_molecules']} molecules in {len(meta['shards'])} shards")
        with _ProgressBar(f"read arrays of {dataset}") as bar:
            written = migrate_mod.write_all_read_arrays(root, dataset, progress=bar)
    typer.echo(f"{dataset}: memory-mapped columns and map arrays current for {len(written)} result(s)")


@app.command("report")
def report_cmd(
    dataset: str,
    data_dir: DataDir = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as one JSON object")] = False,
    frame: Frame = "pca",
    sign: Sign = "max",
    seed: Seed = DEFAULT_SEED,
    limit: Limit = None,
    cluster: Cluster = None,
) -> None:
    """Print DATASET's orientation-bias report, computing whatever is missing."""
    with _failing():
        params = pipeline.make_params(frame, sign, seed, limit)
        root = resolve_data_dir(data_dir)
        _precompute(root, dataset, params, cluster=cluster)
        report = reports.build_report(root, dataset, params)
    if as_json:
        typer.echo(json.dumps(report))
    else:
        typer.echo(format_report(report))


@app.command("list")
def list_cmd(data_dir: DataDir = None) -> None:
    """List stored datasets."""
    root = resolve_data_dir(data_dir)
    for dataset_id in ds.list_dataset_ids(root):
        meta = ds.read_meta(root, dataset_id)
        typer.echo(f"{dataset_id}\t{meta.get('name')}\t{meta.get('n_molecules')} molecules\t{meta.get('source')}")


SHOWN_PROBLEMS = 5  # skipped records named after an ingest; the rest are counted


def _ingested(root: Path, meta: dict) -> None:
    skipped = f", {meta['n_skipped']} malformed record(s) skipped" if meta.get("n_skipped") else ""
    typer.echo(f"ingested {meta['id']} ({meta['name']}): {meta['n_molecules']} molecules{skipped}")
    problems = meta.get("problems", [])[:SHOWN_PROBLEMS]
    for problem in problems:
        typer.echo(f"  skipped: {problem}", err=True)
    if (meta.get("n_skipped") or 0) > len(problems):  # say that the list is not all of them
        typer.echo(f"  … and {meta['n_skipped'] - len(problems):,} more skipped record(s)", err=True)
    for warning in meta.get("warnings", []):
        typer.echo(f"  warning: {warning}", err=True)
    for stage, reason in datasets_svc.dataset_info(root, meta["id"]).skipped_stages.items():
        typer.echo(f"  stage {stage} skipped: {reason}")


@app.command("ingest")
def ingest_cmd(
    paths: Annotated[list[Path], typer.Argument(help="files, folders or glob patterns ('data/*.npz')")],
    name: Annotated[str, typer.Option("--name", help="display name; the dataset id is derived from it")],
    data_dir: DataDir = None,
    fmt: Annotated[str, typer.Option("--format", help=" | ".join(registry.choices()))] = registry.AUTO,
    format_option: Annotated[
        list[str] | None,
        typer.Option(
            "--format-option",
            help="NAME=VALUE, a reading option of the format (repeatable): "
            + "; ".join(f"{f.name}: {registry.options_help(f)}" for f in registry.FORMATS if f.options),
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="fail on the first malformed record instead of skipping it")
    ] = False,
    frame_dependent: Annotated[
        str,
        typer.Option(
            "--frame-dependent",
            help="comma-separated properties whose values change with the lab frame (e.g. tensor components)",
        ),
    ] = "",
    cluster: Cluster = None,
    shard_size: ShardSize = None,
) -> None:
    """Load PATHS, store them as one dataset and run the pipeline.

    One file (or store folder, or zip/tar) is read in this process. Several files,
    a folder of files or a glob, or any --cluster or --shard-size, are read in
    parallel on the engine. Either way the dataset is stored as shards and every
    stage runs shard by shard.
    """
    single = len(paths) == 1 and not any(ch in str(paths[0]) for ch in "*?[") and cluster is None
    single = single and shard_size is None and (paths[0].is_file() or registry.folder_format(paths[0]) is not None)
    root = resolve_data_dir(data_dir)
    names = [p.strip() for p in frame_dependent.split(",") if p.strip()]
    desc = f"ingest {paths[0].name}" + (f" (+{len(paths) - 1})" if len(paths) > 1 else "")
    with _failing():
        options = registry.check_options(registry.check_format(fmt), registry.parse_options(format_option or []))
        with _ProgressBar(desc) as bar:
            if single:
                meta = ingest_mod.ingest_file(
                    root,
                    paths[0],
                    name,
                    fmt=fmt,
                    strict=strict,
                    progress=bar,
                    frame_dependent=names,
                    format_options=options,
                )
            else:
                meta = sharded_ingest.ingest_files(
                    root, paths, name, fmt=fmt, strict=strict, cluster=cluster, shard_size=shard_size,
                    progress=bar, frame_dependent=names, format_options=options,
                )  # fmt: skip
    _ingested(root, meta)


@app.command("generate")
def generate_cmd(
    smiles: Annotated[
        Path, typer.Option("--smiles", help="one SMILES per line, optionally followed by a name: 'CCO ethanol'")
    ],
    name: Annotated[str, typer.Option("--name", help="display name; the dataset id is derived from it")],
    data_dir: DataDir = None,
    random_coords: Annotated[bool, typer.Option("--random-coords", help="ETKDG with useRandomCoords=True")] = False,
    seed: Annotated[int, typer.Option("--seed", help="ETKDG randomSeed")] = DEFAULT_SEED,
) -> None:
    """Embed SMILES with RDKit ETKDG and analyse the poses it produces."""
    root = resolve_data_dir(data_dir)
    with _failing():
        with _ProgressBar(f"generate {smiles.name}") as bar:
            meta = ingest_mod.generate_dataset(root, smiles, name, seed=seed, random_coords=random_coords, progress=bar)
    _ingested(root, meta)


@app.command("synth")
def synth_cmd(
    n: Annotated[int, typer.Option("--n", min=1, help="number of molecules")],
    out: Annotated[Path, typer.Option("--out", help="output folder (NPZ shards and synth.json)")],
    bias: Annotated[
        str, typer.Option("--bias", help="uniform (Haar rotations) | qm9 (QM9 poses, blurred)")
    ] = "uniform",
    blur: Annotated[float, typer.Option("--blur", help="qm9 bias: turn by |N(0, DEG)| about a uniform axis")] = 10.0,
    seed: Annotated[int, typer.Option("--seed", help="seed of the rotations")] = DEFAULT_SEED,
    shard_size: Annotated[int, typer.Option("--shard-size", min=1, help="molecules per NPZ shard")] = 250_000,
) -> None:
    """Write N molecules (QM9 tiled, each turned by a seeded rotation) as NPZ shards for scale tests."""
    with _failing((ValueError,)):
        spec = synth_mod.SynthSpec(n=n, bias=bias, blur_deg=blur, seed=seed, shard_size=shard_size)
    with _failing((OSError,)):
        with tqdm(total=-(-n // shard_size), desc=f"synth {n:,} ({bias})", unit="shard", file=sys.stderr) as bar:
            manifest = synth_mod.write_synth(out, spec, progress=lambda done, total: bar.update(done - bar.n))
    typer.echo(
        f"wrote {manifest['n_molecules']:,} molecules in {len(manifest['shards'])} shards to {out} "
        f"({manifest['seconds']:.1f} s)"
    )


@app.command("export")
def export_cmd(
    dataset: str,
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            help="random (uniformly rotated) | canonical (canonical poses) | stored (as stored: the poses an audit compares with)",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="output file")],
    data_dir: DataDir = None,
    seed: Annotated[int, typer.Option("--seed", help="seed of the random rotations")] = DEFAULT_SEED,
    fmt: Annotated[
        str | None, typer.Option("--format", help=" | ".join(registry.writable()) + " (default: the input's)")
    ] = None,
    copies: Annotated[
        int | None,
        typer.Option("--copies", help="random mode: write K rotated copies OUT-stem.copy<k>"),
    ] = None,
    purpose: Annotated[
        str,
        typer.Option(
            "--purpose",
            help="random mode: augment (training data, the default) | audit (the copies audit-model scores); "
            "two streams that never share a pose",
        ),
    ] = "augment",
    ids: Annotated[
        Path | None, typer.Option("--ids", help="export only these molecules: a file of ids (one per line, or CSV)")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="export an evenly spread subset of N molecules (of --ids)")
    ] = None,
) -> None:
    """Write DATASET with de-biased poses; the per-molecule rotations go to OUT.rotations.csv."""
    with _failing():
        info = export_mod.export_dataset(
            resolve_data_dir(data_dir), dataset, mode, out, seed=seed, fmt=fmt, copies=copies, purpose=purpose,
            ids=None if ids is None else ids_mod.read_ids(ids), limit=limit,
        )  # fmt: skip
    for path in info.get("paths", [info["path"]]):
        typer.echo(
            f"wrote {info['n_molecules']} molecules ({info['mode']}, {info['format']}, seed {info['seed']}) to {path}"
        )
    rule = f" ({info['purpose']} stream: {info['rotation_rule']})" if info.get("rotation_rule") else ""
    typer.echo(f"rotations: {info['rotations_path']}{rule}")


# audit-model --fail-on: the exit code when a property's tier fails the gate (2 means a bad input).
EXIT_AUDIT_FAILED = 3


@app.command("audit-model")
def audit_model_cmd(
    dataset: str,
    predictions: Path,
    name: Annotated[str, typer.Option("--name", help="display name of the audit")],
    data_dir: DataDir = None,
    seed: Annotated[int, typer.Option("--seed", help="seed of the bootstrap and the permutations")] = DEFAULT_SEED,
    as_json: Annotated[bool, typer.Option("--json", help="print the audit as one JSON object")] = False,
    ids: Annotated[
        Path | None,
        typer.Option(
            "--ids", help="audit only these molecules (e.g. held-out ones): a file of ids, one per line or CSV"
        ),
    ] = None,
    margin: Annotated[
        float, typer.Option("--margin", min=0.0, help="the tiers' reliance margin, a fraction (0.01: ±1 %)")
    ] = 0.01,
    max_shift: Annotated[
        float | None,
        typer.Option(
            "--max-shift",
            min=0.0,
            help="robust needs the rotation shift's 95th percentile at most this (the property's unit)",
        ),
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help=f"exit {EXIT_AUDIT_FAILED} if a property's tier (all audited molecules) is: leans | not-robust "
            "(anything but invariant or robust) | not-invariant",
        ),
    ] = None,
) -> None:
    """Does a model lean on the pose? Audit PREDICTIONS (stored vs rotated poses) against DATASET and store it.

    With --fail-on, the audit is stored and printed, then the command exits with code 3 if a property fails
    the gate (a bad input exits with 2).
    """
    with _failing():
        if fail_on is not None:
            verdict_mod.passes("invariant", fail_on)  # ValueError naming the choices, before any work
        decision = verdict_mod.Decision(margin, max_shift)
        chosen = None if ids is None else ids_mod.read_ids(ids, held_out=True)
        with _ProgressBar(f"audit {predictions.name}") as bar:
            record = audit_mod.run_audit(
                resolve_data_dir(data_dir), dataset, predictions, name, seed=seed, progress=bar, ids=chosen,
                decision=decision,
            )  # fmt: skip
    if as_json:
        typer.echo(json.dumps(audit_summary(record)))
    else:
        typer.echo(audit_table.format_audit(record))
    if fail_on is not None:
        failed = {
            p["property"]: p["verdict"]["code"]
            for p in record["properties"]
            if p["split"] is None and not verdict_mod.passes(p["verdict"]["code"], fail_on)
        }
        if failed:
            typer.echo(f"audit failed (--fail-on {fail_on}): {failed}", err=True)
            raise typer.Exit(EXIT_AUDIT_FAILED)


def audit_summary(record: dict) -> dict:
    """The JSON object of ``audit-model --json``: the stored audit, under the documented keys first."""
    return {
        "dataset": record["dataset"],
        "name": record["name"],
        "audit_id": record["id"],
        "n_unknown_ids": record["n_unknown_ids"],
        "result_key": record["result_key"],
        "audit_rule_version": record.get("audit_rule_version"),
        "decision": record.get("decision"),
        "warnings": record["warnings"],
        "properties": record["properties"],
    }


@app.command("rename")
def rename_cmd(dataset: str, name: str, data_dir: DataDir = None) -> None:
    """Give DATASET a new display name (its id stays)."""
    with _failing((OrientScopeError, ValueError)):
        meta = ingest_mod.rename_dataset(resolve_data_dir(data_dir), dataset, name)
    typer.echo(f"renamed {meta['id']} to {meta['name']!r}")


@app.command("delete")
def delete_cmd(dataset: str, data_dir: DataDir = None) -> None:
    """Delete DATASET and its results (no other dataset is touched)."""
    with _failing((OrientScopeError, ValueError)):
        ingest_mod.delete_dataset(resolve_data_dir(data_dir), dataset)
    typer.echo(f"deleted {dataset}")


def server_url(host: str, port: int) -> str:
    """The URL a browser opens for a server bound to ``host``: an IPv6 address goes in brackets."""
    name = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{name}:{port}"


@app.command("serve")
def serve_cmd(
    host: Annotated[str, typer.Option("--host", help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port")] = 8050,
    data_dir: DataDir = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="refuse every write through the API and UI")] = False,
    workers: Annotated[
        int, typer.Option("--workers", min=1, help="worker processes (uvicorn factory mode when > 1)")
    ] = 1,
    access_log: Annotated[
        bool,
        typer.Option("--access-log/--no-access-log", help="one JSON line per request on stderr, with its request id"),
    ] = True,
    allow_anonymous_writes: Annotated[
        bool,
        typer.Option(
            "--allow-anonymous-writes",
            help="accept writes without a token on a non-loopback address (only on a trusted network)",
        ),
    ] = False,
    precompute_qm9: Annotated[
        bool,
        typer.Option(
            "--precompute-qm9/--no-precompute-qm9",
            help="precompute QM9 first if it is missing (--no-precompute-qm9: serve only what the data folder holds)",
        ),
    ] = True,
    allowed_hosts: Annotated[
        str | None,
        typer.Option(
            "--allowed-hosts",
            help="more Host names to answer, comma-separated (a tunnel's or proxy's public name); "
            "on a non-loopback address, the only ones besides loopback",
        ),
    ] = None,
    read_token_file: Annotated[
        Path | None,
        typer.Option(
            "--read-token-file",
            help="make the server private: every page and API read needs this file's token (or ORIENTSCOPE_READ_TOKEN)",
        ),
    ] = None,
) -> None:
    """Serve the REST API (/api) and the dashboard (/); precomputes QM9 first if it is missing.

    On an address other than loopback, writes need ORIENTSCOPE_TOKEN, or the server must be --read-only.
    See docs/security.md for the Host names it answers and the read token.
    """
    from dataclasses import replace

    from orientscope.core.settings import (
        DEFAULT_DATASET,
        check_write_access,
        hand_to_workers,
        parse_allowed_hosts,
        resolve_read_token,
    )

    # Before any import of the server or any precompute: a refused start costs nothing.
    with _failing((OrientScopeError, ValueError)):
        current = settings()  # the options below override their variables
        hosts = current.allowed_hosts if allowed_hosts is None else parse_allowed_hosts(allowed_hosts)
        read_only = read_only or current.read_only
        allow_anonymous_writes = allow_anonymous_writes or current.allow_anonymous_writes
        read_token = resolve_read_token(read_token_file)
        warning = check_write_access(host, read_only, current.token, allow_anonymous_writes, read_token)
    if warning:
        typer.echo(warning, err=True)

    import uvicorn

    from orientscope.server import FACTORY, create_app, serve_logging, tune_for_serving
    from orientscope.services.datasets import NEEDS_MIGRATION, READY, dataset_info

    root = resolve_data_dir(data_dir)
    info = dataset_info(root, DEFAULT_DATASET) if ds.has_dataset(root, DEFAULT_DATASET) else None
    ready = info is not None and info.status == READY
    if info is not None and info.status == NEEDS_MIGRATION:
        typer.echo(f"{info.message}; serving the other datasets", err=True)
    elif not ready and (read_only or not precompute_qm9):
        why = "read-only" if read_only else "--no-precompute-qm9"
        typer.echo(f"{why}: {DEFAULT_DATASET} is not precomputed in {root}; serving what is there", err=True)
    elif not ready:
        # Before the server starts, so every worker sees a complete store; progress goes to the console.
        typer.echo(f"first start: precomputing {DEFAULT_DATASET} in {root} (once; later starts take seconds)", err=True)
        with _failing():
            _precompute(root, DEFAULT_DATASET, pipeline.make_params())
    base = server_url(host, port)
    typer.echo(f"OrientScope on {base}/  (API docs: {base}/api/docs)", err=True)
    if read_token:
        typer.echo(f"private: every page and read needs the read token; sign in at {base}/sign-in", err=True)
    logs = {**serve_logging(access_log), "timeout_keep_alive": KEEP_ALIVE_S}
    tune_for_serving()
    if workers > 1:
        # Each worker's factory reads back one value: these settings with the options given. It holds the
        # token file's path, never a token: the tokens stay in their own variables, which the workers inherit.
        chosen = replace(current, data_dir=root, read_only=read_only, host=host, allowed_hosts=hosts,
                         allow_anonymous_writes=allow_anonymous_writes,
                         read_token_file=read_token_file or current.read_token_file)  # fmt: skip
        hand_to_workers(chosen)
        uvicorn.run(FACTORY, factory=True, host=host, port=port, workers=workers, **logs)
    else:
        app_ = create_app(
            root,
            read_only=read_only,
            token=current.token,
            warm=True,
            bind_host=host,
            allowed_hosts=hosts,
            read_token=read_token,
        )
        uvicorn.run(app_, host=host, port=port, **logs)


# Idle keep-alive connections stay open longer than clients keep them (httpx: 5 s), so a client
# never sends a request on a connection the server is closing at that moment.
KEEP_ALIVE_S = 30


def format_report(r: dict) -> str:
    """Human-readable report: a header, then each table of figures (or why it is missing)."""
    from orientscope.core.numbers import format_count, format_number
    from orientscope.services.audit_table import text_table
    from orientscope.services.report_format import (
        chemistry_lines,
        degeneracy_lines,
        molecules_text,
        report_sections,
        warnings,
    )
    from orientscope.services.statistics import REFERENCE_KEY, REFERENCE_MOLECULE_KEY

    lines = [
        f"{r['name']} ({r['dataset']}): {molecules_text(r)}, frame {r['frame']}/{r['sign_rule']}, seed {r['seed']}",
        *(f"WARNING: {w}" for w in warnings(r)),
        *_verdict_lines("Verdict", r.get("verdict") or {}),
        *_verdict_lines("Control's verdict, same rule", (r.get("control") or {}).get("verdict") or {}),
        f"Degenerate frames: {format_count(r['n_degenerate'])} ({_reasons(r.get('degenerate_reasons') or {})})",
        *(f"  {line}" for line in degeneracy_lines(r.get("degenerate_reasons") or {})),
        *([f"Orientation by symmetry: {_classes(r['orientation_classes'])}"] if r.get("orientation_classes") else []),
        *([f"  {r['orientation_note']}"] if r.get("orientation_note") else []),
    ]
    if chemistry := chemistry_lines(r):
        lines += [chemistry[0], *(f"  {line}" for line in chemistry[1:])]
    shown = set()
    for section in report_sections(r):
        lines += ["", section.title]
        shown.add(section.skipped)
        if section.rows:
            lines += text_table(section.header, section.rows)
        else:
            lines.append(f"  skipped: {section.skipped or 'not computed'}")
        lines += [f"  {note}" for note in section.notes]
    if REFERENCE_KEY in r:
        lines += ["", f"Reference orientation (molecule {r.get(REFERENCE_MOLECULE_KEY)}):"]
        # A zero is unsigned (never "-0.000"), padded to the signed numbers' width so the columns line up.
        lines += ["  " + " ".join(format_number(x, "+.3f").rjust(6) for x in row) for row in r[REFERENCE_KEY]]
    others = {stage: reason for stage, reason in (r.get("skipped_stages") or {}).items() if reason not in shown}
    if others:
        lines += ["", "Also skipped on this dataset:"]
        lines += [f"  {stage}: {reason}" for stage, reason in others.items()]
    return "\n".join(lines)


def _verdict_lines(title: str, verdict: dict) -> list[str]:
    """``title: badge (rule version N)``, then the verdict's text, indented."""
    rule = f" (rule version {verdict['rule_version']})" if verdict.get("rule_version") is not None else ""
    return [f"{title}: {verdict.get('badge') or '–'}{rule}", f"  {verdict.get('text', '–')}"]


def _classes(counts: dict) -> str:
    from orientscope.core.numbers import format_count

    full, axis, none = (format_count(counts.get(k)) for k in ("full", "axis", "none"))
    return f"{full} full frames, {axis} only an axis, {none} no orientation"


def _reasons(counts: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


# Typer's exit code for a command ended by Ctrl-C (KeyboardInterrupt).
INTERRUPTED = 130


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings()  # every command refuses a bad ORIENTSCOPE_* variable up front, also one it would not read
        app()
    except SettingsError as err:
        typer.echo(f"error: {err}", err=True)
        raise SystemExit(2) from None
    except SystemExit as end:
        if end.code == INTERRUPTED:
            _exit_at_once(INTERRUPTED)
        raise


def _exit_at_once(code: int) -> None:
    """End the process after Ctrl-C without the interpreter's teardown of its modules.

    Unwinding has already released the locks and kept what earlier stages wrote; tearing down scipy,
    scikit-learn and datashader then takes another 0.8-1.5 s, which would put Ctrl-C past its 2 s.
    The exit handlers (logging, temporary files) still run.
    """
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
