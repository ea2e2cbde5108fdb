#!/usr/bin/env bash
# The Python package on the CPU, as a user gets it: a virtual environment (build-venv/) with
# PyTorch from PyPI, `pip install .` of this tree into it (scikit-build-core builds the runtime
# and the program in build-python/), then the package's tests (python/tests: the C API from Python,
# routing, gradients, record -> tune -> ship, torchrun with two ranks) with pytest.
# Usage: scripts/test_python.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
V=build-venv
if [ ! -x "$V/bin/python" ]; then
  python3 -m venv "$V"
fi
# ninja: tiletune.torch builds its C++ route with PyTorch's extension machinery, which runs it.
"$V/bin/python" -m pip install -q --disable-pip-version-check torch torchvision numpy pytest ninja
"$V/bin/python" -m pip install -q --disable-pip-version-check . > "$V/install.log" 2>&1 ||
  { tail -50 "$V/install.log"; exit 1; }
# The installed package, not this tree's python/ folder, and no build tree's library.
cd python/tests
env -u TILETUNE_LIBRARY -u TILETUNE_EXE -u PYTHONPATH "../../$V/bin/python" -m pytest -q -p no:cacheprovider "$@" .
