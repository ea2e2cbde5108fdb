"""The Runtime class over the C API, on the host backend and plain CPU tensors."""
import pytest
import torch

import tiletune
from tiletune import OP_N, OP_T, R_32F


def test_version_matches_the_package():
    assert tiletune.version() == tiletune.__version__


def test_gemm_column_major_with_transposes_and_leading_dimensions(workdir):
    torch.manual_seed(0)
    m, n, k, ld = 37, 29, 41, 50
    with tiletune.Runtime(backend="host") as rt:
        for ta in (OP_N, OP_T):
            for tb in (OP_N, OP_T):
                # column-major X (r x c, ld) is row-major storage (c x ld)[:, :r]
                a = torch.randn(m if ta == OP_T else k, ld)
                b = torch.randn(k if tb == OP_T else n, ld)
                c = torch.full((n, ld), float("nan"))
                rt.gemm(ta, tb, m, n, k, a.data_ptr(), R_32F, ld, b.data_ptr(), ld, c.data_ptr(), R_32F, ld,
                        alpha=0.5)
                A = a[:, : (k if ta == OP_T else m)].T  # the stored column-major matrices
                B = b[:, : (n if tb == OP_T else k)].T
                ref = 0.5 * (A.T if ta == OP_T else A).double() @ (B.T if tb == OP_T else B).double()
                got = c[:, :m].T
                assert torch.allclose(got.double(), ref, rtol=1e-4, atol=1e-4), (ta, tb)
        s = rt.stats()
        assert s["calls"] == 4 and s["vendor"] + s["fallbacks"] + s["nearest"] + s["tuned"] == 4
        assert rt.arch()[0]
        assert "vendor" in rt.explain(OP_N, OP_N, m, n, k, R_32F, ld, ld, R_32F, ld) or rt.explain(
            OP_N, OP_N, m, n, k, R_32F, ld, ld, R_32F, ld)


def test_bad_arguments_raise_an_error_naming_the_cause(workdir):
    with tiletune.Runtime(backend="host") as rt:
        x = torch.zeros(16)
        with pytest.raises(tiletune.Error) as e:
            rt.gemm(OP_N, OP_N, 4, 4, 4, x.data_ptr(), R_32F, 2, x.data_ptr(), 4, x.data_ptr(), R_32F, 4)
        assert e.value.status == tiletune._capi.INVALID_VALUE and "lda" in str(e.value)
    with pytest.raises(tiletune.Error, match="closed"):
        rt.stats()
    with pytest.raises(tiletune.Error) as e:
        tiletune.Runtime(db=str(workdir / "missing.db"), backend="host")
    assert e.value.status == tiletune._capi.DATABASE


def test_the_packaged_program_runs():
    import subprocess
    out = subprocess.run([tiletune.exe_path(), "--version"], capture_output=True, text=True, check=True)
    assert tiletune.__version__ in out.stdout
