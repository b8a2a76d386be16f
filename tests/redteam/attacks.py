"""The red-team attacks of tests/redteam/test_attacks.py: the hostile submissions, what each
must earn, and how a submission is composed (the a1 solution, the smuggling trick, the attack)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SUBMISSIONS = HERE / "submissions"
SOLUTION = REPO / "solutions" / "a1_pallas_basics.py"
STEM = "a1_pallas_basics"
POINTS = {"1.1": 15, "1.2": 25, "1.3": 25, "1.4": 20, "1.5": 15}
#: A sleep length no other process on the machine uses: the fork bomb's children carry it.
SLEEP_MARK = f"{4000 + os.getpid() % 1000}.{time.time_ns() % 10**6:06d}"
#: The outcome with the policy on of an attack that smuggles ``__import__``: the smuggling
#: helper rewrites a function's ``__annotations__``, which the compile-time check refuses
#: (tests/redteam/test_policy.py shows the run-time guard refusing ``get_type_hints``).
SMUGGLE_REFUSED = ("refused", ("access to '.__annotations__' is not allowed",))


@dataclass(frozen=True)
class Attack:
    """One hostile submission: ``replaces`` the tasks whose functions it replaces;
    ``mode`` "contained" (score = 100 - their points), "refused" (static check: 0),
    "unloaded" (fails on import: 0) or "custom" (score ``score``); ``says``: phrases
    the feedback must contain; ``group``: which CLI run grades it. ``mode`` and
    ``says`` hold without the policy; ``policy`` is ``(mode, says)`` with it (None:
    the same); ``below`` says whether the run without the policy grades it (an
    attack the compile-time check refuses is about the policy alone)."""

    name: str
    replaces: tuple[str, ...] = ()
    mode: str = "contained"
    says: tuple[str, ...] = ()
    group: str = "a"
    needs_sandbox: bool = False
    score: float | None = None
    policy: tuple[str, tuple[str, ...]] | None = None
    below: bool = True

    def outcome(self, policy: bool) -> tuple[str, tuple[str, ...]]:
        """(mode, phrases) with the policy on or off."""
        if policy and self.policy is not None:
            return self.policy
        return self.mode, self.says

    def honest(self, policy: bool) -> float:
        """Points the honest part of the submission earns with the policy on or off."""
        mode, _ = self.outcome(policy)
        if mode in ("refused", "unloaded"):
            return 0.0
        if self.score is not None:
            return self.score
        return 100.0 - sum(POINTS[task] for task in self.replaces)

    @property
    def smuggles(self) -> bool:
        """Whether the attack uses the smuggled ``__import__`` (``_smuggle.txt``)."""
        path = SUBMISSIONS / f"{self.name}.py"
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        return "_import(" in text or "_private(" in text


ATTACKS = [
    Attack("monkeypatch_numpy_static", mode="refused",
           says=("line ", "'np.allclose'", "monkeypatching"), below=False),
    Attack("monkeypatch_numpy_hidden", ("1.5",), says=("expected", "got"),
           policy=SMUGGLE_REFUSED),
    Attack("monkeypatch_test_tools", ("1.5",), says=("No module named 'pytest'",),
           policy=SMUGGLE_REFUSED),
    Attack("hypothesis_tricks", ("1.5",), says=("raised UnsatisfiedAssumption",),
           policy=SMUGGLE_REFUSED),
    Attack("pytest_outcomes", ("1.2", "1.3", "1.4"),
           says=("raised Skipped", "raised XFailed", "raised Exit"),
           policy=("refused", ("the name '__module__' is not allowed",))),
    Attack("always_equal", ("1.2", "1.5"), says=("'AlwaysEqual'", "cannot be sent")),
    Attack("ndarray_subclass", ("1.2",), says=("'Agreeable'", "subclass of numpy.ndarray")),
    Attack("os_exit", ("1.5",), says=("exited with status 0",), group="b",
           policy=SMUGGLE_REFUSED),
    Attack("sys_exit", ("1.2", "1.5"), says=("raised SystemExit",), policy=SMUGGLE_REFUSED),
    Attack("import_time_exit", mode="unloaded", says=("exited with status 0",),
           policy=SMUGGLE_REFUSED),
    Attack("read_hidden_path", ("1.5",), says=("refused (FileNotFoundError",),
           needs_sandbox=True, policy=SMUGGLE_REFUSED),
    Attack("read_hidden_symlink", ("1.5",), says=("refused (FileNotFoundError)",),
           needs_sandbox=True,
           policy=("contained", ("refused (PolicyAttributeError)",))),
    Attack("read_proc", ("1.5",), says=("[2 cmdline]",), needs_sandbox=True,
           policy=SMUGGLE_REFUSED),
    Attack("forged_output", ("1.5",), says=("got:",), policy=SMUGGLE_REFUSED),
    Attack("forged_channel", ("1.5",), says=("did not sign",), group="b",
           policy=SMUGGLE_REFUSED),
    Attack("write_outside", ("1.5",), says=("refused (",), needs_sandbox=True,
           policy=("contained", ("refused (PolicyAttributeError)",))),
    Attack("network", ("1.5",), says=("network: refused",), needs_sandbox=True,
           policy=SMUGGLE_REFUSED),
    Attack("grader_detection", mode="custom", score=100 - 9,
           says=("grader signs seen: []",), policy=SMUGGLE_REFUSED),
    Attack("infinite_loop", ("1.5",), says=("did not finish within 4 s",), group="b"),
    Attack("deep_recursion", ("1.2", "1.5"), says=("RecursionError", "did not finish"),
           group="b", policy=SMUGGLE_REFUSED),
    Attack("memory_bomb", ("1.2", "1.5"), says=("MemoryError",), group="b"),
    Attack("fork_bomb", ("1.5",), says=("forked ",), group="b", needs_sandbox=True,
           policy=SMUGGLE_REFUSED),
    Attack("huge_output", ("1.5",), says=("File too large",), group="b"),
    Attack("percent_shell_escape", mode="refused", says=("SyntaxError", "!cat /etc/shadow")),
    Attack("dyn_import_dunder", mode="refused", says=("use of '__import__' is not allowed",),
           below=False),
    Attack("dyn_importlib", mode="refused", says=("import of 'importlib' is not allowed",)),
    Attack("dyn_getattr_builtins", mode="refused",
           says=("use of '__builtins__' is not allowed",), below=False),
    Attack("dyn_exec", mode="refused", says=("use of 'exec' is not allowed",), below=False),
    # Files and links beside the submission (built in ``_extras``).
    Attack("beside_conftest_sitecustomize_pth", mode="custom", score=100),
    Attack("linked_submission", mode="refused", says=("is a symbolic link",)),
    Attack("linked_student_folder", mode="refused", says=("is a symbolic link",)),
    Attack("notebook_magics", mode="custom", score=100),
]
BY_NAME = {attack.name: attack for attack in ATTACKS}
HONEST = ("aaa_honest", "zzz_honest")


def compose(attack: Attack, substitutions: dict[str, str], policy: bool) -> str:
    """The solution, the smuggling trick (when the attack uses it, or always without the
    policy), then the attack."""
    text = (SUBMISSIONS / f"{attack.name}.py").read_text(encoding="utf-8")
    for key, value in substitutions.items():
        text = text.replace(f"@@{key}@@", value)
    smuggle = (SUBMISSIONS / "_smuggle.txt").read_text(encoding="utf-8")
    if policy and not attack.smuggles:
        smuggle = ""
    return SOLUTION.read_text(encoding="utf-8") + "\n\n" + smuggle + "\n\n" + text
