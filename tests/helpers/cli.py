"""The ``pallas-lab`` command line as the tests run it in a subprocess."""

from __future__ import annotations

import sys
from pathlib import Path


def pallas_lab() -> list[str]:
    """The command: the ``pallas-lab`` script beside this interpreter, else
    ``python -m graders.cli.main``."""
    script = Path(sys.executable).parent / "pallas-lab"
    return [str(script)] if script.exists() else [sys.executable, "-m", "graders.cli.main"]
