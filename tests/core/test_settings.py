"""Settings: the rule that keeps anonymous writes off addresses others can reach; the typed settings, read when
called, validated by name, serialised for workers, and the only reader of the ORIENTSCOPE_* variables."""

import ast
import json
import re
from pathlib import Path

import pytest

from orientscope.core.settings import UnsafeServerError, check_write_access, display_name, is_loopback


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_addresses(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", None, "192.168.1.20", "10.0.0.1", "lab-server", "128.0.0.1"])
def test_other_addresses_may_be_reachable(host):
    assert not is_loopback(host)


def test_exposed_writable_server_without_token_is_refused_naming_both_ways_out():
    with pytest.raises(UnsafeServerError) as err:
        check_write_access("0.0.0.0", read_only=False, token=None)
    assert "ORIENTSCOPE_TOKEN" in str(err.value) and "--read-only" in str(err.value)
    with pytest.raises(UnsafeServerError, match="cannot check"):
        check_write_access(None, read_only=False, token="  ")


@pytest.mark.parametrize(
    ("host", "read_only", "token"),
    [("0.0.0.0", True, None), ("0.0.0.0", False, "s3cret"), ("127.0.0.1", False, None), ("::1", False, None)],
)
def test_token_read_only_or_loopback_start_silently(host, read_only, token):
    assert check_write_access(host, read_only, token) is None


def test_a_read_token_equal_to_the_write_token_is_refused_without_naming_it():
    """Readers would hold the write token; the refusal names the settings, never their value."""
    for token, read_token in (("s3cret-value", "s3cret-value"), ("s3cret-value", " s3cret-value\n")):
        with pytest.raises(UnsafeServerError, match="is the write token") as err:
            check_write_access("127.0.0.1", read_only=False, token=token, read_token=read_token)
        assert "s3cret" not in str(err.value)
    assert check_write_access("127.0.0.1", read_only=True, token="same", read_token="same") is None
    assert check_write_access("127.0.0.1", read_only=False, token="write", read_token="read") is None


def test_anonymous_writes_can_be_allowed_with_a_warning():
    warning = check_write_access("0.0.0.0", read_only=False, token=None, allow_anonymous_writes=True)
    assert warning.startswith("WARNING") and "anyone who can reach" in warning


def test_display_names_are_trimmed_and_bounded():
    assert display_name("  QM9 subset ") == "QM9 subset"
    assert display_name("x" * 200) == "x" * 200
    for bad in ("", "   ", "x" * 201):
        with pytest.raises(ValueError, match="a dataset name must have 1 to 200 characters"):
            display_name(bad)
    with pytest.raises(ValueError, match="an audit name"):
        display_name("", "audit")


def test_the_data_folder_is_resolved_in_one_order(tmp_path, monkeypatch):
    from orientscope.core.settings import DATA_DIR_ENV, resolve_data_dir, user_data_dir

    repo = Path(__file__).resolve().parents[2]
    outside = tmp_path / "notebook"
    outside.mkdir()
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(outside)
    # outside a checkout: the user's data folder, never site-packages
    assert resolve_data_dir() == user_data_dir().resolve() == (tmp_path / "xdg" / "orientscope").resolve()
    # inside a checkout (any sub-folder): its data/, as make serve has always used
    monkeypatch.chdir(repo / "tests")
    assert resolve_data_dir() == repo / "data"
    # the environment beats the checkout, and an explicit argument beats both
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "env"))
    assert resolve_data_dir() == tmp_path / "env"
    assert resolve_data_dir(tmp_path / "arg") == tmp_path / "arg"


def test_a_folder_with_another_projects_pyproject_is_not_a_checkout(tmp_path):
    from orientscope.core.settings import find_checkout

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "my-model"\n')
    (tmp_path / "backend").mkdir()
    (tmp_path / "backend" / "cli.py").write_text("")
    assert find_checkout(tmp_path / "sub") is None
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "orientscope"\n')
    assert find_checkout(tmp_path) == tmp_path


def test_allowed_hosts_are_names_without_scheme_or_port():
    from orientscope.core.settings import parse_allowed_hosts

    assert parse_allowed_hosts(" Lab.Example.org, 10.0.0.5,::1,lab.example.org., ") == (
        "lab.example.org",
        "10.0.0.5",
        "[::1]",
    )
    assert parse_allowed_hosts(None) == ()
    for bad in ("https://lab.example", "lab.example:8050", "lab example", "*.example"):
        with pytest.raises(ValueError, match="not a host name"):
            parse_allowed_hosts(bad)


def test_the_read_token_comes_from_its_file_before_the_environment(tmp_path, monkeypatch):
    from orientscope.core.settings import READ_TOKEN_ENV, resolve_read_token

    monkeypatch.setenv(READ_TOKEN_ENV, "from-env")
    assert resolve_read_token() == "from-env"
    (tmp_path / "token").write_text("  from-file  \nsecond line\n")
    assert resolve_read_token(tmp_path / "token") == "from-file"
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ValueError, match="is empty") as err:
        resolve_read_token(tmp_path / "empty")
    assert "from-env" not in str(err.value)
    with pytest.raises(ValueError, match="cannot read"):
        resolve_read_token(tmp_path / "absent")
    monkeypatch.delenv(READ_TOKEN_ENV)
    assert resolve_read_token() is None


# ------------------------------------------------------------------ the typed settings (core/settings.py)
ROOT = Path(__file__).resolve().parents[2]
# Variables of the test and benchmark harness (tests/), which no production module reads.
HARNESS = re.compile(r"ORIENTSCOPE_(CI|TEST_[A-Z_]+|BENCH_[A-Z_]+)")


def test_every_module_gets_its_settings_from_the_settings_object_when_called(tmp_path, monkeypatch):
    from orientscope.api.middleware import cors_origins
    from orientscope.core.limits import Limits
    from orientscope.core.settings import in_memory_bytes, map_point_budget, resolve_export_dir, settings
    from orientscope.pipeline.engine import choose_cluster, local_cluster_above
    from orientscope.pipeline.jobs import max_queued_jobs
    from orientscope.pipeline.smarts_jobs import smarts_job_above
    from orientscope.services.bytecache import budget_bytes
    from orientscope.store.columns import columns_root
    from orientscope.store.shards import shard_size_setting

    def current() -> dict:
        limits = Limits.from_env()
        return {
            "shard": shard_size_setting(), "atoms": limits.max_atoms_per_molecule, "upload": limits.max_upload_bytes,
            "budget": map_point_budget(), "queued": max_queued_jobs(), "smarts": smarts_job_above(),
            "columns": columns_root(), "cache": budget_bytes(),
            "cors": cors_origins(), "exports": resolve_export_dir(tmp_path), "local": local_cluster_above(),
            "cluster": choose_cluster(None, 10).label, "memory": in_memory_bytes(),
        }  # fmt: skip

    for name in ("SETTINGS", "SHARD_SIZE", "MAX_ATOMS_PER_MOLECULE", "MAX_UPLOAD_MB", "MAP_POINT_BUDGET",
                 "MAX_QUEUED_JOBS", "SMARTS_JOB_ABOVE", "COLUMNS_DIR", "CACHE_MB",
                 "CORS_ORIGINS", "EXPORT_DIR", "LOCAL_CLUSTER_ABOVE", "CLUSTER", "IN_MEMORY_MB"):  # fmt: skip
        monkeypatch.delenv(f"ORIENTSCOPE_{name}", raising=False)
    defaults = current()
    assert defaults["shard"] == 250_000 and defaults["atoms"] == 2_000 and defaults["cluster"] == "in-process"
    assert defaults["exports"] == (tmp_path / "exports").resolve() and defaults["cors"] == []
    changed = {
        "SHARD_SIZE": "12", "MAX_ATOMS_PER_MOLECULE": "30", "MAX_UPLOAD_MB": "0.5", "MAP_POINT_BUDGET": "7",
        "MAX_QUEUED_JOBS": "2", "SMARTS_JOB_ABOVE": "9", "COLUMNS_DIR": str(tmp_path / "c"),
        "CACHE_MB": "1", "CORS_ORIGINS": "https://a.example, http://b.example:8080", "EXPORT_DIR": str(tmp_path / "e"),
        "LOCAL_CLUSTER_ABOVE": "3", "CLUSTER": "local:2", "IN_MEMORY_MB": "0.25",
    }  # fmt: skip
    for name, value in changed.items():  # read when called: no import or restart between
        monkeypatch.setenv(f"ORIENTSCOPE_{name}", value)
    assert current() == {
        "shard": 12, "atoms": 30, "upload": 2**19, "budget": 7, "queued": 2, "smarts": 9,
        "columns": tmp_path / "c", "cache": 2**20, "cors": ["https://a.example", "http://b.example:8080"],
        "exports": tmp_path / "e", "local": 3, "cluster": "local:2", "memory": 2**18,
    }  # fmt: skip
    assert settings() is settings()  # unchanged variables: the parsed object is reused
    for name in changed:
        monkeypatch.delenv(f"ORIENTSCOPE_{name}")
    assert current() == defaults


@pytest.mark.parametrize(
    ("name", "value", "accepted"),
    [
        ("SHARD_SIZE", "0", "a whole number of molecules, at least 1"),
        ("MAX_MOLECULES", "2e6", "a whole number of molecules"),
        ("CACHE_MB", "-1", "a non-negative number of MB"),
        ("MAX_UPLOAD_MB", "inf", "a non-negative number of MB"),
        ("READ_ONLY", "maybe", "1, true, yes or on"),
        ("ALLOWED_HOSTS", "https://lab.example/", "is not a host name"),
        ("CORS_ORIGINS", "lab.example", "'lab.example' is not an origin"),
    ],
)
def test_a_value_a_setting_does_not_accept_is_refused_naming_the_variable_and_what_it_accepts(
    monkeypatch, name, value, accepted
):
    from orientscope.core.settings import SettingsError, resolve_data_dir

    monkeypatch.setenv(f"ORIENTSCOPE_{name}", value)
    with pytest.raises(SettingsError, match=re.escape(accepted)) as err:
        resolve_data_dir()  # any read of a setting checks them all
    assert str(err.value).startswith(f"ORIENTSCOPE_{name}={value!r}: expected ")


def test_one_serialised_value_carries_every_setting_but_the_tokens_and_overrides_the_variables(tmp_path, monkeypatch):
    from dataclasses import replace

    from orientscope.core.settings import SETTINGS_ENV, Settings, settings

    chosen = replace(
        Settings(), data_dir=tmp_path, read_only=True, host="0.0.0.0", allowed_hosts=("lab.example",),
        read_token_file=tmp_path / "t", cache_mb=0.5, shard_size=12, cluster="local:2", token="write-secret",
        read_token="read-secret",
    )  # fmt: skip
    text = chosen.to_json()
    assert "secret" not in text and not {"token", "read_token"} & json.loads(text).keys()
    assert "secret" not in repr(chosen)
    monkeypatch.setenv(SETTINGS_ENV, text)
    monkeypatch.setenv("ORIENTSCOPE_SHARD_SIZE", "99")  # overridden by the serialised value
    monkeypatch.setenv("ORIENTSCOPE_TOKEN", "write-secret")  # the tokens stay in their own variables
    monkeypatch.setenv("ORIENTSCOPE_READ_TOKEN", "read-secret")
    assert settings() == chosen
    monkeypatch.setenv(SETTINGS_ENV, json.dumps({"read_only": False}))  # it overrides only what it names
    assert settings() == Settings(shard_size=99, token="write-secret", read_token="read-secret")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{not json", "is not JSON"),
        ("[1]", "expected a JSON object of settings by name, got list"),
        ('{"shards": 1}', "unknown setting 'shards'; expected names among"),
        ('{"token": "x"}', "may not hold 'token': set ORIENTSCOPE_TOKEN instead"),
        ('{"shard_size": 0}', "ORIENTSCOPE_SETTINGS['shard_size']='0': expected a whole number of molecules"),
    ],
)
def test_a_bad_serialised_value_is_refused_by_name(monkeypatch, value, message):
    from orientscope.core.settings import SETTINGS_ENV, SettingsError, settings

    monkeypatch.setenv(SETTINGS_ENV, value)
    with pytest.raises(SettingsError, match=re.escape(message)):
        settings()


def _production_modules() -> list[Path]:
    """backend/ and app/ (backend/app is a link to app/: each file once)."""
    return sorted({p.resolve() for folder in ("backend", "app") for p in (ROOT / folder).rglob("*.py")})


def _environment_reads(tree: ast.AST) -> list[int]:
    """Lines that touch the process environment: os.environ, os.getenv and the like, or click's envvar."""
    names = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and {a.name for a in node.names} & names:
            lines.append(node.lineno)
        elif isinstance(node, ast.keyword) and node.arg in ("envvar", "auto_envvar_prefix"):
            lines.append(node.lineno)
    return lines


def test_no_module_but_the_settings_module_reads_an_orientscope_variable():
    """Settings come from core.settings.settings(): no other module touches the environment (but the engine,
    which caps its workers' thread pools with the BLAS/OpenMP variables), and no module but the settings
    module spells a variable's name as a value: the others get it from ``env_name``."""
    settings_module = ROOT / "backend" / "core" / "settings.py"
    allowed = {settings_module, ROOT / "backend" / "pipeline" / "engine.py"}
    reads, spelled = [], []
    for path in _production_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if path not in allowed:
            reads += [f"{path.relative_to(ROOT)}:{line}" for line in _environment_reads(tree)]
        if path != settings_module:
            spelled += [
                f"{path.relative_to(ROOT)}:{node.lineno}"
                for node in ast.walk(tree)
                if isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and re.fullmatch(r"ORIENTSCOPE_[A-Z_]+", node.value)
            ]
    assert not reads, f"read the environment outside core/settings.py: {reads}"
    assert not spelled, f"spell an ORIENTSCOPE_* variable as a value outside core/settings.py: {spelled}"
    engine = (ROOT / "backend" / "pipeline" / "engine.py").read_text(encoding="utf-8")
    assert re.findall(r"os\.environ(?:\[|\.get\()(\w+)", engine) == ["name", "THREAD_ENV"]  # the thread caps only


def test_every_orientscope_variable_the_code_and_docs_name_is_declared():
    from orientscope.core.settings import VARIABLES

    files = [*_production_modules(), ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    unknown = set()
    for path in files:
        for match in re.finditer(r"ORIENTSCOPE_[A-Z_]*[A-Z](_\*)?", path.read_text(encoding="utf-8")):
            name = match.group(0)
            if name.endswith("_*"):  # a family: ORIENTSCOPE_MAX_*
                known = any(v.startswith(name[:-1]) for v in VARIABLES)
            else:
                known = name in VARIABLES or HARNESS.fullmatch(name)
            if not known:
                unknown.add(f"{name} ({path.relative_to(ROOT)})")
    assert not unknown, f"not declared in core/settings.py: {sorted(unknown)}"


def test_the_docs_settings_table_is_the_one_the_settings_generate():
    from orientscope.core.settings import VARIABLES
    from orientscope.core.settings_table import with_table

    doc = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    assert doc == with_table(doc), "docs/operations.md's settings table is stale: run `make docs`"
    assert all(f"| `{name}` |" in doc for name in VARIABLES)
