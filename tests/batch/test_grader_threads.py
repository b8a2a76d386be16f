"""A batch's grader processes compute references with NumPy, N at once on N cores: each
gets one BLAS thread unless the TA's environment sets a count. With OpenBLAS's default
(a thread per core) two graders on two cores each ran their 128^3 products on two
threads, slower than on one (the samples' batch: 31-34 s against 30-31 s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, os
from graders.batch.pool import StopRequests, start_forkserver, stop_forkserver
from multiprocessing import forkserver
home = start_forkserver(StopRequests())
pid = forkserver._forkserver._forkserver_pid
env = dict(line.split("=", 1) for line in open(f"/proc/{pid}/environ").read().split("\\0")
           if "=" in line)
print(json.dumps({"server": {k: env.get(k) for k in ("OPENBLAS_NUM_THREADS",
                                                     "OMP_NUM_THREADS")},
                  "here": os.environ.get("OPENBLAS_NUM_THREADS")}))
stop_forkserver(home)
"""


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("3", "3")])
def test_graders_get_one_blas_thread_unless_the_environment_says(
        given: str | None, expected: str) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**env, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["server"]["OPENBLAS_NUM_THREADS"] == expected, seen
    assert seen["here"] == given, "the batch's own environment is left as it was"
