"""The mutation corpus: single-mistake variants of working submissions.

Each :class:`Mutant` takes a base file (a solution, or a correct variant from
``variants/<stem>/``), makes one mistake a student could make (``edits``: each
``old`` text occurs exactly once in the base), and states the task that must
lose points for it. Every other task must keep full marks, except the tasks
that declare the mistaken one as a dependency in the assignments table (a
wrapper and its kernel, mask_stats and the MaskInfo builder): one fault, one
charge. ``kept`` pins the points the task keeps where the checks are known
to split; ``says`` lists phrases its feedback must contain (a diagnosis is
shown only where it is true of the failing input); ``elsewhere`` pins phrases
the feedback of a dependant task must contain, and ``never`` phrases that no
task's feedback may contain (a diagnosis of another mistake).

The corpus itself is data, one module per assignment (``tests/corpus/a1.py``
... ``a5.py``: ``MUTANTS`` and ``VARIANTS``); ``tests/corpus/test_corpus.py``
grades every mutant and variant through the CLI in one batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.helpers.labs import stem_of

A1, A2, A3, A4, A5 = (stem_of(f"a{n}") for n in range(1, 6))


@dataclass(frozen=True)
class Mutant:
    """One mistake: ``name`` (unique per stem), ``stem``, the ``task`` that must lose
    points, ``edits`` ((old, new) text replacements on the base), ``why`` (the mistake in
    words), ``base`` ("solution" or a variant's name), ``kept`` (exact points the task
    keeps, or None), ``says`` (phrases the task's feedback must contain), ``elsewhere``
    ((task, phrase) pairs: a dependant task's feedback must contain the phrase) and
    ``never`` (phrases no task's feedback may contain)."""

    name: str
    stem: str
    task: str
    edits: tuple[tuple[str, str], ...]
    why: str
    base: str = "solution"
    kept: float | None = None
    says: tuple[str, ...] = ()
    elsewhere: tuple[tuple[str, str], ...] = ()
    never: tuple[str, ...] = ()


@dataclass(frozen=True)
class Variant:
    """A correct alternative that must get ``score`` (100): ``name``, ``stem``, ``why`` it is
    right although it differs from the solution, and either ``edits`` on the solution or,
    when there are none, the whole file ``variants/<stem>/<name>.py``. ``score`` is below
    100 only where a correct design is predicted slower than the fastest candidate on a
    performance task: ``why`` then says so."""

    name: str
    stem: str
    why: str
    edits: tuple[tuple[str, str], ...] = ()
    score: float = 100
