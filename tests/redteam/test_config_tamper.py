"""Attack: turn the simulator's poisoning off from the submission.

A kernel that forgets to zero its accumulator at k == 0 is caught because
fresh output buffers are poisoned (NaN).  ``pallas_sim.config(uninitialized=
"zero")`` is public API for exploring, so a submission may call it, at import
or inside a kernel; while it is graded the options are locked (the call only
warns) and the worker re-applies them before every call, so it changes
nothing in grading.
"""

from __future__ import annotations

from pathlib import Path

from graders.grading.grade import grade_file

ROOT = Path(__file__).resolve().parents[2]
ZERO_INIT = "        z_ref[...] = jnp.zeros_like(z_ref)"


def _points(path: Path) -> dict[str, float]:
    return {t.task: t.points for t in grade_file(path).tasks() if t.graded}


def test_switching_poison_off_does_not_hide_a_missing_initialization(tmp_path: Path) -> None:
    source = (ROOT / "solutions" / "a3_matmul.py").read_text()
    assert source.count(ZERO_INIT) == 1
    honest = source.replace(ZERO_INIT, "        pass")
    tampered = honest.replace(
        "from pallas_sim import jax, jnp, pl, pltpu",
        "from pallas_sim import config, jax, jnp, pl, pltpu\n\nconfig(uninitialized='zero')",
    ).replace("        pass", "        config(uninitialized='zero')", 1)
    assert tampered != honest
    paths = {}
    for name, text in (("honest", honest), ("tampered", tampered)):
        path = tmp_path / name / "a3_matmul.py"
        path.parent.mkdir()
        path.write_text(text)
        paths[name] = path
    honest_points, tampered_points = _points(paths["honest"]), _points(paths["tampered"])
    assert tampered_points["3.1"] < 30, "the missing zero-init still costs points"
    assert tampered_points == honest_points, (
        "turning poisoning off gains nothing: the worker grades with the grading options")
