#!/usr/bin/env bash
# The Python package on the CPU, as a user gets it: a virtual environment (build-venv/) with
# PyTorch from PyPI (installed once per host, see below), `pip install .` of this tree into it
# (scikit-build-core builds the runtime and the program in build-python/), then the package's
# tests (python/tests: the C API from Python, routing, gradients, record -> tune -> ship, torchrun
# with two ranks) with pytest.
# Usage: scripts/test_python.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
V=build-venv
# The dependencies (PyTorch from PyPI is 5.5 GB with its CUDA libraries, and pip keeps no copy of
# wheels that size) live in one environment per host outside the tree, TILETUNE_PYTHON_DEPS:
# installing them into each fresh clone cost 113 CPU-s and minutes of download. build-venv/ sees
# them through a .pth file and gets this tree's package alone, so every clone still installs and
# tests its own build of it. The lock: two clones' first runs do not install into it at once.
D=${TILETUNE_PYTHON_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/tiletune/python-deps}
mkdir -p "$(dirname "$D")"
(
  flock 9
  [ -x "$D/bin/python" ] || python3 -m venv "$D"
  # ninja: tiletune.torch builds its C++ route with PyTorch's extension machinery, which runs it.
  "$D/bin/python" -m pip install -q --disable-pip-version-check torch torchvision numpy pytest ninja
) 9>"$D.lock"
if [ ! -x "$V/bin/python" ]; then
  python3 -m venv "$V"
fi
site_packages() { "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
site_packages "$D" > "$(site_packages "$V")/tiletune-deps.pth"
"$V/bin/python" -m pip install -q --disable-pip-version-check . > "$V/install.log" 2>&1 ||
  { tail -50 "$V/install.log"; exit 1; }
# The installed package, not this tree's python/ folder, and no build tree's library.
cd python/tests
env -u TILETUNE_LIBRARY -u TILETUNE_EXE -u PYTHONPATH "../../$V/bin/python" -m pytest -q -p no:cacheprovider "$@" .
