"""The whole corpus: every assignment's mutants and correct variants, in course order."""

from __future__ import annotations

from tests.corpus import a1, a2, a3, a4, a5
from tests.corpus.mutants import Mutant, Variant

MUTANTS: list[Mutant] = [*a1.MUTANTS, *a2.MUTANTS, *a3.MUTANTS, *a4.MUTANTS, *a5.MUTANTS]
VARIANTS: list[Variant] = [*a1.VARIANTS, *a2.VARIANTS, *a3.VARIANTS, *a4.VARIANTS,
                           *a5.VARIANTS]
