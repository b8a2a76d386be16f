"""A class folder made of the bundled samples, and a batch's results read back, for the
batch tests (test_batch_schedule.py, test_batch_grader_death.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "examples" / "submissions"


def make_class(root: Path, students: dict[str, tuple[str, tuple[str, ...]]]) -> Path:
    """``students``: name -> (the sample folder to copy from, the stems to copy)."""
    for name, (sample, stems) in students.items():
        (root / name).mkdir(parents=True)
        for stem in stems:
            shutil.copyfile(SAMPLES / sample / f"{stem}.py", root / name / f"{stem}.py")
    return root


def results_without_timing(out: Path) -> dict[str, dict]:
    """Every results.json under ``out`` without its timing, by relative path: the grading's
    own time, and the submission time stored with a result (the file's modification time,
    which differs between two copies of a class)."""
    found = {}
    for path in sorted(out.glob("*/*/results.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        data.pop("execution_time", None)
        submitted = data.get("extra_data", {}).get("pallas_lab", {}).get("submitted")
        if isinstance(submitted, dict):
            submitted.pop("time", None)
        found[str(path.relative_to(out))] = data
    return found
