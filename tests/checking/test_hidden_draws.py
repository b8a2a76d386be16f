"""A hidden property's questions cannot be drawn again from what ships to students.

A red team regenerated Task 1.5's 50 drawn questions by calling ``run_property`` on the
public ``vmem_space`` strategy with a body of its own (every derandomized property drew
from hypothesis' digest of the registry's inner ``test``, whichever check ran it), kept a
table of answers and had full marks without a general formula. The draws are now seeded
by the source of the module that defines the check's body (``check_seed``): the hidden
checks' file never ships, and the same checks still draw the same questions every run.
"""

from __future__ import annotations

from types import SimpleNamespace

import reference.a1_pallas_basics as ref
from graders.checking.registry import run_property
from graders.labs.a1_pallas_basics.hidden import checks
from graders.labs.a1_pallas_basics.public.vmem_space import vmem_questions


class _Asked:
    """Stands for a grading session: records every vmem_bytes question, answers it right."""

    def __init__(self) -> None:
        self.questions: list[str] = []

    def invoke(self, name: str, args: tuple, kwargs: dict | None = None, **_: object):
        shapes, dtypes, block, buffers = args[:4]
        self.questions.append(repr((shapes, dtypes, block, buffers)))
        return SimpleNamespace(value=ref.vmem_bytes(shapes, dtypes, block, buffers))


def _hidden_questions() -> list[str]:
    session = _Asked()
    checks.vmem_property(session)
    return session.questions


def test_the_hidden_draws_are_the_same_every_run() -> None:
    assert _hidden_questions() == _hidden_questions()


def test_a_replay_of_the_public_strategy_does_not_draw_the_hidden_questions() -> None:
    hidden = set(_hidden_questions())
    replayed: list[str] = []

    def record(q: dict) -> None:  # a student's replay: the shipped strategy and registry
        replayed.append(repr((q["shapes"], q["dtypes"], q["block_shape"], q["buffer_count"])))

    run_property(vmem_questions(), record, max_examples=50)
    fixed = {repr(tuple(c.args)) for c in (*checks.VMEM_EDGES, *checks.WIDE_EDGES)}
    drawn = hidden - fixed
    assert len(replayed) >= 50 and len(drawn) >= 40
    # the simplest question hypothesis tries first may coincide; a table needs the rest
    assert len(drawn & set(replayed)) <= 2
