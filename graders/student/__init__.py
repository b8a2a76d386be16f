"""Student-side tooling, shipped in the student bundle (``pallas-lab release --bundle``).

Everything here runs without ``reference/``, ``solutions/`` or the hidden
checks: the public checks (worked answers of the lecture and properties
against plain math oracles), the self-check runner behind ``pallas-lab check``
and ``pallas-lab status``, ``pallas-lab profile`` (``kernel_profile``: the predicted TPU
time of a file's kernels, read as ``check`` reads it), and the notebook-to-module
conversion that the grader also uses for ``.ipynb`` submissions. It imports only numpy,
hypothesis, rich, nbformat, matplotlib (``profile --png`` only), ``pallas_sim``,
``graders.safety``, ``graders.course.catalog``,
``graders.harnesses`` (with each lab's ``public_harness.py``, never its
``harness.py``) and ``graders.worker.static_check`` (all shipped too).
"""
