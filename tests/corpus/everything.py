"""The whole corpus: every discovered assignment's mutants and correct variants, in course
order (``tests/corpus/<assignment id>.py``; an assignment without one has none)."""

from __future__ import annotations

import importlib
from pathlib import Path

from graders.course.catalog import ASSIGNMENTS
from tests.corpus.mutants import Mutant, Variant

_HERE = Path(__file__).resolve().parent
_MODULES = [importlib.import_module(f"tests.corpus.{assignment_id}")
            for assignment_id in ASSIGNMENTS if (_HERE / f"{assignment_id}.py").is_file()]

MUTANTS: list[Mutant] = [m for module in _MODULES for m in module.MUTANTS]
VARIANTS: list[Variant] = [v for module in _MODULES for v in module.VARIANTS]
