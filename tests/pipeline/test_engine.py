import os

import pytest

from orientscope.pipeline.engine import (
    CLUSTER_ENV,
    LOCAL_ABOVE_ENV,
    ClusterSpec,
    Engine,
    choose_cluster,
    parse_cluster,
)


def test_cluster_values_parse_and_bad_ones_name_the_accepted_forms():
    assert parse_cluster("in-process") == ClusterSpec("in-process")
    assert parse_cluster("local:3") == ClusterSpec("local", workers=3)
    assert parse_cluster("tcp://10.0.0.5:8786").label == "tcp://10.0.0.5:8786"
    for bad in ("local:0", "local:x", "tcp://host", "dask", "tcp://:80"):
        with pytest.raises(ValueError, match="expected 'in-process', 'local:W'"):
            parse_cluster(bad)


def test_default_is_by_size_and_the_environment_overrides(monkeypatch):
    monkeypatch.delenv(CLUSTER_ENV, raising=False)
    monkeypatch.delenv(LOCAL_ABOVE_ENV, raising=False)
    assert choose_cluster(None, 1_999_999).kind == "in-process"
    assert choose_cluster(None, 2_000_000) == ClusterSpec("local", workers=os.cpu_count(), by_size=True)
    assert choose_cluster(None, 10).by_size and not choose_cluster("in-process", 10).by_size
    monkeypatch.setenv(LOCAL_ABOVE_ENV, "100")
    assert choose_cluster(None, 100).kind == "local"
    monkeypatch.setenv(CLUSTER_ENV, "local:1")
    assert choose_cluster(None, 5) == ClusterSpec("local", workers=1)
    assert choose_cluster("in-process", 10**9).kind == "in-process"
    monkeypatch.setenv(LOCAL_ABOVE_ENV, "many")
    monkeypatch.delenv(CLUSTER_ENV)
    with pytest.raises(ValueError, match=LOCAL_ABOVE_ENV):
        choose_cluster(None, 5)


def _threads(_item) -> dict:
    from threadpoolctl import threadpool_info

    return {"omp": os.environ.get("OMP_NUM_THREADS"), "pools": {p["num_threads"] for p in threadpool_info()}}


def test_map_keeps_order_reports_progress_and_caps_worker_threads():
    seen = []
    with Engine(parse_cluster("in-process")) as engine:
        assert engine.map(abs, [-3, 1, -2], lambda d, t: seen.append((d, t))) == [3, 1, 2]
        assert engine.describe() == {"where": "in-process", "workers": 1}
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]
    with Engine(parse_cluster("local:2")) as engine:
        assert engine.describe() == {"where": "local:2", "workers": 2}
        assert engine.map(abs, list(range(-20, 0))) == list(range(20, 0, -1))
        caps = engine.map(_threads, [0, 1])
    assert all(c["omp"] == "1" and c["pools"] <= {1} for c in caps)


def test_local_workers_are_spawn_safe_except_where_they_would_run_unguarded_code_again(tmp_path):
    import subprocess
    import sys

    probe = "from orientscope.pipeline.engine import spawn_safe; print(spawn_safe())"
    guarded = 'if __name__ == "__main__":\n    ' + probe + "\n"
    (tmp_path / "analysis.py").write_text(probe + "\n")  # a spawned worker would run it again from the top
    (tmp_path / "guarded.py").write_text("import os\n\n" + guarded)
    (tmp_path / "probe_mod.py").write_text(probe + "\n")
    (tmp_path / "probe_pkg").mkdir()
    (tmp_path / "probe_pkg" / "__main__.py").write_text(probe + "\n")
    runs = {
        "script": [sys.executable, "analysis.py"],
        "guarded script": [sys.executable, "guarded.py"],
        "-c": [sys.executable, "-c", probe],
        "-m": [sys.executable, "-m", "probe_mod"],  # run again as __mp_main__ too
        "-m package": [sys.executable, "-m", "probe_pkg"],  # its __main__ is not
    }
    seen = {k: subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, check=True).stdout.strip()
            for k, cmd in runs.items()}  # fmt: skip
    assert seen == {"script": "False", "guarded script": "True", "-c": "True", "-m": "False", "-m package": "True"}


QUIET_SCRIPT = """
import logging

if __name__ == "__main__":  # as the CLI's main: a root handler first, then Dask, whose INFO lines then reach it
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    import distributed  # noqa: F401
    from orientscope.pipeline.engine import Engine, parse_cluster

    before = logging.getLogger("distributed").level
    with Engine(parse_cluster("local:1")) as engine:
        print("map", engine.map(abs, [-1, -2]))
    print("restored", logging.getLogger("distributed").level == before == logging.INFO)
"""


def test_a_local_cluster_keeps_dasks_info_lines_off_the_terminal_and_restores_its_log_level(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "quiet.py"
    script.write_text(QUIET_SCRIPT)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True)
    assert "map [1, 2]" in out.stdout and "restored True" in out.stdout
    assert "INFO distributed" not in out.stderr, out.stderr  # e.g. "INFO distributed.scheduler: State start"
