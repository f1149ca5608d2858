"""Every rung computes alpha*A@B + beta*C on awkward, non-square sizes (simulator-sized)."""
import pytest

import gemm_lessons as gl
from gemm_lessons import ladder

ALL = {**ladder.SGEMM, **ladder.VARIANTS}


@pytest.mark.parametrize("name", list(ALL))
def test_rung_is_correct(name):
    shapes = None
    if "multiples of 4" in ALL[name].constraint:  # wide loads
        shapes = [(67, 44, 36, 1.0, 0.0), (33, 72, 20, 1.5, -0.5), (1, 4, 4, 2.0, 1.0)]
    for res in gl.check_all(ALL[name], shapes):
        assert res.passed, res.message()


def test_ladder_order_and_metadata():
    assert list(ladder.SGEMM) == ["naive", "smem_tile", "reg1d", "reg2d", "vec", "vec_split", "dbuf", "warptile"]
    lessons = [r.lesson for r in ladder.SGEMM.values()]
    assert lessons == sorted(lessons)
    for r in ladder.SGEMM.values():
        assert r.title and r.constraint


def test_every_rung_names_its_kernel():
    for name, r in ALL.items():
        assert r.kernel is not None, name
