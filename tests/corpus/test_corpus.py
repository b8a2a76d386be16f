"""The mutation and correct-variant corpus, graded through the CLI in one batch (issue 12).

Every mutant of ``tests/corpus/mutants.py`` must lose points on its own task
(exactly ``kept`` where pinned) and nowhere else but the tasks that declare it
as a dependency; every correct variant under ``tests/corpus/variants/`` must
get 100. The whole corpus is one class folder graded by
``pallas-lab grade CLASS --jobs 2 --format gradescope --out DIR``, so what is
tested is what a TA runs. ``test_the_corpus_summary`` prints the figures
(mutants caught, misattributed, variants at 100).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from graders.assignments import ASSIGNMENTS, assignment_for_stem
from graders.checks.framework import load_checks
from tests.corpus.everything import MUTANTS, VARIANTS
from tests.corpus.mutants import Mutant, Variant

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
VARIANTS_DIR = HERE / "variants"
RUN_LIMIT = 1500


def _variants() -> list[tuple[str, str]]:
    """(stem, name) of every correct variant."""
    return sorted((v.stem, v.name) for v in VARIANTS)


def _variant(stem: str, name: str) -> Variant:
    return next(v for v in VARIANTS if (v.stem, v.name) == (stem, name))


def _base_source(stem: str, base: str) -> str:
    """The source of a solution (``base="solution"``) or of a correct variant."""
    if base == "solution":
        return (ROOT / "solutions" / f"{stem}.py").read_text(encoding="utf-8")
    variant = _variant(stem, base)
    if not variant.edits:
        return (VARIANTS_DIR / stem / f"{base}.py").read_text(encoding="utf-8")
    return _edited(_base_source(stem, "solution"), variant.edits, f"{stem}/{base}")


def _edited(source: str, edits: tuple[tuple[str, str], ...], label: str) -> str:
    for old, new in edits:
        assert source.count(old) == 1, (
            f"{label}: the text to change must occur once in its base; {old!r} occurs "
            f"{source.count(old)} times")
        source = source.replace(old, new)
    return source


def _mutant_source(mutant: Mutant) -> str:
    return _edited(_base_source(mutant.stem, mutant.base), mutant.edits,
                   f"{mutant.stem}/{mutant.name}")


def test_every_variant_file_is_listed() -> None:
    on_disk = {(p.parent.name, p.stem) for p in VARIANTS_DIR.glob("*/*.py")}
    listed = {(v.stem, v.name) for v in VARIANTS if not v.edits}
    assert on_disk == listed, "each file under tests/corpus/variants/ has a Variant entry"


def _student(kind: str, stem: str, name: str) -> str:
    return f"{kind}-{stem.split('_')[0]}-{name}"


def _cli() -> list[str]:
    script = Path(sys.executable).parent / "pallas-lab"
    return [str(script)] if script.exists() else [sys.executable, "-m", "graders.cli"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """results.json by student folder for the whole corpus (and the solutions)."""
    base = tmp_path_factory.mktemp("corpus")
    klass, out = base / "class", base / "results"
    for stem in {m.stem for m in MUTANTS} | {s for s, _ in _variants()}:
        folder = klass / _student("solution", stem, "base")
        folder.mkdir(parents=True)
        (folder / f"{stem}.py").write_text(_base_source(stem, "solution"), encoding="utf-8")
    for mutant in MUTANTS:
        folder = klass / _student("mutant", mutant.stem, mutant.name)
        folder.mkdir(parents=True)
        (folder / f"{mutant.stem}.py").write_text(_mutant_source(mutant), encoding="utf-8")
    for stem, name in _variants():
        folder = klass / _student("variant", stem, name)
        folder.mkdir(parents=True)
        (folder / f"{stem}.py").write_text(_base_source(stem, name), encoding="utf-8")
    done = subprocess.run([*_cli(), "grade", str(klass), "--jobs", "2", "--format",
                           "gradescope", "--out", str(out)], cwd=base, capture_output=True,
                          text=True, timeout=RUN_LIMIT, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    results = {}
    for path in out.glob("*/*/results.json"):
        results[path.parent.parent.name] = json.loads(path.read_text(encoding="utf-8"))
    return results


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


def test_the_solutions_get_full_marks(graded: dict[str, dict[str, Any]]) -> None:
    for stem in {m.stem for m in MUTANTS}:
        result = graded[_student("solution", stem, "base")]
        assert _tasks(result) == _full(stem), (stem, result["score"])


@pytest.mark.parametrize("mutant", MUTANTS, ids=[f"{m.stem[:2]}-{m.task}-{m.name}"
                                                 for m in MUTANTS])
def test_a_mistake_costs_points_on_its_task_and_only_there(
        graded: dict[str, dict[str, Any]], mutant: Mutant) -> None:
    result = graded[_student("mutant", mutant.stem, mutant.name)]
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


@pytest.mark.parametrize(("stem", "name"), _variants())
def test_a_correct_variant_gets_full_marks(graded: dict[str, dict[str, Any]], stem: str,
                                           name: str) -> None:
    result = graded[_student("variant", stem, name)]
    failing = {t["name"]: t.get("output", "") for t in result["tests"]
               if t["score"] < t["max_score"]}
    want = _variant(stem, name).score
    assert result["score"] == want, (f"{stem}/{name} is correct and must score {want} "
                                     f"(Variant.score); lost points: {failing}")


def _hidden_checks() -> list[tuple[str, str, str]]:
    """(stem, task, name) of every hidden check of the discovered assignments."""
    return [(a.stem, c.task, c.name) for a in ASSIGNMENTS.values() for c in load_checks(a.id)]


@pytest.mark.parametrize(("stem", "task", "name"), _hidden_checks(),
                         ids=[f"{s[:2]}-{t}-{n[:40]}" for s, t, n in _hidden_checks()])
def test_every_hidden_check_is_failed_by_some_mutant(graded: dict[str, dict[str, Any]],
                                                     stem: str, task: str, name: str) -> None:
    """A check no plausible mistake fails earns its points for nothing (issue 13: every
    check can fail): some single-mistake mutant of the corpus must fail it."""
    prefix = _student("mutant", stem, "")
    failing = [student for student, result in graded.items() if student.startswith(prefix)
               and any(test["name"] == name and test["score"] < test["max_score"]
                       for test in result["tests"])]
    assert failing, (f"no mutant in tests/corpus fails the {stem} Task {task} check {name!r}; "
                     "add the plausible mistake it exists to catch")


def test_the_corpus_summary(graded: dict[str, dict[str, Any]],
                            capsys: pytest.CaptureFixture[str]) -> None:
    caught = misattributed = 0
    for mutant in MUTANTS:
        hit, wrong = _verdict(mutant, graded[_student("mutant", mutant.stem, mutant.name)])
        caught += hit
        misattributed += bool(wrong)
    full = sum(graded[_student("variant", s, n)]["score"] == _variant(s, n).score
               for s, n in _variants())
    per_stem = {stem: sum(m.stem == stem for m in MUTANTS) for stem in
                sorted({m.stem for m in MUTANTS})}
    with capsys.disabled():
        print(f"\ncorpus: {caught}/{len(MUTANTS)} mutants caught, {misattributed} "
              f"misattributed, {full}/{len(_variants())} correct variants at their score; "
              f"mutants per assignment {per_stem}")
    assert caught == len(MUTANTS) and misattributed == 0 and full == len(_variants())
