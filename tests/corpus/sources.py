"""The sources of the corpus: a solution, a correct variant or a mutant, with its edits applied."""

from __future__ import annotations

from pathlib import Path

from tests.corpus.everything import VARIANTS
from tests.corpus.mutants import Mutant, Variant

ROOT = Path(__file__).resolve().parents[2]
VARIANTS_DIR = Path(__file__).resolve().parent / "variants"


def find_variant(stem: str, name: str) -> Variant:
    """The correct variant ``name`` of ``stem``."""
    return next(v for v in VARIANTS if (v.stem, v.name) == (stem, name))


def base_source(stem: str, base: str) -> str:
    """The source of a solution (``base="solution"``) or of a correct variant."""
    if base == "solution":
        return (ROOT / "solutions" / f"{stem}.py").read_text(encoding="utf-8")
    variant = find_variant(stem, base)
    if not variant.edits:
        return (VARIANTS_DIR / stem / f"{base}.py").read_text(encoding="utf-8")
    return edited(base_source(stem, "solution"), variant.edits, f"{stem}/{base}")


def edited(source: str, edits: tuple[tuple[str, str], ...], label: str) -> str:
    for old, new in edits:
        assert source.count(old) == 1, (
            f"{label}: the text to change must occur once in its base; {old!r} occurs "
            f"{source.count(old)} times")
        source = source.replace(old, new)
    return source


def mutant_source(mutant: Mutant) -> str:
    """The mutant's source: its base with its edits."""
    return edited(base_source(mutant.stem, mutant.base), mutant.edits,
                  f"{mutant.stem}/{mutant.name}")
