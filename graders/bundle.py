"""The student bundle: what students install, and nothing the grade depends on keeping hidden.

``pallas-lab release --bundle DIR`` writes an installable project to DIR:

* ``pallas_sim/`` (the simulator), ``assignments/`` (the handouts, ``.py``
  and ``.ipynb``);
* ``graders/student/`` (self-check, notebook conversion) with the few
  modules it needs: ``graders/assignments.py`` and ``graders/records.py``
  (the discovered assignments), ``graders/labs/`` without the hidden
  ``checks.py`` (records, public checks, harnesses), ``graders/harnesses/``
  (what the harnesses share) and
  ``graders/worker/static_check.py`` with ``graders/worker/policy/`` (the
  submission policy's compile-time check), and ``graders/fidelity/`` (for
  ``pallas-lab check --backend jax``: the student's own file on real JAX);
* a ``pyproject.toml`` whose ``pallas-lab`` command has ``check`` and
  ``status`` only, and a student ``README.md``.

Left out on purpose: ``reference/``, ``solutions/``, the hidden checks
(``graders/checks/``, ``graders/labs/<stem>/checks.py``), grading and the
worker (``graders/grading.py``, ``graders/worker/client.py``, ...), tests and
sample submissions.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from graders.assignments import ASSIGNMENTS

#: Files and folders copied from the repository, relative to its root.
SHIPPED = (
    "pallas_sim",
    "graders/__init__.py",
    "graders/assignments.py",
    "graders/records.py",
    "graders/values.py",
    "graders/status.py",
    "graders/labs",
    "graders/student",
    "graders/harnesses",
    "graders/worker/static_check.py",
    "graders/worker/policy",
    "graders/fidelity",
)
#: Files of a lab package (``graders/labs/<stem>/``) that never ship: the hidden checks.
LAB_HIDDEN = ("checks.py",)
#: What must never be in a bundle (checked after writing it).
HIDDEN = ("reference", "solutions", "graders/checks", "graders/grading.py",
          "graders/worker/client.py", "graders/worker/main.py", "examples", "tests")

PYPROJECT = """[build-system]
requires = ["setuptools>=68", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "pallas-lab-student"
version = "{version}"
description = "Pallas exercises: the simulator, the handouts and the public self-checks."
readme = "README.md"
requires-python = ">=3.11"
dependencies = {dependencies}

[project.optional-dependencies]
jax = {jax_dependencies}

[project.scripts]
pallas-lab = "graders.student.cli:main"

[tool.setuptools.packages.find]
include = ["pallas_sim*", "graders*"]
"""
#: The ``jax`` extra: CPU JAX of the version pallas_sim mirrors (as the repository's own).
JAX_DEPENDENCIES = ["jax>=0.10,<0.11", "jaxlib>=0.10,<0.11"]
DEPENDENCIES = ["numpy>=1.26", "ml_dtypes>=0.4", "hypothesis>=6.100", "rich>=13",
                "nbformat>=5.9", "RestrictedPython>=8.0"]

README = """# Pallas exercises: student bundle

Handouts, the `pallas_sim` simulator and the public self-checks of the
course's assignments on Pallas kernels, Flash Attention and Splash Attention.

## Install

```bash
python3 -m venv .venv && .venv/bin/pip install .
```

## Work

Your handouts are in `assignments/`: {handouts}. Each exists as a `.py`
(jupytext percent format) and as a Jupyter notebook (`.ipynb`); work in
either. Replace each `raise NotImplementedError("Need to implement for Task
N.M")` with your code and keep the function names and signatures. Import only
numpy, math, functools, itertools, dataclasses, typing, warnings and `pallas_sim`.

## Check your progress

```bash
pallas-lab check                       # every handout found here or in assignments/
pallas-lab check assignments/a1_pallas_basics.py
pallas-lab check --task 4.1            # one task
pallas-lab status                      # the table over all assignments
```

To see your own kernels run on real JAX Pallas (on the CPU, in JAX's two
interpreters), install the extra once with `.venv/bin/pip install '.[jax]'`
and run `pallas-lab check --backend jax assignments/a1_pallas_basics.py`.

`check` runs the public checks in your own Python: the lecture's worked
answers and properties against plain math, on fresh random inputs each run.
Per task it prints `passed`, `failing` (with the smallest failing input,
expected and got) or `not started`. Passing them is a good sign, not the
grade: the course's grader runs more checks, in a separate process, on a
fixed set of inputs. In a notebook, cells that only display, plot or test are
set aside by the grader; `check` tells you when it sets aside an import.

## Submit

Submit `<stem>.py` or `<stem>.ipynb` under its original name.
"""


def _copy(source: Path, target: Path) -> None:
    if source.is_dir():
        hidden = LAB_HIDDEN if source.name == "labs" else ()
        shutil.copytree(source, target,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", *hidden))
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def write_bundle(dest: str | Path, *, root: str | Path | None = None,
                 version: str = "0.1.0") -> Path:
    """Write the student bundle into ``dest`` (replaced if it exists); returns ``dest``.

    ``root`` is the repository (default: the one this module belongs to).
    Raises ``ValueError`` when ``dest`` is inside the repository's source
    folders or a shipped file is missing, and ``OSError`` for file errors.
    """
    root = Path(root) if root is not None else Path(__file__).resolve().parent.parent
    dest = Path(dest).resolve()
    if dest == root.resolve() or any(dest.is_relative_to(root.resolve() / part)
                                     for part in ("pallas_sim", "graders", "assignments")):
        raise ValueError(f"{dest} would overwrite the repository's own files")
    missing = [part for part in SHIPPED if not (root / part).exists()]
    if missing:
        raise ValueError(f"missing from {root}: {', '.join(missing)}")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for part in SHIPPED:
        _copy(root / part, dest / part)
    (dest / "graders" / "worker" / "__init__.py").write_text(
        '"""Only the static check ships in the student bundle."""\n', encoding="utf-8")
    handouts = sorted(p for p in (root / "assignments").iterdir()
                      if p.suffix in (".py", ".ipynb") and not p.name.startswith((".", "_")))
    for path in handouts:
        _copy(path, dest / "assignments" / path.name)
    names = ", ".join(f"`{a.stem}`" for a in ASSIGNMENTS.values()
                      if (dest / "assignments" / f"{a.stem}.py").is_file())
    (dest / "README.md").write_text(README.format(handouts=names), encoding="utf-8")
    deps = "[" + ", ".join(f'"{d}"' for d in DEPENDENCIES) + "]"
    jax_deps = "[" + ", ".join(f'"{d}"' for d in JAX_DEPENDENCIES) + "]"
    (dest / "pyproject.toml").write_text(PYPROJECT.format(version=version, dependencies=deps,
                                                          jax_dependencies=jax_deps),
                                         encoding="utf-8")
    leaked = [part for part in HIDDEN if (dest / part).exists()]
    leaked += [str(p.relative_to(dest)) for name in LAB_HIDDEN
               for p in (dest / "graders" / "labs").glob(f"*/{name}")]
    if leaked:  # pragma: no cover - SHIPPED and HIDDEN are disjoint
        raise ValueError(f"the bundle would contain hidden parts: {', '.join(leaked)}")
    return dest
