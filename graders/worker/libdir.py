"""What a worker process may import and how it is started: its private library directory,
the base interpreter, the scrubbed environment (docs/grading-design.md, "Trusted and untrusted
code"; docs/security.md, "Sandbox levels").

Shared by the exec'd workers (``graders.worker.client``) and the batch's zygote
(``graders.worker.zygote``), which must give a forked worker exactly what an exec'd one
gets.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import site
import sys
import sysconfig
from pathlib import Path

WORKER_DIR = Path(__file__).resolve().parent
HARNESS_DIR = WORKER_DIR.parent / "harnesses"
POLICY_DIR = WORKER_DIR / "policy"

_PASSED_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def _package_dir(name: str) -> Path | None:
    """Directory of an importable package, without importing it (None when absent)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def build_libdir(libdir: Path, *, mount_points: bool = False) -> list[tuple[str, str]]:
    """Fill ``libdir`` with what the worker may import; returns the bind mounts it needs.

    The numpy, ml_dtypes and pallas_sim package directories (and their
    ``<name>.libs`` siblings holding vendored shared libraries) become
    symlinks, or with ``mount_points=True`` (the namespace sandbox, whose
    root holds none of the targets) empty directories to bind-mount the
    packages on; the returned ``(host package dir, libdir entry)`` pairs are
    those mounts (empty without ``mount_points``). The worker program
    (``pallas_lab_worker.py``), the protocol (``pallas_lab_protocol.py``) and
    ``graders/harnesses/`` (as the package ``pallas_lab_harnesses``; an empty
    package when it does not exist yet) are copied, with each lab's ``harness.py``
    as ``pallas_lab_harnesses/<assignment id>.py``. Raises ``RuntimeError``
    when numpy, ml_dtypes, RestrictedPython or pallas_sim cannot be found
    (a worker without the simulator would run a submission untraced).
    """
    libdir.mkdir(parents=True, exist_ok=True)
    binds: list[tuple[str, str]] = []
    for name in ("numpy", "ml_dtypes", "RestrictedPython", "pallas_sim"):
        package = _package_dir(name)
        if package is None:
            raise RuntimeError(f"cannot find the {name} package to give to the worker")
        libs = package.parent / f"{name}.libs"
        for source, entry in ((package, libdir / name), (libs, libdir / libs.name)):
            if not source.is_dir():
                continue
            if mount_points:
                entry.mkdir()
                binds.append((str(source.resolve()), str(entry)))
            else:
                entry.symlink_to(source, target_is_directory=True)
    shutil.copyfile(WORKER_DIR / "main.py", libdir / "pallas_lab_worker.py")
    shutil.copyfile(WORKER_DIR / "protocol.py", libdir / "pallas_lab_protocol.py")
    shutil.copytree(POLICY_DIR, libdir / "pallas_lab_policy",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    harnesses = libdir / "pallas_lab_harnesses"
    if HARNESS_DIR.is_dir():
        shutil.copytree(
            HARNESS_DIR, harnesses, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    else:
        harnesses.mkdir()
    (harnesses / "__init__.py").touch()
    from graders.course.catalog import harness_files  # the labs' harness.py files

    for assignment_id, path in harness_files().items():
        shutil.copyfile(path, harnesses / f"{assignment_id}.py")
    return binds


def interpreter() -> tuple[str, str]:
    """The base interpreter's real path and its installation prefix (outside any venv).

    The sandbox runs the worker with the base interpreter (``-I -S``: no venv,
    no site-packages), so only its prefix has to be visible inside.
    """
    base = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(base), os.path.realpath(sys.base_prefix)


def site_package_dirs() -> list[str]:
    """Every site-packages/dist-packages directory of this interpreter (hidden in the sandbox)."""
    found = set(site.getsitepackages([sys.base_prefix, sys.prefix]))
    for key in ("purelib", "platlib"):
        for base in (sys.base_prefix, sys.prefix):
            found.add(sysconfig.get_path(key, vars={"base": base, "platbase": base}))
    return sorted(os.path.realpath(path) for path in found if os.path.isdir(path))


def worker_env(workdir: Path) -> dict[str, str]:
    """The scrubbed environment of the worker (nothing else from the grader's)."""
    env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(workdir),
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    for name in _PASSED_ENV:
        if name in os.environ:
            env[name] = os.environ[name]
    return env
