"""Every rung computes alpha*A@B + beta*C on awkward, non-square sizes (simulator-sized)."""
import pytest

import gemm_lessons as gl
from gemm_lessons.kernels import ladder

ALL = {**ladder.SGEMM, **ladder.VARIANTS}


@pytest.mark.parametrize("name", list(ALL))
def test_rung_is_correct(name):
    shapes = None
    if ALL[name].wide:  # 16-byte loads: K and N multiples of 4
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
    for name, r in {**ALL, **ladder.TRANSPOSE}.items():
        assert r.kernel is not None, name
    assert set(ladder.compiled_kernels()) >= set(ALL) | {"transpose_wide", "copy_float4"}


def test_flags_agree_with_the_tables():
    assert all(r.variant for r in ladder.VARIANTS.values()) and not any(r.variant for r in ladder.SGEMM.values())
    assert {r.operation for r in ALL.values()} == {"sgemm"}
    assert {r.operation for r in ladder.TRANSPOSE.values()} == {"transpose"}
    wide = {name for name, r in {**ALL, **ladder.TRANSPOSE}.items() if r.wide}
    assert wide == {"vec", "vec_split", "dbuf", "warptile", "vec_unrolled_k", "wide_loads", "dbuf_indexed",
                    "dbuf_one_buffer", "dbuf_short_circuit", "dbuf_select", "wide"}
    assert all("multiples of 4" in r.constraint for name, r in {**ALL, **ladder.TRANSPOSE}.items() if name in wide)
