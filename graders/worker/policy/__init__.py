"""What a submission may do, decided by allowlists and enforced twice (docs/security.md).

A submission is compiled by RestrictedPython with this project's policy
(:mod:`.transform`): the compile-time half refuses, naming the line, imports
outside the allowlist, the names a submission may not use from an allowed
module, double-underscore attributes other than a few harmless ones, the
RestrictedPython guard names and the interpreter's introspection attributes
(``gi_frame``, ``tb_frame``, ``f_globals``, ...). The same compiler rewrites
every attribute read into ``_getattr_(obj, name)``, every attribute store
into ``_write_(obj).name = value``, every item store into
``_write_item_(obj)[key] = value`` and every ``import`` into a guarded
``__import__``; inside the worker those guards (:mod:`.guards`) apply the
run-time half of the same allowlists, so a name computed at run time meets
the same rule as one written in the source. A CPython audit hook
(:mod:`.audit`), which cannot be removed once installed, is the last net:
after the submission is loaded only the interpreter events the worker
itself needs are allowed, and none of them when the submission (or a guard
acting for it) raises them.

This package is shared by both sides of the trusted/untrusted split: the
grader imports it as ``graders.worker.policy`` (the static check) and the
worker gets a copy named ``pallas_lab_policy``. It imports only the standard
library, RestrictedPython, numpy and pallas_sim, and only with relative
imports between its own modules.
"""

import os as _os


def policy_enabled() -> bool:
    """Whether submissions are compiled and run under the policy: always, unless the
    environment says ``PALLAS_LAB_POLICY=off`` (only the red-team tests of the layers
    below the policy use that; grading with it off prints a warning)."""
    return _os.environ.get("PALLAS_LAB_POLICY", "on").strip().lower() != "off"
