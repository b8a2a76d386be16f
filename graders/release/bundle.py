"""The student bundle: what students install, and nothing the grade depends on keeping hidden.

``pallas-lab release --bundle DIR`` writes an installable project to DIR:

* ``assignments/`` (the handouts, ``.py`` and ``.ipynb``);
* the code, chosen by a rule on paths (:func:`shipped_files`), not a list: the
  roots ``pallas_sim/`` (the simulator), ``graders/labs/`` (of each lab only its record,
  ``__init__.py``, and its ``public/`` folder: public checks, public harness, worked
  answers and fidelity cases; never its ``hidden/`` folder: the hidden checks and the
  grader's ``harness.py``, whose standard calls are the wrapper tasks' answers) and
  ``graders/student/`` (
  self-check, notebook conversion, the ``check``/``status``/``profile`` commands), the
  program ``python -m graders.fidelity.run`` that ``check --backend jax``
  starts, and every repository module those import, transitively, read from
  their ASTs (today: ``graders/course/catalog.py``, ``graders/harnesses/``,
  ``graders/worker/static_check.py`` with ``graders/worker/policy/``, and
  ``graders/fidelity/``), with each package's ``__init__.py``;
* a ``pyproject.toml`` whose ``pallas-lab`` command has ``check``, ``status`` and
  ``profile`` (``graders.student.cli``), with the extras ``jax`` and ``plot``, and a
  student ``README.md``.

Left out on purpose, and refused should the rule ever reach them (:data:`HIDDEN`):
``reference/``, ``solutions/``, the hidden checks' framework (``graders/checking/`` but
for the registry, statuses and values the public checks share), every
lab file outside its record and its ``public/`` folder (:func:`lab_hidden`: ``hidden/``
with its checks, diagnoses, ``harness.py`` and timing), grading
and the worker (``graders/grading/``, ``graders/worker/client.py``, ...), tests
and sample submissions.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from graders.course.catalog import ASSIGNMENTS
from graders.student.jax_backend import RUNNER as JAX_RUNNER

#: The bundle's roots, relative to the repository: the simulator, the student's
#: commands and the assignments' packages, each a whole folder (every file in it ships,
#: but of a lab only its record and its ``public/`` folder: :data:`LAB_PUBLIC`).
ROOTS = ("pallas_sim", "graders/student", "graders/labs")
#: Modules the shipped commands run as programs (``python -m``) instead of importing:
#: the ``--backend jax`` subprocess.
PROGRAMS = (JAX_RUNNER,)
#: What must never be in a bundle (checked after the rule has chosen): the grade
#: depends on keeping these hidden.
HIDDEN = ("reference", "solutions", *(f"graders/checking/{name}.py" for name in (
    "framework", "compare", "strategies", "measures", "performance", "step_model")),
          "graders/grading", "graders/batch", "graders/worker/client.py",
          "graders/worker/main.py", "examples", "tests")
#: The assignments' packages. Of a lab, the folder decides what ships: its record
#: (``__init__.py``) and everything under :data:`LAB_PUBLIC` (the public checks and what
#: they run, ``public_harness.py``; the worked answers; the cases of ``check --backend
#: jax``); nothing else, so the ``hidden/`` folder (the hidden checks, their diagnoses,
#: the grader's ``harness.py``, whose standard calls are the wrapper tasks' answers, the
#: timing) and any file added beside the record stay with the grader.
#: ``tests/release/test_bundle_answers.py`` fails on any shipped line that is a solution
#: line the handout does not show.
LABS = Path("graders/labs")
LAB_RECORD = "__init__.py"
LAB_PUBLIC = "public"
LAB_HIDDEN = "hidden"
#: The repository's own top-level packages: an import of one of them is followed.
FIRST_PARTY = ("pallas_sim", "graders", "reference", "solutions")


def _module_file(root: Path, module: str) -> Path | None:
    """The file of the dotted ``module`` in the repository (a package's ``__init__.py``),
    or None when it is not the repository's."""
    base = root.joinpath(*module.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _module_name(root: Path, path: Path) -> str:
    """The dotted module name of a repository file (``graders/student/cli.py`` ->
    ``graders.student.cli``; a package's ``__init__.py`` -> the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, module: str) -> set[str]:
    """The dotted modules a Python file imports, read from its AST (nothing is run).

    ``module`` is the file's own dotted name (for relative imports). Counted: ``import
    a.b``, ``from a import b`` (both ``a`` and ``a.b``, whichever is a module), relative
    imports, and ``importlib.import_module("a.b")`` / ``import_module(f"a.b.{x}")``
    (the latter as ``a.b.*``: every module of package ``a.b``). Imports inside functions
    count too. Raises ``SyntaxError`` for a file that does not parse.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            found.add(stem)
            found.update(f"{stem}.{alias.name}" for alias in node.names if alias.name != "*")
        elif (isinstance(node, ast.Call) and node.args
              and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"):
            target = node.args[0]
            if isinstance(target, ast.Constant) and isinstance(target.value, str):
                found.add(target.value)
            elif (isinstance(target, ast.JoinedStr) and target.values
                  and isinstance(target.values[0], ast.Constant)
                  and str(target.values[0].value).endswith(".")):
                found.add(str(target.values[0].value) + "*")
    return found


def shipped_files(root: Path) -> list[Path]:
    """The repository files the bundle ships, by the rule: every file under a root
    (:data:`ROOTS`), the program modules (:data:`PROGRAMS`), and, transitively,
    every repository module a shipped ``.py`` file imports, with the ``__init__.py``
    of each package on the way. Sorted repository-relative paths.

    Raises ``ValueError`` when a root or program is missing, a shipped file imports a
    repository module that does not exist, or the rule reaches a hidden part
    (:data:`HIDDEN`).
    """
    root = Path(root)
    files: set[Path] = set()
    queue: list[Path] = []

    def add(path: Path) -> None:
        if path in files:
            return
        files.add(path)
        for parent in path.relative_to(root).parents:
            init = root / parent / "__init__.py"
            if parent.parts and init.is_file() and init not in files:
                add(init)
        if path.suffix == ".py":
            queue.append(path)

    for part in ROOTS:
        folder = root / part
        if not folder.is_dir():
            raise ValueError(f"missing from {root}: {part}")
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc" \
                    and not lab_hidden(path.relative_to(root)):
                add(path)
    for program in PROGRAMS:
        path = _module_file(root, program)
        if path is None:
            raise ValueError(f"missing from {root}: {program}")
        add(path)
    while queue:
        path = queue.pop()
        name = _module_name(root, path)
        if path.name.endswith("harness.py") and path.relative_to(root).is_relative_to(LABS):
            # a lab's harness runs in the worker beside graders/harnesses/ (libdir.py
            # copies it there), so its relative imports are that package's
            name = f"graders.harnesses.{path.relative_to(root / LABS).parts[0]}"
        for module in sorted(imported_modules(path, name)):
            if module.partition(".")[0] not in FIRST_PARTY:
                continue
            if module.endswith(".*"):
                folder = root.joinpath(*module[:-2].split("."))
                for each in sorted(folder.glob("*.py")):
                    add(each)
                continue
            target = _module_file(root, module)
            if target is not None:
                add(target)
            elif _module_file(root, module.rpartition(".")[0]) is None:
                raise ValueError(f"{path.relative_to(root)} imports {module}, which is not "
                                 f"in {root}")
    relative = sorted(path.relative_to(root) for path in files)
    leaked = sorted({part for part in HIDDEN for path in relative
                     if path == Path(part) or path.is_relative_to(part)}
                    | {str(path) for path in relative if lab_hidden(path)})
    if leaked:
        raise ValueError(f"the bundle would contain hidden parts: {', '.join(leaked)}")
    return relative


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
plot = {plot_dependencies}

[project.scripts]
pallas-lab = "graders.student.cli:main"

[tool.setuptools.packages.find]
include = ["pallas_sim*", "graders*"]

[tool.setuptools.package-data]
# the simulator's data files (pallas_sim/_src/chips.toml: the chips' numbers)
"pallas_sim" = ["**/*.toml"]
"""
#: The ``jax`` extra: CPU JAX of the version pallas_sim mirrors (as the repository's own).
JAX_DEPENDENCIES = ["jax>=0.10,<0.11", "jaxlib>=0.10,<0.11"]
#: The ``plot`` extra: ``pallas-lab profile --png`` draws with matplotlib (as the
#: repository's own ``plot`` extra).
PLOT_DEPENDENCIES = ["matplotlib>=3.7"]
DEPENDENCIES = ["numpy>=1.26", "ml_dtypes>=0.7", "hypothesis>=6.100", "rich>=13",
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
pallas-lab check assignments/{first}.py
pallas-lab check --task 4.1            # one task
pallas-lab status                      # the table over all assignments
```

To see your own kernels run on real JAX Pallas (on the CPU, in JAX's two
interpreters), install the extra once with `.venv/bin/pip install '.[jax]'`
and run `pallas-lab check --backend jax assignments/{first}.py`.

`check` runs the public checks in your own Python: the lecture's worked
answers and properties against plain math, on fresh random inputs each run.
Per task it prints `passed`, `failing` (with the smallest failing input,
expected and got) or `not started`. Passing them is a good sign, not the
grade: the course's grader runs more checks, in a separate process, on a
fixed set of inputs. In a notebook, cells that only display, plot or test are
set aside by the grader; `check` tells you when it sets aside an import.

## How fast would it be on a TPU?

```bash
pallas-lab profile assignments/{matmul}.py     # a3, a4, a5: the lecture's configurations
pallas-lab profile assignments/{matmul}.ipynb --function matmul \\
    --shapes 'bf16[4096,7168]' 'bf16[7168,18432]' --kw "block_shape=(1024, 1024, 1024)"
```

`profile` runs your wrapper and kernel on shapes only and predicts each pallas_call's
time, MFU, HBM utilisation, bound and VMEM on a v5e, v6e or v7 (`--chip`). With
`--png DIR` it also draws the first steps' timeline, the roofline point and, for
Splash, the block map; install the extra for that once: `.venv/bin/pip install '.[plot]'`.

## Submit

Submit `<stem>.py` or `<stem>.ipynb` under its original name. Work in one of them:
when both are there, the one whose code differs from the handout is graded (both
changed: the one saved last; on Gradescope, the one that changes more of the
handout). `check` and `status` check that same file and say which.
"""


def lab_hidden(relative: Path) -> bool:
    """Whether a repository-relative path is a lab's file that never ships: inside
    ``graders/labs/<stem>/`` and neither its record (``<stem>/__init__.py``) nor under its
    ``public/`` folder. Decided by the folder, whatever the file is called."""
    relative = Path(relative)
    if not relative.is_relative_to(LABS) or len(relative.parts) <= len(LABS.parts) + 1:
        return False  # graders/labs/__init__.py, or not a lab's
    inside = relative.parts[len(LABS.parts) + 1:]
    return inside != (LAB_RECORD,) and not (inside[0] == LAB_PUBLIC and len(inside) > 1)


def _copy(source: Path, target: Path) -> None:
    if source.is_dir():  # pragma: no cover - shipped_files lists files only
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
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
    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    dest = Path(dest).resolve()
    if dest == root.resolve() or any(dest.is_relative_to(root.resolve() / part)
                                     for part in ("pallas_sim", "graders", "assignments")):
        raise ValueError(f"{dest} would overwrite the repository's own files")
    shipped = shipped_files(root)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for part in shipped:
        _copy(root / part, dest / part)
    handouts = sorted(p for p in (root / "assignments").iterdir()
                      if p.suffix in (".py", ".ipynb") and not p.name.startswith((".", "_")))
    for path in handouts:
        _copy(path, dest / "assignments" / path.name)
    names = ", ".join(f"`{a.stem}`" for a in ASSIGNMENTS.values()
                      if (dest / "assignments" / f"{a.stem}.py").is_file())
    first = next(iter(ASSIGNMENTS.values())).stem  # the examples' handout: the first lab's
    matmul = ASSIGNMENTS["a3"].stem  # the profile example: the blocked matmul's handout
    (dest / "README.md").write_text(README.format(handouts=names, first=first,
                                                  matmul=matmul), encoding="utf-8")
    deps = "[" + ", ".join(f'"{d}"' for d in DEPENDENCIES) + "]"
    jax_deps = "[" + ", ".join(f'"{d}"' for d in JAX_DEPENDENCIES) + "]"
    plot_deps = "[" + ", ".join(f'"{d}"' for d in PLOT_DEPENDENCIES) + "]"
    (dest / "pyproject.toml").write_text(PYPROJECT.format(version=version, dependencies=deps,
                                                          jax_dependencies=jax_deps,
                                                          plot_dependencies=plot_deps),
                                         encoding="utf-8")
    leaked = [part for part in HIDDEN if (dest / part).exists()]
    if leaked:  # pragma: no cover - shipped_files refuses them first
        raise ValueError(f"the bundle would contain hidden parts: {', '.join(leaked)}")
    return dest
