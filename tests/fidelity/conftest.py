"""The fidelity suite needs real JAX: ``pip install -e '.[jax]'`` (CI does).

Every test here carries the ``fidelity`` marker, so ``pytest -m "not fidelity"``
leaves the suite out and ``pytest -m fidelity`` runs only it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:
    import jax  # noqa: F401
except ImportError as exc:  # a clear message instead of a silent skip
    raise ImportError("tests/fidelity runs kernels on real JAX Pallas; install the extra with "
                      "pip install -e '.[jax]'") from exc


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.fidelity)
