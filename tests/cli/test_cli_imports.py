"""The command line's main process imports neither pallas_sim nor ml_dtypes until it
grades something itself: in a batch the grader processes and the worker zygote load them,
and ml_dtypes alone takes most of a second of CPU to import (it registers its casts and
ufunc loops with numpy), which every ``pallas-lab`` run would otherwise pay once more."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _loaded_after(code: str, names: str) -> str:
    """What a fresh interpreter prints after running ``code``: the sorted modules of
    ``sys.modules`` for which the expression ``names`` (over ``m``) holds."""
    probe = f"import sys\n{code}\nprint(sorted(m for m in sys.modules if {names}))\n"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_building_the_command_line_loads_no_simulator() -> None:
    code = ("from graders.cli.main import build_parser\n"
            "import graders.cli.grade, graders.worker.protocol, graders.student.selfcheck\n"
            "build_parser()")
    assert _loaded_after(code, "m in ('pallas_sim', 'ml_dtypes')") == "[]"


def test_the_lazily_loaded_names_are_the_grading_sanitizers() -> None:
    from graders.grading import grade
    from graders.student import selfcheck
    from pallas_sim.extend import GRADING_SANITIZERS

    assert grade.GRADING_SIM_OPTIONS is GRADING_SANITIZERS
    assert selfcheck.SIM_OPTIONS is GRADING_SANITIZERS


def test_importing_the_entry_point_loads_no_command() -> None:
    """The console script imports ``graders.cli.main`` before ``main`` can catch a Ctrl-C:
    that import is the standard library only, so an interrupt in the first second lands
    inside ``main``."""
    assert _loaded_after("import graders.cli.main", "m.startswith(('rich', 'graders.cli.'))"
                         " and m != 'graders.cli.main'") == "[]"


def test_a_ctrl_c_while_the_commands_load_is_one_line_and_130(monkeypatch, capsys) -> None:
    """Ctrl-C in the first second (the command modules and rich still loading) printed a
    KeyboardInterrupt traceback (a TA's walk); now one line and exit status 130."""
    import importlib

    from graders.cli import main as entry

    real = importlib.import_module

    def interrupted(name: str, *args: object):
        if name == "graders.cli.release":
            raise KeyboardInterrupt
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", interrupted)
    assert entry.main(["grade", "--help"]) == entry.EXIT_INTERRUPTED == 130
    captured = capsys.readouterr()
    assert captured.err.strip() == "pallas-lab: interrupted; nothing more was done"
    assert "Traceback" not in captured.out + captured.err


def test_sigint_at_many_early_moments_never_prints_a_traceback() -> None:
    """SIGINT sent while ``pallas-lab grade`` starts, from the moment ``main`` is entered
    (it catches SIGTERM: /proc shows it) on: one line, exit 130 or a finished run, never
    a traceback. (Before ``main``, the interpreter itself is starting: not ours.)"""
    import os
    import signal
    import time

    def in_main(pid: int) -> bool:
        status = Path(f"/proc/{pid}/status").read_text()
        caught = int(next(line for line in status.splitlines()
                          if line.startswith("SigCgt:")).split()[1], 16)
        return bool(caught >> (signal.SIGTERM - 1) & 1)

    from tests.helpers.cli import pallas_lab

    sample = ROOT / "examples" / "submissions"
    files = sorted(sample.rglob("*.py"))[:1]
    assert files, "the bundled samples are missing"
    for delay in (0.0, 0.05, 0.2, 0.5, 1.0):
        proc = subprocess.Popen([*pallas_lab(), "grade", str(files[0])], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + 60
        while not in_main(proc.pid):
            assert time.monotonic() < deadline and proc.poll() is None, "main never ran"
            time.sleep(0.002)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        assert "Traceback" not in out + err, (delay, err[-3000:])
        assert proc.returncode in (0, 130), (delay, proc.returncode, err[-2000:])
