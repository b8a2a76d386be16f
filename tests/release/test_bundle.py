"""The student bundle installs in a fresh virtual environment, checks, and hides the graders.

What ships is chosen by a rule (``graders.release.bundle.shipped_files``); these tests hold the
written bundle to it from outside: every shipped ``.py`` file imports only shipped files
(its AST, walked here independently of the rule) or declared dependencies, and the
installed commands run from a fresh virtual environment with relative paths.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import jupytext
import pytest

from graders.course.catalog import ASSIGNMENTS, Assignment, harness_files
from graders.release.bundle import (
    DEPENDENCIES,
    HIDDEN,
    JAX_DEPENDENCIES,
    LABS,
    PLOT_DEPENDENCIES,
    lab_hidden,
    shipped_files,
    write_bundle,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bundle_installs_and_checks_without_hidden_parts(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "bundle")
    for hidden in ("reference", "solutions", "graders/checking/framework.py",
                   "graders/checking/step_model.py", "graders/grading", "graders/batch",
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
    # the installed bundle knows the handouts (graders/student/handout_fingerprints.py):
    # a filled notebook beside the untouched .py is the file checked, and it says so
    both = tmp_path / "both"
    both.mkdir()
    shutil.copyfile(bundle / "assignments" / "a1_pallas_basics.py", both / "a1_pallas_basics.py")
    jupytext.write(jupytext.read(ROOT / "solutions" / "a1_pallas_basics.py"),
                   both / "a1_pallas_basics.ipynb")
    picked = subprocess.run([str(env_dir / "bin" / "pallas-lab"), "check", "--task", "1.1"],
                            cwd=both, capture_output=True, text=True, timeout=300, env=env)
    assert picked.returncode == 0, picked.stdout + picked.stderr
    assert ("graded a1_pallas_basics.ipynb (a1_pallas_basics.py is unchanged from the "
            "handout)") in picked.stdout
    probe = ("import importlib.util as u; print([m for m in ('reference', "
             "'graders.checking.framework', 'graders.grading', 'graders.batch', "
             "'graders.worker.client', 'solutions') if u.find_spec(m)])")
    absent = subprocess.run([str(python), "-c", probe], cwd=work, capture_output=True,
                            text=True, timeout=60, env=env)
    assert absent.stdout.strip() == "[]", absent.stdout + absent.stderr
    handout = subprocess.run([str(env_dir / "bin" / "pallas-lab"), "status"],
                             cwd=bundle, capture_output=True, text=True, timeout=300, env=env)
    assert handout.returncode == 0 and "a5 Splash Attention" in handout.stdout


#: Import names of the bundle's declared dependencies (``DEPENDENCIES``, the jax and plot
#: extras).
DECLARED = {"numpy", "ml_dtypes", "hypothesis", "rich", "nbformat", "RestrictedPython",
            "jax", "jaxlib", "matplotlib"}


def _resolves(bundle: Path, module: str) -> bool:
    base = bundle.joinpath(*module.split("."))
    return (base / "__init__.py").is_file() or base.with_suffix(".py").is_file()


def _imports(path: Path, bundle: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name) for every import in the file, relative ones made absolute;
    ``importlib.import_module(f"pkg.{x}")`` gives (line, "pkg", "*")."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parts = list(path.relative_to(bundle).with_suffix("").parts)
    package = parts[:-1]
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found += [(node.lineno, module, alias.name) for alias in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module"
              and node.args and isinstance(node.args[0], ast.JoinedStr)):
            head = node.args[0].values[0]
            if isinstance(head, ast.Constant) and str(head.value).endswith("."):
                found.append((node.lineno, str(head.value)[:-1], "*"))
    return found


def test_every_shipped_file_imports_only_shipped_files_or_declared_dependencies(
        tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "bundle")
    sources = sorted(p for p in bundle.rglob("*.py") if "assignments" not in p.parts)
    assert len(sources) > 40, sources
    declared = {d.split(">")[0].split("<")[0].split("=")[0]
                for d in (*DEPENDENCIES, *JAX_DEPENDENCIES, *PLOT_DEPENDENCIES)}
    assert {d.lower() for d in declared} == {d.lower() for d in DECLARED}
    problems = []
    for path in sources:
        where = path.relative_to(bundle)
        lab_harness = where.name.endswith("harness.py") and where.parts[:2] == ("graders", "labs")
        own = ".".join(where.parent.parts) + "."
        for line, module, name in _imports(path, bundle):
            if lab_harness and module.startswith(own):
                # runs in the worker beside graders/harnesses/ (libdir.py copies it there)
                module = "graders.harnesses." + module[len(own):]
            top = module.partition(".")[0]
            if top in ("pallas_sim", "graders"):
                whole = f"{module}.{name}" if name not in (None, "*") else module
                if not (_resolves(bundle, whole) or _resolves(bundle, module)):
                    problems.append(f"{where}:{line} imports {whole}, which is not shipped")
            elif top in ("reference", "solutions", "tests", "examples"):
                problems.append(f"{where}:{line} imports {module}, which never ships")
            elif top not in sys.stdlib_module_names and top not in DECLARED and top:
                problems.append(f"{where}:{line} imports {module}, not a declared dependency")
    assert not problems, "\n".join(problems)
    for hidden in HIDDEN:
        assert not (bundle / hidden).exists(), f"the bundle ships {hidden}"


@pytest.mark.parametrize("lab", ASSIGNMENTS.values(), ids=lambda a: a.id)
def test_of_a_lab_only_its_record_and_its_public_folder_ship(lab: Assignment) -> None:
    """The folder decides: every file under ``graders/labs/<stem>/public/`` and the record
    ship, nothing under ``hidden/`` (the hidden checks, the grader's harness) does."""
    folder = LABS / lab.stem
    shipped = {path for path in shipped_files(ROOT) if path.is_relative_to(folder)}
    public = {path.relative_to(ROOT) for path in (ROOT / folder / "public").rglob("*.py")
              if "__pycache__" not in path.parts}
    hidden = {path.relative_to(ROOT) for path in (ROOT / folder / "hidden").rglob("*.py")}
    assert public and hidden, f"{folder} has a public/ and a hidden/ folder"
    assert shipped == public | {folder / "__init__.py"}, sorted(map(str, shipped))
    assert (ROOT / folder / "hidden" / "harness.py").is_file() == (
        f"{lab.id}" in harness_files()), "the grader's harness is the lab's hidden/harness.py"
    assert not shipped & hidden


@pytest.mark.parametrize(("path", "hidden"), [
    ("graders/labs/__init__.py", False),
    ("graders/labs/a9_new/__init__.py", False),
    ("graders/labs/a9_new/public/public_checks.py", False),
    ("graders/labs/a9_new/public/public_checks/kernel.py", False),
    ("graders/labs/a9_new/public/anything_else.py", False),
    ("graders/labs/a9_new/hidden/checks.py", True),
    ("graders/labs/a9_new/hidden/public_checks.py", True),  # the folder decides, not the name
    ("graders/labs/a9_new/hidden/checks/common.py", True),
    ("graders/labs/a9_new/checks.py", True),  # beside the record: never shipped
    ("graders/labs/a9_new/public", True),  # a file called public, not the folder
    ("graders/student/cli.py", False),
])
def test_the_folder_decides_whether_a_lab_file_ships(path: str, hidden: bool) -> None:
    assert lab_hidden(Path(path)) is hidden


def test_a_public_file_that_imports_a_hidden_one_is_refused(tmp_path: Path) -> None:
    """The rule follows imports; one from ``public/`` into ``hidden/`` stops the bundle."""
    files = {
        "pallas_sim/__init__.py": "",
        "graders/__init__.py": "",
        "graders/student/__init__.py": "",
        "graders/labs/__init__.py": "",
        "graders/fidelity/__init__.py": "",
        "graders/fidelity/run.py": "",
        "graders/labs/a9_new/__init__.py": "",
        "graders/labs/a9_new/public/__init__.py": "",
        "graders/labs/a9_new/public/public_checks.py":
            "from graders.labs.a9_new.hidden import checks\n",
        "graders/labs/a9_new/hidden/__init__.py": "",
        "graders/labs/a9_new/hidden/checks.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="hidden parts: graders/labs/a9_new/hidden"):
        shipped_files(tmp_path)
    (tmp_path / "graders/labs/a9_new/public/public_checks.py").write_text("", encoding="utf-8")
    assert Path("graders/labs/a9_new/hidden/checks.py") not in shipped_files(tmp_path)


@pytest.mark.slow
def test_the_installed_commands_run_with_relative_paths_and_without_the_jax_extra(
        tmp_path: Path) -> None:
    """``pallas-lab check FILE``, ``status``, ``profile`` on a handout notebook and
    ``check --backend jax`` from a fresh venv without the jax extra (one line, exit 2);
    with the extra it is tests/fidelity/test_check_backend.py's bundle test."""
    bundle = write_bundle(tmp_path / "bundle")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    install = subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install",
                              "--quiet", "."], cwd=bundle, capture_output=True, text=True,
                             timeout=600)
    assert install.returncode == 0, install.stderr
    env = {"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "COLUMNS": "200",
           "HOME": str(tmp_path)}
    lab = str(env_dir / "bin" / "pallas-lab")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([lab, *args], cwd=bundle, capture_output=True, text=True,
                              timeout=300, env=env)

    check = run("check", "assignments/a2_pipelining.py", "--task", "2.1")
    assert check.returncode == 1 and "Task 2.1" in check.stdout, check.stdout + check.stderr
    assert "not started" in check.stdout, check.stdout
    status = run("status", "assignments")
    assert status.returncode == 0 and "a4 Flash Attention" in status.stdout, status.stdout
    jax = run("check", "--backend", "jax", "assignments/a1_pallas_basics.py")
    assert jax.returncode == 2, jax.stdout + jax.stderr
    assert jax.stdout == "" and jax.stderr.count("\n") == 1, jax.stderr
    assert "--backend jax needs JAX" in jax.stderr and "Traceback" not in jax.stderr
    profile = run("profile", "assignments/a3_matmul.ipynb")
    assert profile.returncode == 1 and "Traceback" not in profile.stderr, (
        profile.stdout + profile.stderr)
    assert "== matmul 512³ blocks (§4.2) on v7" in profile.stdout, profile.stdout
    assert "NotImplementedError: Need to implement for Task 3.2" in profile.stdout


def test_the_unpacked_bundle_profiles_a_notebook_with_its_own_pallas_lab(tmp_path: Path) -> None:
    """The student guide sends students to ``pallas-lab profile``, but the bundle's
    ``pallas-lab`` (``graders.student.cli:main``) had only ``check`` and ``status``:
    "invalid choice: 'profile'". Now it profiles a notebook from the unpacked bundle, its
    modules the bundle's own (not the repository's), with nothing hidden shipped."""
    bundle = write_bundle(tmp_path / "bundle")
    for part in ("graders/student/kernel_profile.py", "graders/student/profile_runs.py",
                 "graders/student/profile_text.py", "graders/student/profile_pictures.py"):
        assert (bundle / part).is_file(), f"the bundle lacks {part}"
    for hidden in HIDDEN:
        assert not (bundle / hidden).exists(), f"the bundle ships {hidden}"
    jupytext.write(jupytext.read(ROOT / "solutions" / "a3_matmul.py"),
                   bundle / "a3_matmul.ipynb")
    # python -S with the bundle and this interpreter's site-packages on the path: the
    # installed packages import, but no .pth file runs, so the repository's own editable
    # install cannot lend the bundle a module it does not ship
    packages = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join([str(bundle), *sorted(packages)]),
           "COLUMNS": "200", "HOME": str(tmp_path), "NO_COLOR": "1"}
    python = [sys.executable, "-S"]
    probe = ("import graders.student.kernel_profile as k, importlib.util as u; print(k.__file__);"
             " print([m for m in ('graders.grading', 'graders.checking.framework', "
             "'graders.reports') if u.find_spec(m)])")
    where = subprocess.run([*python, "-c", probe], cwd=bundle, env=env,
                           capture_output=True, text=True, timeout=120)
    assert where.returncode == 0, where.stderr
    assert where.stdout.splitlines() == [str(bundle / "graders/student/kernel_profile.py"),
                                         "[]"], where.stdout
    run = subprocess.run([*python, "-m", "graders.student.cli", "profile",
                          "a3_matmul.ipynb", "--function", "matmul", "--shapes",
                          "bf16[1024,1024]", "bf16[1024,1024]", "--kw",
                          "block_shape=(512, 512, 512)"],
                         cwd=bundle, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "== matmul(bf16[1024,1024], bf16[1024,1024], block_shape=(512, 512, 512))" \
        in run.stdout and "roofline:" in run.stdout and "MXU |" in run.stdout, run.stdout
    helped = subprocess.run([*python, "-m", "graders.student.cli", "--help"],
                            cwd=bundle, env=env, capture_output=True, text=True, timeout=120)
    assert "profile" in helped.stdout, helped.stdout


def test_the_bundle_asks_for_at_least_the_repository_s_minimum_of_each_package() -> None:
    # Found in review: the bundle asked for ml_dtypes>=0.4 while pallas_sim needs 0.7
    # (bfloat16 * a Python float stays bfloat16 only from 0.7 on: with an older one a
    # student's self-check would disagree with the grade).
    import tomllib

    from packaging.requirements import Requirement
    from packaging.version import Version

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    ours = {r.name: r for r in map(Requirement, project["dependencies"])}
    for line in DEPENDENCIES:
        theirs = Requirement(line)
        if theirs.name not in ours:
            continue
        floors = [Version(s.version) for s in ours[theirs.name].specifier if s.operator == ">="]
        for floor in floors:
            assert theirs.specifier.contains(str(floor)) and not any(
                s.operator == ">=" and Version(s.version) < floor for s in theirs.specifier), (
                f"the bundle asks for {line}; the repository needs {ours[theirs.name]}")
