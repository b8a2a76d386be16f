"""Generate the student handouts in ``assignments/`` from ``solutions/``.

``pallas-lab release`` calls :func:`main`: for each ``solutions/<stem>.py`` it writes
``assignments/<stem>.py`` (:func:`graders.release.handout.render_handout`: every solution
region becomes a ``NotImplementedError`` stub naming its task; the marker convention
is in :mod:`graders.release.handout`) and ``assignments/<stem>.ipynb``, the notebook form of
the handout with nbgrader cell metadata (:mod:`graders.release.notebook`), and with
``--bundle DIR`` the student bundle (:mod:`graders.release.bundle`).

The names of :mod:`graders.release.handout` are re-exported here for the callers that know
them as ``graders.release.handouts.render_handout`` and so on.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from graders.release.handout import (
    BEGIN_MARKER,
    END_MARKER,
    JUPYTEXT_FORMAT,
    STUB_TEMPLATE,
    ReleaseError,
    SolutionRegion,
    find_solution_regions,
    render_handout,
)
from graders.release.notebook import handout_notebook, notebook_text

__all__ = ["BEGIN_MARKER", "END_MARKER", "JUPYTEXT_FORMAT", "STUB_TEMPLATE", "ReleaseError",
           "SolutionRegion", "find_solution_regions", "main", "render_handout"]


def _default_root() -> Path:
    package_root = Path(__file__).resolve().parents[2]
    if (package_root / "solutions").is_dir():
        return package_root
    return Path.cwd()


def _solution_files(solutions: Path, stems: Sequence[str]) -> list[Path]:
    if stems:
        files = [solutions / f"{stem.removesuffix('.py')}.py" for stem in stems]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise ReleaseError(f"no such solution file: {', '.join(missing)}")
        return files
    return sorted(p for p in solutions.glob("*.py") if not p.name.startswith("_"))


def _render_all(root: Path, stems: Sequence[str]) -> dict[str, dict[str, str]]:
    """Per stem, the handout texts by suffix (".py" and ".ipynb")."""
    rendered: dict[str, dict[str, str]] = {}
    for path in _solution_files(root / "solutions", stems):
        source = path.read_text(encoding="utf-8")
        try:
            rendered[path.stem] = {
                ".py": render_handout(source),
                ".ipynb": notebook_text(handout_notebook(source)),
            }
        except ReleaseError as error:
            raise ReleaseError(f"{path.relative_to(root)}: {error}") from None
    return rendered


def _atomic_write(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.tmp")
    temporary.write_text(text, encoding="utf-8", newline="\n")
    temporary.replace(target)


#: Where the handouts' code is recorded for the rule of which file is graded
#: (``graders.student.which_file``), relative to the repository.
FINGERPRINTS = Path("graders/student/handout_fingerprints.py")


def _fingerprints(root: Path, *, check: bool) -> list[Path]:
    """Write (or with ``check`` only compare) ``FINGERPRINTS`` from ``root/assignments``;
    returns ``[its path]`` when it was stale, else []."""
    from graders.student.which_file import fingerprints_text

    target = root / FINGERPRINTS
    if not (root / "assignments").is_dir():
        return []
    text = fingerprints_text(root / "assignments")
    current = target.read_text(encoding="utf-8") if target.is_file() else None
    if current == text:
        print(f"up to date  {FINGERPRINTS}")
        return []
    if check:
        print(f"{'stale' if current is not None else 'missing':<11} {FINGERPRINTS}")
    else:
        _atomic_write(target, text)
        print(f"wrote       {FINGERPRINTS}")
    return [target]


def main(argv: Sequence[str] | None = None) -> int:
    """Regenerate ``assignments/<stem>.py`` and ``<stem>.ipynb`` from ``solutions/<stem>.py``,
    and the record of their code that decides which file is graded (``FINGERPRINTS``).

    ``--bundle DIR`` then writes the student bundle (``graders.release.bundle``).
    Returns 0 on success, 1 when ``--check`` finds a missing or stale handout,
    2 when a solution file cannot be released (or nbgrader, needed for the
    notebooks, is not installed).
    """
    parser = argparse.ArgumentParser(
        prog="pallas-lab release",
        description="Regenerate the student handouts in assignments/ from solutions/ "
                    "(<stem>.py and <stem>.ipynb with nbgrader cell metadata): every "
                    "solution region becomes a NotImplementedError stub naming its task.")
    parser.add_argument("stems", nargs="*", metavar="STEM",
                        help="release only these assignments (default: every solutions/*.py)")
    parser.add_argument("--root", type=Path, default=None,
                        help="repository root holding solutions/ and assignments/ "
                             "(default: the checkout this command belongs to, "
                             "else the current directory)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a handout is missing or out of date")
    parser.add_argument("--bundle", type=Path, default=None, metavar="DIR",
                        help="also write the student bundle to DIR: pallas_sim, the handouts, "
                             "the public checks and a student README (no reference, no "
                             "solutions, no hidden checks)")
    args = parser.parse_args(argv)

    root = args.root if args.root is not None else _default_root()
    solutions, assignments = root / "solutions", root / "assignments"
    if not solutions.is_dir():
        print(f"pallas-lab release: no solutions/ folder under {root}", file=sys.stderr)
        return 2
    try:
        rendered = _render_all(root, args.stems)
    except (ReleaseError, ImportError) as error:
        print(f"pallas-lab release: {error}", file=sys.stderr)
        return 2

    stale = []
    for stem, texts in rendered.items():
        for suffix, text in texts.items():
            target = assignments / f"{stem}{suffix}"
            current = target.read_text(encoding="utf-8") if target.is_file() else None
            if current == text:
                print(f"up to date  {target.relative_to(root)}")
                continue
            stale.append(target)
            if args.check:
                print(f"{'stale' if current is not None else 'missing':<11} "
                      f"{target.relative_to(root)}")
                continue
            _atomic_write(target, text)
            print(f"wrote       {target.relative_to(root)}")
    stale += _fingerprints(root, check=args.check)
    if args.check and stale:
        print("run `pallas-lab release` to regenerate the handouts", file=sys.stderr)
        return 1
    if args.bundle is not None:
        from graders.release.bundle import write_bundle

        try:
            written = write_bundle(args.bundle, root=root)
        except (OSError, ValueError) as error:
            print(f"pallas-lab release: cannot write the bundle: {error}", file=sys.stderr)
            return 2
        print(f"wrote the student bundle {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
