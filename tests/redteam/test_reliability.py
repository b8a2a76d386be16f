"""Grading hostile and honest submissions twice through the CLI gives identical results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import pallas_lab
from tests.redteam.attacks import ATTACKS, SOLUTION, STEM, compose

#: Attacks whose feedback carries the worker's own output, exceptions and restarts.
CHOSEN = ("forged_output", "always_equal", "os_exit", "pytest_outcomes")


def _grade(klass: Path, out: Path, policy: bool) -> dict[str, str]:
    done = subprocess.run(
        [*pallas_lab(), "grade", str(klass), "--format", "gradescope", "--out", str(out),
         "--timeout", "10"],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PALLAS_LAB_POLICY": "on" if policy else "off"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    texts = {}
    for path in sorted(out.glob(f"*/{STEM}/results.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        result.pop("execution_time", None)
        for test in result.get("tests", []):
            test.pop("execution_time", None)
        texts[path.parent.parent.name] = json.dumps(result, sort_keys=True, indent=1)
    return texts


@pytest.mark.parametrize("policy", [True, False], ids=["policy", "below-policy"])
def test_grading_twice_gives_identical_results(tmp_path: Path, policy: bool) -> None:
    klass = tmp_path / "class"
    (klass / "honest").mkdir(parents=True)
    shutil.copy(SOLUTION, klass / "honest" / f"{STEM}.py")
    subs = {"REPO": "/nonexistent", "MARKER": "/nonexistent", "WRITTEN": "/nonexistent",
            "PORT": "9", "SLEEP": "1",
            "CLASS": str(klass), "RESULTS": "/nonexistent"}
    for attack in ATTACKS:
        if attack.name in CHOSEN:
            (klass / attack.name).mkdir()
            (klass / attack.name / f"{STEM}.py").write_text(compose(attack, subs, policy),
                                                            encoding="utf-8")
    first = _grade(klass, tmp_path / "first", policy)
    second = _grade(klass, tmp_path / "second", policy)
    assert set(first) == {"honest", *CHOSEN}
    for student, text in first.items():
        assert second[student] == text, f"{student}: grading twice gave different results"


#: a1's vmem_bytes (Task 1.5) wrapped so that its answer depends on unseeded numpy
#: generators: right about half the time, otherwise off by a random amount.
UNSEEDED = '''

_right_vmem_bytes = vmem_bytes


def vmem_bytes(*args, **kwargs):
    right = _right_vmem_bytes(*args, **kwargs)
    draws = [np.random.default_rng().random(), np.random.rand(), np.random.RandomState().rand()]
    if min(draws) < 0.25:
        return right + 1 + int(1000 * draws[0])
    return right
'''


def test_unseeded_randomness_gives_the_same_results_on_every_grade(tmp_path: Path) -> None:
    """Before, such a file scored 100, 93, 93, 93 over four grades.
    Every source of randomness it reaches is seeded per (file, check, call), so three
    grades give the same results.json (timings aside)."""
    klass = tmp_path / "class"
    for name in ("dice", "honest"):
        (klass / name).mkdir(parents=True)
    shutil.copy(SOLUTION, klass / "honest" / f"{STEM}.py")
    source = SOLUTION.read_text(encoding="utf-8")
    assert "import numpy as np" in source
    (klass / "dice" / f"{STEM}.py").write_text(source + UNSEEDED, encoding="utf-8")
    grades = [_grade(klass, tmp_path / f"grade{n}", policy=True)["dice"] for n in range(3)]
    assert '"score": 100' not in grades[0], "the randomness does reach the answer"
    for n, text in enumerate(grades[1:], start=2):
        assert text == grades[0], f"grade {n} differs from grade 1"
