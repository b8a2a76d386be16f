"""The fidelity suite needs real JAX: ``pip install -e '.[jax]'`` (CI does).

Without JAX the whole directory is skipped with one line saying so. Every test here
carries the ``fidelity`` marker (applied by the root conftest.py), so
``pytest -m "not fidelity"`` leaves the suite out and ``pytest -m fidelity`` runs only it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

JAX_MISSING = ("tests/fidelity runs kernels on real JAX Pallas and jax cannot be imported; "
               "install the jax extra: pip install -e '.[jax]'")

try:
    import jax  # noqa: F401
except ImportError:
    JAX_IMPORTS = False
else:
    JAX_IMPORTS = True


class _WithoutJax(pytest.Module):
    """A test module of this directory when jax cannot be imported: skipped before it is
    imported, from one line of this file, so ``-ra`` folds the skips into one line."""

    def collect(self) -> list:
        if os.environ.get("CI"):  # .ci/run installs the jax extra: there it must run
            pytest.fail(f"{JAX_MISSING}, but CI must run the fidelity suite")
        pytest.skip(JAX_MISSING)


def pytest_pycollect_makemodule(module_path: Path,
                                parent: pytest.Collector) -> pytest.Module | None:
    """Without jax, every test module here is a skip (pytest's own Module otherwise)."""
    if JAX_IMPORTS:
        return None
    return _WithoutJax.from_parent(parent, path=module_path)
