"""Settings: the rule that keeps anonymous writes off addresses others can reach."""

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
