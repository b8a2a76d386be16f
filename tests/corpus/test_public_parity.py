"""The public self-check blames what the grade blames.

``tests/corpus/test_corpus.py`` shows that the grade catches every mutant of the corpus on
its own task and charges no other task but the ones that declare it as a dependency. Here
every mutant goes through ``pallas-lab check`` (``check_file``, every task of its file, with
a pinned seed) and must

* fail the public check of its own task (a mistake the grade catches gets a warning), and
* fail no other task's public check, unless that task's outcome says it depends on the
  mutant's task ("depends on Task N.M ..."): a wrapper whose public check compares with
  plain math fails with its kernel, as the grade's feedback says, and a kernel check that
  runs through the student's own wrapper says when the wrapper is at fault.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from graders.checking.status import Status
from graders.course.catalog import assignment_for_stem
from graders.student.selfcheck import SELF_CHECK_SETTINGS, check_file
from tests.corpus.everything import MUTANTS
from tests.corpus.mutants import Mutant
from tests.corpus.sources import mutant_source

#: The self-check's profile with a fixed seed, so that the suite gives one answer.
PINNED = settings(SELF_CHECK_SETTINGS, derandomize=True)


def public_verdict(mutant: Mutant, folder: Path) -> tuple[str, list[str]]:
    """(the status of the mutant's task, ``"N.M: status (first detail)"`` of every other task
    that does not pass and does not say it depends on the mutant's task) under
    ``pallas-lab check``."""
    path = folder / f"{mutant.stem}.py"
    path.write_text(mutant_source(mutant), encoding="utf-8")
    info = assignment_for_stem(mutant.stem)
    assert info is not None
    report = check_file(path, info, timeout=60, profile=PINNED)
    own = next(t.status for t in report.tasks if t.task == mutant.task)
    blamed = [f"{t.task}: {t.status} ({(t.detail or [''])[0][:200]})" for t in report.tasks
              if t.task != mutant.task and t.status != Status.PASSED
              and not any(f"depends on Task {mutant.task}" in line for line in t.detail)]
    return own, blamed


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the mutants' own 0/0 and inf - inf
@pytest.mark.parametrize("mutant", MUTANTS, ids=[f"{m.stem[:2]}-{m.task}-{m.name}"
                                                 for m in MUTANTS])
def test_the_public_check_blames_the_task_the_grade_blames(mutant: Mutant,
                                                           tmp_path: Path) -> None:
    own, blamed = public_verdict(mutant, tmp_path)
    assert own == Status.FAILING, (
        f"{mutant.name} ({mutant.why}) loses points on Task {mutant.task} when graded; "
        f"`pallas-lab check` must flag that task too, but says {own}")
    assert not blamed, (
        f"{mutant.name} is a Task {mutant.task} mistake, but `pallas-lab check` fails other "
        f"tasks without saying they depend on Task {mutant.task}: {blamed}")
