"""The student bundle installs in a fresh virtual environment, checks, and hides the graders."""

from __future__ import annotations

import subprocess
import venv
from pathlib import Path

import pytest

from graders.bundle import write_bundle

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bundle_installs_and_checks_without_hidden_parts(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "bundle")
    for hidden in ("reference", "solutions", "graders/checks", "graders/grading.py",
                   "graders/worker/client.py", "examples", "tests"):
        assert not (bundle / hidden).exists(), f"the bundle ships {hidden}"
    assert (bundle / "assignments" / "a1_pallas_basics.ipynb").is_file()
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(bundle)],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr
    work = tmp_path / "work"
    work.mkdir()
    (work / "a1_pallas_basics.py").write_text(
        (ROOT / "solutions" / "a1_pallas_basics.py").read_text(encoding="utf-8"),
        encoding="utf-8")
    env = {"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "COLUMNS": "200"}
    check = subprocess.run([str(env_dir / "bin" / "pallas-lab"), "check", "a1_pallas_basics.py"],
                           cwd=work, capture_output=True, text=True, timeout=300, env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count(": passed") == 5
    probe = ("import importlib.util as u; print([m for m in ('reference', 'graders.checks', "
             "'graders.grading', 'graders.worker.client', 'solutions') if u.find_spec(m)])")
    absent = subprocess.run([str(python), "-c", probe], cwd=work, capture_output=True,
                            text=True, timeout=60, env=env)
    assert absent.stdout.strip() == "[]", absent.stdout + absent.stderr
    handout = subprocess.run([str(env_dir / "bin" / "pallas-lab"), "status"],
                             cwd=bundle, capture_output=True, text=True, timeout=300, env=env)
    assert handout.returncode == 0 and "a5 Splash Attention" in handout.stdout
