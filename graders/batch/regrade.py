"""Regrades that were stopped: what a batch folder remembers of them, so that the same
command finishes one and any other batch says what it left.

Every results.json a batch writes carries a stamp (``batch_stamp``): the grading code's
fingerprint (``graders.batch.fingerprint``), the versions of Python and of the libraries
a grade depends on, the call timeout, the file budget, the forced sandbox level and which
tasks ran under them (all, or a ``--task`` selection). A
result is *equivalent* to what a regrade would make when it was made from the file's
present content (its SHA-256) under the same stamp: grading is deterministic, so grading
it again gives the same result.

A regrade (``--force``, ``--task``, ``--student``) writes its options, files and stamp to
``REGRADE_MARK`` in the batch folder when it starts and removes them when it ends. Run
again with the same options, files and stamp, it resumes: only the files without an
equivalent result are graded: a regrade has an id, carried by the results it writes, so
a result counts as regraded only when that very regrade made it (one made earlier under
the same code may have depended on the machine's load). Another batch in the same folder
leaves the mark alone and notes, in the gradebook and on the terminal, the files a stopped
regrade has not reached.
Nothing here depends on file times, so a copied results folder resumes the same way.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from graders.batch.fingerprint import grader_fingerprint, runtime_versions
from graders.batch.schedule import is_current
from graders.batch.store import MAX_RESULT_BYTES, RECORD, result_path
from graders.grading.submission import Submission
from graders.reports.files import atomic_write_text
from graders.safety import submission_files

#: The batch folder's file of stopped regrades.
REGRADE_MARK = ".pallas-lab-regrade.json"


def batch_stamp(timeout: float, budget: float | None) -> dict[str, Any]:
    """The stamp of a batch's results (``tasks`` None: every task ran): the grading code's
    fingerprint, Python's and ``graders.batch.fingerprint.RUNTIME``'s versions, the options."""
    from graders.worker.sandbox import ENV_VAR

    return {"grader": grader_fingerprint(), "runtime": runtime_versions(), "timeout": timeout,
            "budget": budget, "sandbox": os.environ.get(ENV_VAR, "").strip().lower(),
            "tasks": None}


def stamp_at(path: Path) -> dict[str, Any] | None:
    """The stamp of the results.json at ``path``, or None (none, unreadable, not ours)."""
    data = submission_files.read_json(path, MAX_RESULT_BYTES)
    try:
        stamp = data["extra_data"][RECORD]["stamp"]
    except (KeyError, TypeError):
        return None
    return stamp if isinstance(stamp, dict) else None


def merged_stamp(previous: dict[str, Any] | None, fresh: dict[str, Any],
                 tasks: Collection[str]) -> dict[str, Any]:
    """The stamp of a result whose ``tasks`` were re-run under ``fresh`` and merged into a
    result stamped ``previous``: the tasks of both when the rest of the stamps agree, else
    ``tasks`` alone."""
    same = previous is not None and all(previous.get(k) == fresh[k] for k in fresh
                                        if k not in ("tasks", "regrade"))
    if same and previous.get("tasks") is None:
        return {**fresh, "tasks": None}
    before = set(previous.get("tasks") or ()) if same else set()
    return {**fresh, "tasks": sorted(before | set(tasks))}


def equivalent(stamp: dict[str, Any] | None, batch: dict[str, Any],
               tasks: Collection[str] | None) -> bool:
    """Whether a result stamped ``stamp`` is what ``batch``'s stamp would make of ``tasks``
    (None: all of them)."""
    if stamp is None or any(stamp.get(k) != batch[k] for k in batch if k != "tasks"):
        return False
    if stamp.get("tasks") is None:
        return True
    return tasks is not None and set(tasks) <= set(stamp.get("tasks") or ())


def regraded(out: Path, sub: Submission, batch: dict[str, Any],
             tasks: Collection[str] | None) -> bool:
    """Whether ``sub`` has a result of its present content equivalent to what ``batch``
    would make of ``tasks``."""
    path = result_path(out, sub.student, sub.stem)
    return is_current(out, sub) and equivalent(stamp_at(path), batch, tasks)


def _entry(submissions: Sequence[Submission], force: bool, tasks: Collection[str] | None,
           batch: dict[str, Any]) -> dict[str, Any]:
    return {"force": force, "tasks": sorted(tasks) if tasks else None,
            "files": sorted([sub.student, sub.stem] for sub in submissions), "stamp": batch}


def _entries(out: Path) -> list[dict[str, Any]]:
    data = submission_files.read_json(out / REGRADE_MARK, MAX_RESULT_BYTES)
    regrades = data.get("regrades") if isinstance(data, dict) else None
    return [e for e in regrades if isinstance(e, dict)] if isinstance(regrades, list) else []


def _write(out: Path, entries: list[dict[str, Any]]) -> None:
    mark = out / REGRADE_MARK
    if entries:
        atomic_write_text(mark, json.dumps({"regrades": entries}))
    else:
        mark.unlink(missing_ok=True)


def _same(stored: dict[str, Any], entry: dict[str, Any]) -> bool:
    """Whether a recorded regrade is ``entry`` (its id aside)."""
    return {k: v for k, v in stored.items() if k != "id"} == entry


def open_regrade(out: Path, submissions: Sequence[Submission], *, force: bool,
                 tasks: Collection[str] | None, batch: dict[str, Any]) -> bool:
    """Record a regrade of ``submissions`` (``force`` or ``tasks``) under the stamp
    ``batch``, with an id of its own (``regrade_stamp``); True when the same regrade was
    stopped before (then it resumes)."""
    entry = _entry(submissions, force, tasks, batch)
    entries = _entries(out)
    if any(_same(e, entry) for e in entries):
        return True
    _write(out, [*entries, {**entry, "id": secrets.token_hex(8)}])
    return False


def regrade_stamp(out: Path, submissions: Sequence[Submission], *, force: bool,
                  tasks: Collection[str] | None, batch: dict[str, Any]) -> dict[str, Any]:
    """The stamp of the results the open regrade of ``submissions`` writes: ``batch`` with
    the regrade's id, so that a resumed regrade counts as done only the files it regraded
    itself before it was stopped. A result made earlier under the same code and options is
    not enough (a red team: an interrupted --force then regraded no one, and a TA forces
    a regrade precisely for results that depended on the machine's load: a timeout, a
    worker killed for memory)."""
    entry = _entry(submissions, force, tasks, batch)
    found = next((e for e in _entries(out) if _same(e, entry)), None)
    return {**batch, "regrade": found["id"]} if found and "id" in found else dict(batch)


def close_regrade(out: Path, submissions: Sequence[Submission], *, force: bool,
                  tasks: Collection[str] | None, batch: dict[str, Any]) -> None:
    """The regrade went through to its end: it is no longer remembered."""
    entry = _entry(submissions, force, tasks, batch)
    entries = _entries(out)
    if any(_same(e, entry) for e in entries):
        _write(out, [e for e in entries if not _same(e, entry)])


def left_by_stopped_regrades(out: Path, submissions: Sequence[Submission]
                             ) -> set[tuple[str, str]]:
    """(student, stem) of ``submissions`` that a stopped regrade recorded in ``out`` has not
    reached (no result equivalent to what it would make)."""
    by_key = {(sub.student, sub.stem): sub for sub in submissions}
    left: set[tuple[str, str]] = set()
    for entry in _entries(out):
        stamp, tasks = entry.get("stamp"), entry.get("tasks")
        if isinstance(stamp, dict) and isinstance(entry.get("id"), str):
            stamp = {**stamp, "regrade": entry["id"]}  # what that regrade stamps
        files = entry.get("files")
        if not isinstance(stamp, dict) or not isinstance(files, list):
            continue
        for item in files:
            key = tuple(item) if isinstance(item, list) and len(item) == 2 else None
            sub = by_key.get(key)  # type: ignore[arg-type]
            if sub is not None and key not in left and not regraded(out, sub, stamp, tasks):
                left.add(key)  # type: ignore[arg-type]
    return left
