"""`pallas-lab check` / `status`: public checks in the student's process, never the reference."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "examples" / "submissions"


def pallas_lab(*args: str, cwd: Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graders.cli.main", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=timeout,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "COLUMNS": "200"})


def test_check_passes_the_solution_and_uses_no_hidden_module() -> None:
    code = ("import sys; from graders.student.cli import main; "
            "rc = main(['check', 'solutions/a1_pallas_basics.py', "
            "'solutions/a4_flash_attention.py', '--task', '4.1']);"
            "hidden = sorted(m for m in sys.modules if m.split('.')[0] == 'reference' or "
            "m.startswith(('graders.checking.framework', 'graders.grading', "
            "'graders.worker.client')));"
            "print('HIDDEN', hidden); sys.exit(rc)")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, text=True, capture_output=True,
                         timeout=120, env={"PYTHONPATH": str(ROOT), "COLUMNS": "200"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Task 4.1 online_softmax: passed" in run.stdout
    assert "HIDDEN []" in run.stdout, "the self-check must not import the reference or graders"
    full = pallas_lab("check", "solutions/a1_pallas_basics.py")
    assert full.returncode == 0, full.stdout + full.stderr
    assert full.stdout.count(": passed") == 5


def test_check_shows_the_smallest_failing_input_and_not_started() -> None:
    ben = pallas_lab("check", "a1_pallas_basics.py", "a4_flash_attention.py",
                     cwd=SAMPLES / "ben_typical_mistakes")
    assert ben.returncode == 1
    out = ben.stdout
    assert "Task 1.3 bias_add: failing" in out and "got: 192 DMAs" in out
    assert "Task 1.5 vmem_bytes: failing" in out and "smallest failing input:" in out
    assert "Task 4.1 online_softmax: failing" in out and "(5, 2.1851)" in out
    assert "Task 1.1 add_kernel: passed" in out
    cleo = pallas_lab("check", "--task", "1.2", cwd=SAMPLES / "cleo_untouched")
    assert cleo.returncode == 1 and "Task 1.2 blocked_add: not started" in cleo.stdout
    assert "Task 1.1" not in cleo.stdout, "--task runs one task only"


def test_status_lists_every_assignment_and_usage_errors_exit_2(tmp_path: Path) -> None:
    status = pallas_lab("status", str(SAMPLES / "ada_correct"))
    assert status.returncode == 0
    for label in ("a1 Pallas basics", "a2 Pipelining", "a3 Matmul", "a4 Flash Attention",
                  "a5 Splash Attention"):
        assert label in status.stdout
    assert "5/5" in status.stdout, "ada passes every public check of a1"
    assert pallas_lab("check", cwd=tmp_path).returncode == 2
    assert pallas_lab("check", "--task", "9.9").returncode == 2


STEMS = sorted(p.stem for p in (ROOT / "solutions").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("stem", STEMS)
def test_every_public_check_passes_the_solution_and_none_passes_the_handout(stem: str) -> None:
    from graders.course.catalog import assignment_for_stem
    from graders.student.public import load_public_checks
    from graders.student.selfcheck import check_file

    info = assignment_for_stem(stem)
    assert info is not None
    checked = {c.task for c in load_public_checks(info.id)}
    solution = check_file(ROOT / "solutions" / f"{stem}.py", info)
    assert {t.task: t.status for t in solution.tasks if t.task in checked} == dict.fromkeys(
        sorted(checked), "passed"), [t.detail for t in solution.tasks if t.status != "passed"]
    handout = check_file(ROOT / "assignments" / f"{stem}.ipynb", info)
    assert {t.status for t in handout.tasks} == {"not started"}, (
        "an untouched handout passes no public check and every stub reads as not started")


def test_a_file_that_raises_on_import_is_shown_where(tmp_path: Path) -> None:
    """An honest student's walk: top-level code that raised gave "check: the file loads /
    IndexError: tuple index out of range" and nothing more in the self-check, while the
    grader's feedback named the line and said why top-level code runs."""
    source = (ROOT / "assignments" / "a1_pallas_basics.py").read_text(encoding="utf-8")
    (tmp_path / "a1_pallas_basics.py").write_text(
        source + "\n_blocks = (128, 128)\n_scale = 1.0 / _blocks[3]\n", encoding="utf-8")
    run = pallas_lab("check", "a1_pallas_basics.py", "--task", "1.1", cwd=tmp_path)
    out = run.stdout
    assert "IndexError: tuple index out of range" in out, out
    assert "code at the top level of the file runs on import" in out, out
    assert 'File "a1_pallas_basics.py", line' in out and "_scale = 1.0 / _blocks[3]" in out
