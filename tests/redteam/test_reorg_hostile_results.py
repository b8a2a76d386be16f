"""Red-team pass after the reorganisation: a results folder holding a results.json that
pallas-lab did not write (a copied, edited or damaged batch folder; a planted file).

``graders.batch.store.read_result`` promises None for "not one pallas-lab wrote with its
record ... or cannot be read", and every reader of a batch folder relies on it: the
batch's resume rule (``is_current``, before anything is graded), ``read_results`` (the
table, the class report) and ``pallas-lab leaderboard``. A field of the wrong type outside
its ``try`` (``extra_data.pallas_lab.file`` a number, ``execution_time`` a list) raises
instead: ``pallas-lab leaderboard`` and ``pallas-lab grade --jobs`` with that ``--out``
end in a Python traceback (exit 1) rather than a usage error or a skipped file.

These tests failed before ``read_result`` checked every field (graders/batch/store.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graders.batch.store import read_result

REPO = Path(__file__).resolve().parents[2]


def _document(**fields: object) -> dict:
    record = {"checks": [], "sha256": "0" * 64, **fields.pop("record", {})}
    return {"score": 0, "tests": [], "extra_data": {"pallas_lab": record}, **fields}


HOSTILE = {
    "file is a number": _document(record={"file": 5}),
    "file is a list": _document(record={"file": ["x"]}),
    "execution_time is a list": _document(execution_time=[1]),
    "extra_data.sandbox is null": {**_document(), "extra_data": {
        "pallas_lab": {"checks": [], "sha256": "0" * 64}, "sandbox": None}},
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_read_result_returns_none_for_a_results_json_it_did_not_write(
        tmp_path: Path, case: str) -> None:
    path = tmp_path / "eve" / "a3_matmul" / "results.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(HOSTILE[case]), encoding="utf-8")
    try:
        result = read_result(path)
    except Exception as exc:  # noqa: BLE001 - the finding
        pytest.fail(f"{case}: read_result raised {type(exc).__name__}: {exc}")
    if result is not None:  # accepted: then it must be usable
        assert isinstance(result.file, str) and isinstance(result.sandbox, str), case


def test_leaderboard_on_a_damaged_results_folder_says_so_without_a_traceback(
        tmp_path: Path) -> None:
    path = tmp_path / "results" / "eve" / "a3_matmul" / "results.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(HOSTILE["file is a number"]), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    run = subprocess.run([sys.executable, "-m", "graders.cli.main", "leaderboard",
                          str(tmp_path / "results")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert "Traceback" not in run.stderr and run.returncode in (0, 2), (
        f"exit {run.returncode}\n{run.stderr[-1500:]}")
