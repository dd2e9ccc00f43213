import numpy as np
import pytest

from orientscope.core.errors import DatasetError
from orientscope.core.limits import LimitExceeded, Limits
from orientscope.loaders.detect import load_path
from orientscope.loaders.xyz import write_xyz


def _frames(n: int, bad: dict | None = None) -> str:
    """n water molecules; ``bad`` maps a record index to a replacement atom line."""
    text = []
    for i in range(n):
        lines = ["O 0.0 0.0 0.0", f"H 0.96 {i * 0.001:.3f} 0.0", "H -0.24 0.93 0.0"]
        if bad and i in bad:
            lines[1] = bad[i]
        text += ["3", f"w{i}", *lines]
    return "\n".join(text) + "\n"


def test_round_trip_with_ase(tmp_path, small_atoms):
    from ase.io import write

    write(tmp_path / "a.xyz", small_atoms, format="xyz")
    loaded = load_path(tmp_path / "a.xyz", "xyz")
    mols = loaded.mols
    assert mols.n_molecules == 4 and loaded.n_skipped == 0
    assert list(mols.n_atoms) == [3, 5, 3, 12]
    np.testing.assert_allclose(mols.positions_angstrom, np.concatenate([a.positions for a in small_atoms]), atol=1e-6)
    assert list(mols.atomic_numbers[:3]) == [1, 1, 8]
    # Our writer and reader agree too.
    write_xyz(tmp_path / "b.xyz", mols)
    again = load_path(tmp_path / "b.xyz", "xyz").mols
    np.testing.assert_allclose(again.positions_angstrom, mols.positions_angstrom, atol=1e-9)
    assert list(again.ids) == list(mols.ids)


def test_one_word_comment_is_the_id_and_qm9_exponents_parse(tmp_path):
    (tmp_path / "q.xyz").write_text("2\nmolA\nC 0 0 1.5*^-3\nO 0 0 1.2\n1\nthe second one\nH 0 0 0\n")
    mols = load_path(tmp_path / "q.xyz", "xyz").mols
    assert list(mols.ids) == ["molA", "2"]
    assert mols.positions_angstrom[0, 2] == pytest.approx(1.5e-3)


@pytest.mark.parametrize(
    ("bad_line", "expected"),
    [
        ("H nan 0.0 0.0", "NaN or infinite"),
        ("Xq 0.0 0.0 0.0", "unknown element symbol 'Xq'"),
        ("H 0.0 zero 0.0", "line 9"),
    ],
)
def test_single_bad_record_is_skipped_and_counted_or_fails_strict(tmp_path, bad_line, expected):
    path = tmp_path / "a.xyz"
    path.write_text(_frames(40, {1: bad_line}))
    loaded = load_path(path, "xyz")
    assert loaded.mols.n_molecules == 39 and loaded.n_skipped == 1
    assert "w1" not in loaded.mols.ids
    assert "record 2 (line 6)" in loaded.problems[0] and expected in loaded.problems[0]
    with pytest.raises(DatasetError, match="strict mode") as err:
        load_path(path, "xyz", strict=True)
    assert expected in str(err.value)


def test_mostly_bad_file_fails_naming_the_first_problem(tmp_path):
    path = tmp_path / "a.xyz"
    path.write_text(_frames(3, {0: "H nan 0 0", 2: "H nan 0 0"}))
    with pytest.raises(DatasetError, match=r"2 of 3 records are malformed.*record 1 \(line 1\)"):
        load_path(path, "xyz")


def test_truncated_file_fails_with_line(tmp_path):
    path = tmp_path / "a.xyz"
    path.write_text(_frames(5)[:-30])
    with pytest.raises(DatasetError, match=r"record 5 \(line 21\): file ends after 2 of the 3 atom lines"):
        load_path(path, "xyz")


def test_wrong_atom_count_is_reported(tmp_path):
    text = _frames(40).replace("3\nw5\n", "4\nw5\n", 1)
    path = tmp_path / "a.xyz"
    path.write_text(text)
    loaded = load_path(path, "xyz")
    assert "w5" not in loaded.mols.ids and loaded.n_skipped >= 1
    assert "wrong atom count" in loaded.problems[0]
    with pytest.raises(DatasetError, match="record 6"):
        load_path(path, "xyz", strict=True)


def test_binary_junk_is_refused(tmp_path):
    path = tmp_path / "junk.xyz"
    path.write_bytes(b"3\nx\n" + bytes(range(256)) * 10)
    with pytest.raises(DatasetError, match="not UTF-8 text|NUL bytes"):
        load_path(path, "xyz")


def test_atom_limit_is_checked_before_reading_the_atoms(tmp_path):
    path = tmp_path / "big.xyz"
    path.write_text("100000000\ncomment\nH 0 0 0\n")
    with pytest.raises(LimitExceeded, match="100,000,000 atoms in one molecule"):
        load_path(path, "xyz")


def test_molecule_limit(tmp_path):
    path = tmp_path / "a.xyz"
    path.write_text(_frames(10))
    with pytest.raises(LimitExceeded, match="more than 5 molecules"):
        load_path(path, "xyz", limits=Limits(max_molecules=5))


def test_one_frame_from_text_and_its_errors_name_the_line():
    from orientscope.loaders.xyz import read_xyz_text

    z, pos = read_xyz_text("2\nwater-ish\nO 0 0 0\nH 0.96 0 0\nextra lines are ignored\n")
    assert z.tolist() == [8, 1] and pos.tolist() == [[0, 0, 0], [0.96, 0, 0]]
    for text, message in [
        ("", "line 1"),
        ("three\n\nO 0 0 0", "line 1"),
        ("2\n\nO 0 0 0\n", "1 of the 2 atom lines"),
        ("1\n\nO 0 a 0\n", "line 3"),
    ]:
        with pytest.raises(DatasetError, match=message):
            read_xyz_text(text)
    with pytest.raises(LimitExceeded):
        read_xyz_text("3\n\nO 0 0 0\nH 1 0 0\nH 0 1 0\n", Limits(max_atoms_per_molecule=2))


def test_xyz_block_takes_symbols_or_numbers():
    from orientscope.loaders.xyz import xyz_block

    a = xyz_block(["O", "H"], [[0.0, 0.0, 0.0], [0.96, 0.0, 0.0]], "water\nsecond line", decimals=3)
    assert a == "2\nwater second line\nO 0.000 0.000 0.000\nH 0.960 0.000 0.000\n"
    assert xyz_block(np.array([8, 1], np.int16), [[0.0, 0.0, 0.0], [0.96, 0.0, 0.0]], "water\nsecond line", 3) == a
