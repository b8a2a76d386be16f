"""Red-team pass after the reorganisation: the ``Submission`` record, hashed once at
discovery, and what is graded later.

``Submission.of`` hashes the file when discovery runs; ``grade_submission`` reads the file
again when its turn comes (the static check, then the worker's snapshot,
``graders.worker.client.Worker``), and records the *record's* SHA-256 in the result. A
file changed in between (a batch of a class grades the last files many minutes after
discovery) is graded from its new bytes and stored under the old bytes' digest, so:

* the results.json says "made from content A" while its points are content B's;
* the batch's resume rule (``graders.batch.schedule.is_current``) then keeps B's points
  for a file that holds A again (a student who swaps a copied file in for the grading
  window and back keeps its score, and the similarity check reads A).

This failed before the session read the file once and the result recorded the digest
of those bytes (``Session.file_sha256``).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from graders.batch.schedule import is_current
from graders.batch.store import result_path, write_result
from graders.course.catalog import assignment_for_stem
from graders.grading.grade import grade_submission
from graders.grading.submission import Submission

REPO = Path(__file__).resolve().parents[2]
STEM = "a1_pallas_basics"


def test_a_file_changed_after_discovery_is_not_graded_under_the_old_digest(
        tmp_path: Path) -> None:
    file = tmp_path / "mallory" / f"{STEM}.py"
    file.parent.mkdir()
    shutil.copyfile(REPO / "assignments" / f"{STEM}.py", file)  # the handout: 0 points
    info = assignment_for_stem(STEM)
    assert info is not None
    sub = Submission.of(file, info)  # discovery: the handout's digest
    handout_digest = sub.sha256
    shutil.copyfile(REPO / "solutions" / f"{STEM}.py", file)  # swapped in before grading
    result = grade_submission(sub, timeout=5)
    graded = hashlib.sha256(file.read_bytes()).hexdigest()
    # Either the grader notices that the file is not the one discovered (and grades
    # nothing), or the result says which content it graded.
    assert result.score == 0 or result.sha256 == graded, (
        f"scored {result.score} for the solution's bytes but recorded the handout's "
        f"digest {result.sha256[:12]} (graded {graded[:12]})")

    # The consequence for a resumed batch: the file holds the handout again, and the
    # result of the solution is "current" for it.
    out = tmp_path / "results"
    write_result(result, result_path(out, sub.student, sub.stem))
    shutil.copyfile(REPO / "assignments" / f"{STEM}.py", file)
    again = Submission.of(file, info, student=sub.student)
    assert again.sha256 == handout_digest
    assert not (is_current(out, again) and result.score > 0), (
        "a resumed batch keeps the solution's points for the handout")
