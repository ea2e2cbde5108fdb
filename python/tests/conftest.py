"""The package's tests run on the CPU (the host backend), as CI does; a CUDA machine runs them too.

They import the installed package (`pip install .`), or a build tree's when TILETUNE_LIBRARY and
TILETUNE_EXE name its runtime library and program (PYTHONPATH=python)."""
import os

import pytest

os.environ.setdefault("TILETUNE_POISON", "1")  # every routed output is NaN before tiletune writes it
# tiletune.torch's C++ route is built once, into one folder every test process shares: `workdir`
# points XDG_CACHE_HOME, under which PyTorch keeps it by default, at each test's own folder.
os.environ.setdefault("TORCH_EXTENSIONS_DIR", os.path.join(os.environ.get("XDG_CACHE_HOME") or
                                                           os.path.expanduser("~/.cache"), "torch_extensions"))


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A private directory for databases and recordings; no user database from the environment."""
    monkeypatch.delenv("TILETUNE_USER_DB", raising=False)
    monkeypatch.delenv("TILETUNE_RECORD_UNTUNED", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture
def routed(workdir):
    """tiletune.torch enabled for the test, every problem it can take routed to it (no database:
    the vendor rung, OpenBLAS on the host, or a template default where OpenBLAS has no such GEMM)."""
    import tiletune.torch as ttt
    state = ttt.enable(devices=("cpu",), serve="all")
    yield state
    ttt.disable()


@pytest.fixture(params=["cpp", "python"])
def route(request, monkeypatch):
    """tiletune.torch's route for the test: the C++ one (built just in time) and the Python one. The
    files that test routing run every test on both (pytestmark)."""
    monkeypatch.setenv("TILETUNE_TORCH_ROUTE", request.param)
    return request.param
