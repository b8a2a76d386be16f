"""``pallas-lab check --backend jax FILE``: a student's own file on real Pallas.

Runs the real command in a subprocess on real files: the a1 solution (every
Pallas task passes on JAX), the a1 handout (stubs: not started), and a
submission that counts on an aliased input being updated in place — JAX arrays
are immutable, so it fails on JAX and, now that pallas_sim copies an aliased input, on
pallas_sim alike.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def check(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graders.cli.main", "check", "--backend", "jax",
                           str(path), *extra], capture_output=True, text=True, cwd=ROOT,
                          timeout=600, check=False)


def test_the_a1_solution_passes_every_pallas_task_on_real_jax():
    done = check(ROOT / "solutions" / "a1_pallas_basics.py")
    out = done.stdout
    for task in ("1.1", "1.2", "1.3", "1.4", "1.5"):
        assert re.search(rf"Task {re.escape(task)} \w+: passed", out), out
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_untouched_handout_is_not_started(tmp_path):
    done = check(ROOT / "assignments" / "a1_pallas_basics.py", "--task", "1.2")
    assert "Task 1.2 blocked_add: not started" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 1


def test_relying_on_an_in_place_update_fails_here_as_on_jax(tmp_path):
    """A wrapper that returns ``acc`` instead of the aliased call's result: JAX arrays are
    immutable, so ``acc`` is unchanged on JAX, and now in pallas_sim too. The self-check
    fails it, and the JAX backend finds both backends agree (the mistake is the student's,
    not a difference between simulator and JAX)."""
    source = (ROOT / "solutions" / "a1_pallas_basics.py").read_text(encoding="utf-8")
    start = source.index("    return pl.pallas_call(\n        _accumulate_kernel,")
    end = source.index(")(acc, x)", start) + len(")(acc, x)")
    broken = source[:start] + source[start:end].replace("return pl.pallas_call(",
                                                        "pl.pallas_call(") + "\n    return acc"
    broken += source[end:]
    path = tmp_path / "a1_pallas_basics.py"
    path.write_text(broken, encoding="utf-8")
    on_sim = subprocess.run([sys.executable, "-m", "graders.cli.main", "check", str(path), "--task",
                             "1.4"], capture_output=True, text=True, cwd=ROOT, timeout=600,
                            check=False)
    assert "Task 1.4 accumulate_inplace: failing" in on_sim.stdout, on_sim.stdout + on_sim.stderr
    assert on_sim.returncode == 1
    on_jax = check(path, "--task", "1.4")
    assert "Task 1.4 accumulate_inplace: passed" in on_jax.stdout, on_jax.stdout + on_jax.stderr


def test_relative_paths_and_notebooks_run_on_jax(tmp_path):
    """A relative FILE, from the student's own folder, and a notebook, both on real JAX."""
    import jupytext

    source = (ROOT / "solutions" / "a1_pallas_basics.py").read_text(encoding="utf-8")
    (tmp_path / "a1_pallas_basics.py").write_text(source, encoding="utf-8")
    notebook = tmp_path / "nb"
    notebook.mkdir()
    jupytext.write(jupytext.reads(source, fmt="py:percent"), notebook / "a1_pallas_basics.ipynb")
    for cwd, name in ((tmp_path, "a1_pallas_basics.py"), (notebook, "a1_pallas_basics.ipynb")):
        done = subprocess.run([sys.executable, "-m", "graders.cli.main", "check",
                               "--backend", "jax",
                               name, "--task", "1.2"], capture_output=True, text=True, cwd=cwd,
                              timeout=600, check=False,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert "Task 1.2 blocked_add: passed" in done.stdout, done.stdout + done.stderr


def test_the_installed_student_bundle_runs_a_file_on_jax(tmp_path):
    """``pip install 'bundle[jax]'`` in a fresh venv, then ``pallas-lab check --backend jax``
    on a relative file: the bundle ships what the JAX backend needs."""
    import venv

    from graders.release.bundle import write_bundle

    bundle = write_bundle(tmp_path / "bundle")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    install = subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet",
                              f"{bundle}[jax]"], capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stderr
    work = tmp_path / "work"
    work.mkdir()
    (work / "a1_pallas_basics.py").write_text(
        (ROOT / "solutions" / "a1_pallas_basics.py").read_text(encoding="utf-8"),
        encoding="utf-8")
    env = {"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "COLUMNS": "200",
           "HOME": str(tmp_path)}
    done = subprocess.run([str(env_dir / "bin" / "pallas-lab"), "check", "--backend", "jax",
                           "a1_pallas_basics.py", "--task", "1.1"], cwd=work,
                          capture_output=True, text=True, timeout=600, env=env)
    assert "Task 1.1 add_kernel: passed" in done.stdout, done.stdout + done.stderr
