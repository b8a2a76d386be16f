"""Which grading code a result was made by: a fingerprint of the packages that decide a
grade, read from disk without importing them (standard library only: a Dask worker
process uses it too)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

#: The packages whose files decide a grade: the grader and its labs, the reference, the
#: simulator (its chip table sets the speed tasks' thresholds).
GRADING_PACKAGES = ("graders", "reference", "pallas_sim")
#: Where this install keeps them: side by side, in the repository (an editable install) or
#: in site-packages (a wheel), beside this very ``graders`` package.
INSTALL_ROOT = Path(__file__).resolve().parents[2]


def grader_fingerprint(root: Path = INSTALL_ROOT) -> str:
    """SHA-256 over every file of ``GRADING_PACKAGES`` under ``root`` (source and data, not
    ``__pycache__``), by path relative to ``root`` and content. About 50 ms. Found beside
    this package, never through ``sys.path``, which a test runner or a working directory
    may point at other folders of the same names."""
    digest = hashlib.sha256()
    for name in GRADING_PACKAGES:
        package = root / name
        if not package.is_dir():
            continue
        for path in sorted(package.rglob("*")):
            if "__pycache__" in path.parts or path.suffix == ".pyc" or not path.is_file():
                continue
            digest.update(str(path.relative_to(root)).encode("utf-8", "surrogateescape"))
            digest.update(b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


#: The installed distributions besides the grading code whose versions a result depends on.
RUNTIME = ("numpy", "ml_dtypes", "hypothesis", "RestrictedPython")


def runtime_versions() -> dict[str, str]:
    """Python's version and each of ``RUNTIME``'s ("" when not installed)."""
    import platform
    from importlib import metadata

    versions = {"python": platform.python_version()}
    for name in RUNTIME:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = ""
    return versions


def grading_identity(grader: str, runtime: dict[str, str]) -> str:
    """One string for "this grading code on this runtime" (compared between the batch's
    machine and a Dask worker)."""
    text = json.dumps({"grader": grader, "runtime": runtime}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
