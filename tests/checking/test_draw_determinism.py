"""Grading draws do not depend on which modules a process has loaded (docs/grading-design.md: the
same submission graded twice gives the same scores and feedback).

hypothesis (6.131+) mixes into its draws the literals of every "local" module it finds in
``sys.modules`` (not stdlib, not site-packages), with a time limit on collecting them. A
grader installed from a wheel, one run from the repository, a batch that preloaded every
lab and a single-file run would then draw different inputs. ``graders.checking.registry`` turns
that source off; this test loads a module full of distinctive literals between two runs
of the same property and asks for the same examples.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from hypothesis import strategies as st

from graders.checking.registry import GRADING_SETTINGS, run_property

LITERALS = [7_123_456_789 + i for i in range(200)]


def _drawn() -> list[int]:
    seen: list[int] = []
    run_property(st.lists(st.integers(), min_size=20, max_size=20), seen.extend,
                 max_examples=200, profile=GRADING_SETTINGS)
    return seen


def test_draws_do_not_depend_on_the_modules_loaded(tmp_path: Path) -> None:
    before = _drawn()
    source = tmp_path / "pallas_lab_constants_probe.py"
    source.write_text("VALUES = [" + ", ".join(map(str, LITERALS)) + "]\n", encoding="utf-8")
    spec = importlib.util.spec_from_file_location("pallas_lab_constants_probe", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        after = _drawn()
    finally:
        del sys.modules[spec.name]
    assert not set(LITERALS) & set(after), "a loaded module's literals were drawn"
    assert after == before
