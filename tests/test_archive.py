"""The reader of ``.npz`` files lintf did not write (:mod:`numerics.archive`): every variant of
:mod:`tests.strategies.hostile` is refused by its own check, in one line naming the file; odd but valid archives read
as the plain one; only the arrays asked for are loaded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from numerics import archive
from numerics.errors import LintfError
from tests.strategies.hostile import ACCEPTED, REFUSED, REFUSED_WORDS, unused_huge

ARRAYS = {
    "P": np.arange(18.0).reshape(1, 2, 3, 3),
    "Q": -np.arange(18.0).reshape(1, 2, 3, 3),
    "meta": np.asarray('{"kind": "full"}'),
}


@pytest.mark.parametrize("name", sorted(ARRAYS))
@pytest.mark.parametrize("variant", sorted(REFUSED))
def test_each_strange_archive_is_refused_by_its_own_check(
    variant: str, name: str, tmp_path: Path
) -> None:
    path = tmp_path / "a.npz"
    path.write_bytes(REFUSED[variant](ARRAYS, name))
    with pytest.raises(LintfError) as exc:
        archive.read_npz(path, f"file {str(path)!r}", tuple(ARRAYS), max_bytes=2**30)
    text = str(exc.value)
    assert (
        REFUSED_WORDS[variant] in text
        and text.startswith(f"file {str(path)!r}")
        and "\n" not in text
    ), text


@pytest.mark.parametrize("variant", sorted(ACCEPTED))
def test_an_odd_but_valid_archive_reads_as_the_plain_one(variant: str, tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    path.write_bytes(ACCEPTED[variant](ARRAYS))
    got = archive.read_npz(path, "file", tuple(ARRAYS))
    assert set(got) == set(ARRAYS) and all(np.array_equal(got[k], ARRAYS[k]) for k in ARRAYS)
    assert {k: v[0] for k, v in archive.npz_directory(path, "file").items()} == {
        k: v.shape for k, v in ARRAYS.items()
    }


def test_only_the_arrays_asked_for_are_loaded(tmp_path: Path) -> None:
    """Beside them, an array that declares 2 GiB, with 1 GiB of memory: not asked for, not loaded."""
    path = tmp_path / "a.npz"
    path.write_bytes(unused_huge(ARRAYS))
    assert set(archive.read_npz(path, "file", ("P", "Q"), max_bytes=2**30)) == {"P", "Q"}
    with pytest.raises(
        LintfError, match="take 2147484.* bytes, more than the 1073741824 bytes of memory available"
    ):
        archive.read_npz(path, "file", ("P", "Q", "unused"), max_bytes=2**30)


@pytest.mark.parametrize(
    "raw, says", [(b"", "is not an .npz archive"), (b"PK\x03\x04junk", "is not a readable .npz")]
)
def test_what_is_not_a_zip_is_named(raw: bytes, says: str, tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    path.write_bytes(raw)
    with pytest.raises(LintfError, match=f"^file {says}"):
        archive.read_npz(path, "file", ("P",))
    with pytest.raises(LintfError, match="^file does not exist$"):
        archive.read_npz(tmp_path / "absent.npz", "file", ("P",))
