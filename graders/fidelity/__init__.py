"""Fidelity to real JAX Pallas: run a kernel file on pallas_sim and on JAX's
interpreters and compare (docs/grading-design.md, "Integrations"; docs/pallas-sim.md).

* :mod:`graders.fidelity.cases` — the case record; each lab's
  ``graders/labs/<stem>/public/fidelity.py`` says which functions to call and on which
  hypothesis-drawn inputs;
* :mod:`graders.fidelity.compare` — load a file on both backends, call, compare;
* :mod:`graders.fidelity.run` — ``python -m graders.fidelity.run FILE``, the
  subprocess behind ``pallas-lab check --backend jax FILE``.

Nothing here imports ``reference``: a file is compared with itself on two
backends, so a student may run it on their own submission.
"""
