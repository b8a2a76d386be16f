"""The mutation and correct-variant corpus, graded through the CLI, one batch per assignment.

Every mutant of ``tests/corpus/mutants.py`` must lose points on its own task
(exactly ``kept`` where pinned) and nowhere else but the tasks that declare it
as a dependency; every correct variant under ``tests/corpus/variants/`` must
get its score. Each assignment's part of the corpus is one class folder graded by
``pallas-lab grade CLASS --jobs 2 --format gradescope --out DIR``, so what is
tested is what a TA runs; running the tests of one assignment (``-k a3``) grades only
its part.
``test_the_corpus_summary`` prints the figures per assignment (mutants caught,
misattributed, variants at their score).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graders.checking.framework import load_checks
from graders.course.catalog import ASSIGNMENTS, assignment_for_stem
from tests.corpus.everything import MUTANTS, VARIANTS
from tests.corpus.mutants import Mutant
from tests.corpus.sources import base_source, find_variant, mutant_source
from tests.helpers.cli import pallas_lab

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
VARIANTS_DIR = HERE / "variants"
RUN_LIMIT = 1500


def _variants() -> list[tuple[str, str]]:
    """(stem, name) of every correct variant."""
    return sorted((v.stem, v.name) for v in VARIANTS)


def test_every_variant_file_is_listed() -> None:
    on_disk = {(p.parent.name, p.stem) for p in VARIANTS_DIR.glob("*/*.py")}
    listed = {(v.stem, v.name) for v in VARIANTS if not v.edits}
    assert on_disk == listed, "each file under tests/corpus/variants/ has a Variant entry"


def _student(kind: str, stem: str, name: str) -> str:
    return f"{kind}-{stem.split('_')[0]}-{name}"


def _grade_stem(stem: str, base: Path) -> dict[str, dict[str, Any]]:
    """results.json by student folder for one assignment's part of the corpus: its
    solution, mutants and correct variants, graded as a class in one CLI batch."""
    klass, out = base / "class", base / "results"
    folder = klass / _student("solution", stem, "base")
    folder.mkdir(parents=True)
    (folder / f"{stem}.py").write_text(base_source(stem, "solution"), encoding="utf-8")
    for mutant in (m for m in MUTANTS if m.stem == stem):
        folder = klass / _student("mutant", mutant.stem, mutant.name)
        folder.mkdir(parents=True)
        (folder / f"{mutant.stem}.py").write_text(mutant_source(mutant), encoding="utf-8")
    for name in (n for s, n in _variants() if s == stem):
        folder = klass / _student("variant", stem, name)
        folder.mkdir(parents=True)
        (folder / f"{stem}.py").write_text(base_source(stem, name), encoding="utf-8")
    done = subprocess.run([*pallas_lab(), "grade", str(klass), "--jobs", "2", "--format",
                           "gradescope", "--out", str(out)], cwd=base, capture_output=True,
                          text=True, timeout=RUN_LIMIT, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return {path.parent.parent.name: json.loads(path.read_text(encoding="utf-8"))
            for path in out.glob("*/*/results.json")}


#: Every assignment the corpus covers.
STEMS = sorted({m.stem for m in MUTANTS} | {s for s, _ in _variants()})


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], dict[str, Any]]:
    """results.json of a corpus student folder (``_student``'s name), by folder name. Each
    assignment's part is graded once, when a test first asks for one of its folders, so a
    selection of one assignment's tests grades that part alone."""
    parts: dict[str, dict[str, dict[str, Any]]] = {}

    def result(student: str) -> dict[str, Any]:
        stem = next(s for s in STEMS if student.split("-")[1] == s.split("_")[0])
        if stem not in parts:
            parts[stem] = _grade_stem(stem, tmp_path_factory.mktemp(f"corpus-{stem}"))
        return parts[stem][student]

    return result


def _tasks(result: dict[str, Any]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for test in result["tests"]:
        scores[test["number"]] = scores.get(test["number"], 0.0) + test["score"]
    return scores


def _feedback(result: dict[str, Any], task: str) -> str:
    return "\n".join(t.get("output", "") for t in result["tests"] if t["number"] == task)


def _full(stem: str) -> dict[str, float]:
    assignment = assignment_for_stem(stem)
    assert assignment is not None
    return {task.id: float(task.points) for task in assignment.graded_tasks}


def _verdict(mutant: Mutant, result: dict[str, Any]) -> tuple[bool, list[str]]:
    """(caught on its task, tasks charged although neither it nor a dependant)."""
    assignment = assignment_for_stem(mutant.stem)
    assert assignment is not None
    got, full = _tasks(result), _full(mutant.stem)
    allowed = {mutant.task, *assignment.dependants(mutant.task)}
    wrong = [t for t, p in got.items() if t not in allowed and p < full[t]]
    return got[mutant.task] < full[mutant.task], wrong


@pytest.mark.parametrize("stem", [pytest.param(s, id=s) for s in STEMS])
def test_the_solutions_get_full_marks(graded: Callable[[str], dict[str, Any]],
                                      stem: str) -> None:
    result = graded(_student("solution", stem, "base"))
    assert _tasks(result) == _full(stem), (stem, result["score"])


@pytest.mark.parametrize("mutant", [pytest.param(m, id=f"{m.stem[:2]}-{m.task}-{m.name}")
                                    for m in MUTANTS])
def test_a_mistake_costs_points_on_its_task_and_only_there(
        graded: Callable[[str], dict[str, Any]], mutant: Mutant) -> None:
    result = graded(_student("mutant", mutant.stem, mutant.name))
    got = _tasks(result)
    caught, wrong = _verdict(mutant, result)
    text = _feedback(result, mutant.task)
    assert caught, (f"{mutant.name} ({mutant.why}) must cost points on Task {mutant.task}; "
                    f"it kept {got[mutant.task]}")
    assert not wrong, (f"{mutant.name} ({mutant.why}) is a Task {mutant.task} mistake, but "
                       f"Tasks {wrong} lost points too: {got}")
    if mutant.kept is not None:
        assert got[mutant.task] == mutant.kept, (
            f"{mutant.name}: Task {mutant.task} keeps exactly {mutant.kept} points "
            f"(the checks this mistake does not touch); got {got[mutant.task]}\n{text}")
    for phrase in mutant.says:
        assert phrase in text, f"{mutant.name}: the feedback does not say {phrase!r}:\n{text}"
    for task, phrase in mutant.elsewhere:
        other = _feedback(result, task)
        assert phrase in other, (f"{mutant.name}: Task {task}'s feedback does not say "
                                 f"{phrase!r}:\n{other}")
    everything = "\n".join(t.get("output", "") for t in result["tests"])
    for phrase in mutant.never:
        assert phrase not in everything, (f"{mutant.name}: the feedback says {phrase!r}, "
                                          f"which names another mistake:\n{everything}")


@pytest.mark.parametrize(("stem", "name"), [pytest.param(s, n, id=f"{s}-{n}")
                                            for s, n in _variants()])
def test_a_correct_variant_gets_full_marks(graded: Callable[[str], dict[str, Any]], stem: str,
                                           name: str) -> None:
    result = graded(_student("variant", stem, name))
    failing = {t["name"]: t.get("output", "") for t in result["tests"]
               if t["score"] < t["max_score"]}
    want = find_variant(stem, name).score
    assert result["score"] == want, (f"{stem}/{name} is correct and must score {want} "
                                     f"(Variant.score); lost points: {failing}")


def _hidden_checks() -> list[tuple[str, str, str]]:
    """(stem, task, name) of every hidden check of the discovered assignments."""
    return [(a.stem, c.task, c.name) for a in ASSIGNMENTS.values() for c in load_checks(a.id)]


@pytest.mark.parametrize(("stem", "task", "name"), [
    pytest.param(s, t, n, id=f"{s[:2]}-{t}-{n[:40]}") for s, t, n in _hidden_checks()])
def test_every_hidden_check_is_failed_by_some_mutant(graded: Callable[[str], dict[str, Any]],
                                                     stem: str, task: str, name: str) -> None:
    """A check no plausible mistake fails earns its points for nothing (every check can
    fail): some single-mistake mutant of the corpus must fail it."""
    failing = [m.name for m in MUTANTS if m.stem == stem
               and any(test["name"] == name and test["score"] < test["max_score"]
                       for test in graded(_student("mutant", stem, m.name))["tests"])]
    assert failing, (f"no mutant in tests/corpus fails the {stem} Task {task} check {name!r}; "
                     "add the plausible mistake it exists to catch")


@pytest.mark.parametrize("stem", [pytest.param(s, id=s) for s in STEMS])
def test_the_corpus_summary(graded: Callable[[str], dict[str, Any]], stem: str,
                            capsys: pytest.CaptureFixture[str]) -> None:
    mutants = [m for m in MUTANTS if m.stem == stem]
    variants = [n for s, n in _variants() if s == stem]
    caught = misattributed = 0
    for mutant in mutants:
        hit, wrong = _verdict(mutant, graded(_student("mutant", stem, mutant.name)))
        caught += hit
        misattributed += bool(wrong)
    full = sum(graded(_student("variant", stem, n))["score"] == find_variant(stem, n).score
               for n in variants)
    with capsys.disabled():
        print(f"\ncorpus {stem}: {caught}/{len(mutants)} mutants caught, {misattributed} "
              f"misattributed, {full}/{len(variants)} correct variants at their score")
    assert caught == len(mutants) and misattributed == 0 and full == len(variants)
