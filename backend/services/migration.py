"""Migrating the store's single-folder datasets to shards in the background of a writable server."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from orientscope.pipeline.migrate import migrate_all

log = logging.getLogger(__name__)


def start_migration(data_dir: Path) -> threading.Thread:
    """Migrate every single-folder dataset in a daemon thread; the thread (already started).

    Requests keep being served meanwhile: each dataset stays readable in its old
    layout until its new folder takes its place in one atomic exchange.
    """

    def run() -> None:
        done = migrate_all(Path(data_dir))
        if done:
            log.info("migrated to the sharded layout: %s", ", ".join(done))

    thread = threading.Thread(target=run, name="orientscope-migrate", daemon=True)
    thread.start()
    return thread
