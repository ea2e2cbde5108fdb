"""The `tiletune` command that `pip install` puts on PATH: the packaged program, with its arguments."""
import os
import sys

from ._capi import exe_path


def main():
    exe = exe_path()
    if not os.access(exe, os.X_OK):
        sys.stderr.write(f"tiletune: error: the tiletune program is not at {exe} (set TILETUNE_EXE)\n")
        return 1
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
