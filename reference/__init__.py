"""Hidden reference implementation of the student API (never shipped to students).

One module per assignment, named by the assignment's stem
(``reference.<stem>``, the stem of the assignment's record). Each
module exposes exactly the public names of its assignment in
``docs/student-api.md`` (listed in its ``__all__``); everything else, imports
included, is private (leading underscore).

The reference is written independently of ``solutions/``: dense float64 math
wherever the result is a value, and the kernels cast to the output dtype only
on the final store. Wrappers that the graders compare by trace (grid, block
shapes, DMA count, VMEM bytes) still go through ``pl.pallas_call`` with the
intended grid and BlockSpecs. Imports: numpy, math, ml_dtypes and pallas_sim
only; the graders import this package, the worker process never does.
"""
