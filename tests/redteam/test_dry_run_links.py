"""``pallas-lab gradescope dry-run`` copies a submission as Gradescope receives it
(docs/security.md, "nbgrader and Gradescope").

Before the fix the dry run copied the submission following links, so a link to any
file the TA can read (here: a stand-in for the solutions) was graded as the student's
file and quoted in results.json; the real Gradescope run refuses links
(``graders.grading.grade``: "is a symbolic link"). A stand-in autograder zip whose
``run_autograder`` only records what its ``submission/`` folder holds shows what the
dry run hands to the zip, in a second; the real zip's refusal is tested in
``tests/integrations/test_gradescope_autograder.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STEM = "a1_pallas_basics"
SECRET = "TA-ONLY: the intended pallas_call of every wrapper task\n"
#: run_autograder of the stand-in zip: results.json lists submission/'s entries, each as
#: "link", "folder" or its first bytes, and the blocks each file uses on disk.
RECORDER = """#!/usr/bin/env python3
import json, os
root = os.environ["AUTOGRADER_ROOT"]
sub = os.path.join(root, "submission")
found = {}
for folder, dirs, files in os.walk(sub):
    for name in dirs + files:
        path = os.path.join(folder, name)
        rel = os.path.relpath(path, sub)
        if os.path.islink(path):
            found[rel] = "link"
        elif os.path.isdir(path):
            found[rel] = "folder"
        else:
            info = os.stat(path)
            with open(path, "rb") as handle:
                head = handle.read(200).decode("utf-8", "replace")
            found[rel] = {"head": head, "size": info.st_size, "disk": info.st_blocks * 512}
with open(os.path.join(root, "results", "results.json"), "w") as out:
    json.dump({"score": 0, "tests": [], "found": found}, out)
"""


@pytest.fixture(scope="module")
def recorder_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("zip") / "autograder-a1.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("setup.sh", "#!/usr/bin/env bash\nexit 0\n")
        archive.writestr("run_autograder", RECORDER)
    return path


def dry_run(archive: Path, submission: Path, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graders.cli.main", "gradescope", "dry-run", str(archive),
         str(submission), "--root", str(root)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
        text=True, timeout=120)


def found(run: subprocess.CompletedProcess[str]) -> dict:
    import json

    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)["found"]


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A folder of the TA's that no submission may reach, holding a submission-named file."""
    folder = tmp_path / "ta_only"
    folder.mkdir()
    (folder / f"{STEM}.py").write_text(SECRET, encoding="utf-8")
    return folder


def test_a_linked_submission_file_stays_a_link_and_its_target_is_never_copied(
        recorder_zip: Path, secret: Path, tmp_path: Path) -> None:
    alice = tmp_path / "alice"
    alice.mkdir()
    (alice / f"{STEM}.py").symlink_to(secret / f"{STEM}.py")
    (alice / "notes.txt").write_text("mine", encoding="utf-8")
    entries = found(dry_run(recorder_zip, alice, tmp_path / "root"))
    assert entries[f"{STEM}.py"] == "link", entries
    assert entries["notes.txt"]["head"] == "mine"
    assert SECRET not in str(entries)


def test_a_linked_folder_in_a_submission_stays_a_link_and_is_never_entered(
        recorder_zip: Path, secret: Path, tmp_path: Path) -> None:
    alice = tmp_path / "alice"
    alice.mkdir()
    (alice / "work").symlink_to(secret, target_is_directory=True)
    entries = found(dry_run(recorder_zip, alice, tmp_path / "root"))
    assert entries == {"work": "link"}, entries


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_a_submission_that_is_a_link_is_refused_before_anything_runs(
        recorder_zip: Path, secret: Path, tmp_path: Path, kind: str) -> None:
    link = tmp_path / ("linked.py" if kind == "file" else "linked")
    link.symlink_to(secret / f"{STEM}.py" if kind == "file" else secret)
    run = dry_run(recorder_zip, link, tmp_path / "root")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "is a symbolic link" in run.stderr, run.stderr
    assert not (tmp_path / "root" / "results" / "results.json").exists()
    assert SECRET not in run.stdout + run.stderr


def test_a_fifo_in_a_submission_is_refused_and_never_blocks(
        recorder_zip: Path, tmp_path: Path) -> None:
    alice = tmp_path / "alice"
    alice.mkdir()
    os.mkfifo(alice / f"{STEM}.py")
    run = dry_run(recorder_zip, alice, tmp_path / "root")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "is a FIFO" in run.stderr, run.stderr


def test_a_huge_sparse_file_is_copied_sparse_and_unread(
        recorder_zip: Path, tmp_path: Path) -> None:
    alice = tmp_path / "alice"
    alice.mkdir()
    size = 64 << 20  # more than the grader ever reads (16 MiB), small enough to copy
    with open(alice / f"{STEM}.py", "wb") as handle:
        handle.truncate(size)
    entries = found(dry_run(recorder_zip, alice, tmp_path / "root"))
    copied = entries[f"{STEM}.py"]
    assert copied["size"] == size
    assert copied["disk"] < 1 << 20, f"the copy takes {copied['disk']} bytes of disk"


def test_a_dry_run_removes_its_temporary_folder_unless_kept(recorder_zip: Path,
                                                            tmp_path: Path) -> None:
    """Each dry-run left its `autograder-*` folder (65-146 MB with a real zip's
    environment) in $TMPDIR, unannounced. Now it is removed and said so; `--keep` keeps it
    and says where."""
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    alice = tmp_path / "alice"
    alice.mkdir()
    (alice / f"{STEM}.py").write_text("x = 1\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp)}
    command = [sys.executable, "-m", "graders.cli.main", "gradescope", "dry-run",
               str(recorder_zip), str(alice)]
    run = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=120)
    assert found(run)
    assert not list(tmp.glob("autograder-*")), "nothing left in $TMPDIR"
    assert "removed the temporary folder" in run.stderr and "--keep" in run.stderr
    kept = subprocess.run([*command, "--keep"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert found(kept)
    [folder] = tmp.glob("autograder-*")
    assert f"kept {folder}" in kept.stderr
    assert (folder / "results" / "results.json").is_file()
