"""The ``glint`` console script: runs the command-line tool that ships inside the wheel
(``glint/_bin/glint``), with the arguments it was given."""

from __future__ import annotations

import os
import sys

_BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "glint")


def main() -> None:
    tool = _BUNDLED if os.access(_BUNDLED, os.X_OK) else os.environ.get("GLINT_BIN", "")
    if not tool or not os.access(tool, os.X_OK):
        sys.stderr.write(
            "error: this glint package has no command-line tool: it was built from a checkout for "
            "development (make python). Install the wheel (make wheel; pip install dist/glint-*.whl), "
            "or set GLINT_BIN to a built glint (target/release/glint).\n"
        )
        raise SystemExit(2)
    os.execv(tool, [tool, *sys.argv[1:]])


if __name__ == "__main__":
    main()
