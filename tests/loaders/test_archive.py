import io
import tarfile
import zipfile

import numpy as np
import pytest

from orientscope.core.errors import DatasetError
from orientscope.core.limits import LimitExceeded, Limits
from orientscope.loaders.archive import extract_archive
from orientscope.loaders.detect import load_path
from orientscope.loaders.xyz import write_xyz


def _xyz_bytes(tmp_path, mols, name) -> bytes:
    write_xyz(tmp_path / name, mols)
    return (tmp_path / name).read_bytes()


def test_zip_and_tar_of_many_files_load_as_one_dataset(tmp_path, qm9_small):
    parts = [qm9_small.subset(np.arange(k * 10, k * 10 + 10)) for k in range(3)]
    with zipfile.ZipFile(tmp_path / "many.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        for k, part in enumerate(parts):
            zf.writestr(f"batch/part{k}.xyz", _xyz_bytes(tmp_path, part, f"p{k}.xyz"))
        zf.writestr("__MACOSX/._part0.xyz", b"\x00\x01junk")
    mols = load_path(tmp_path / "many.zip").mols
    assert mols.n_molecules == 30
    np.testing.assert_array_equal(mols.ids, np.concatenate([p.ids for p in parts]))
    with tarfile.open(tmp_path / "many.tar.gz", "w:gz") as tf:
        for k, part in enumerate(parts):
            data = _xyz_bytes(tmp_path, part, f"p{k}.xyz")
            info = tarfile.TarInfo(f"part{k}.xyz")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    assert load_path(tmp_path / "many.tar.gz").mols.n_molecules == 30


def test_zip_bomb_is_stopped_while_streaming(tmp_path):
    with zipfile.ZipFile(tmp_path / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("zeros.xyz", "w") as fh:
            for _ in range(64):
                fh.write(b"\x00" * (1 << 20))  # 64 MiB of zeros -> ~64 KiB compressed
    assert (tmp_path / "bomb.zip").stat().st_size < 1 << 20
    with pytest.raises(LimitExceeded, match="expands more than 250x"):
        extract_archive(tmp_path / "bomb.zip", tmp_path / "out")
    extracted = sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert extracted < 40 << 20  # stopped early, not after writing everything


def test_total_extracted_size_limit(tmp_path, qm9_small):
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as zf:
        for k in range(5):
            zf.writestr(f"p{k}.xyz", _xyz_bytes(tmp_path, qm9_small.subset(np.arange(50)), "x.xyz"))
    with pytest.raises(LimitExceeded, match="bytes when extracted"):
        extract_archive(tmp_path / "a.zip", tmp_path / "out", Limits(max_archive_bytes=50_000))


@pytest.mark.parametrize("name", ["../evil.xyz", "/etc/evil.xyz", "a/../../evil.xyz", "C:/evil.xyz"])
def test_path_traversal_is_refused(tmp_path, name):
    with zipfile.ZipFile(tmp_path / "t.zip", "w") as zf:
        zf.writestr("ok.xyz", "1\nx\nH 0 0 0\n")
        zf.writestr(name, "1\nx\nH 0 0 0\n")
    with pytest.raises(DatasetError, match="points outside the archive"):
        load_path(tmp_path / "t.zip", workdir=tmp_path / "work")
    assert not (tmp_path / "evil.xyz").exists()


def test_links_in_tar_are_refused(tmp_path):
    with tarfile.open(tmp_path / "l.tar", "w") as tf:
        info = tarfile.TarInfo("passwd.xyz")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tf.addfile(info)
    with pytest.raises(DatasetError, match="link or special file"):
        load_path(tmp_path / "l.tar")


def test_bad_member_error_names_archive_and_member(tmp_path):
    with zipfile.ZipFile(tmp_path / "t.zip", "w") as zf:
        zf.writestr("good.xyz", "1\nx\nH 0 0 0\n")
        zf.writestr("bad.xyz", "3\nx\nH 0 0 0\n")
    with pytest.raises(DatasetError, match=r"t.zip: bad.xyz: record 1 \(line 1\): file ends"):
        load_path(tmp_path / "t.zip")
