"""One package per assignment, discovered by ``graders.labs.catalog`` (no central table).

``graders/labs/<stem>/`` holds everything that belongs to one assignment:

* ``__init__.py``: ``ASSIGNMENT``, the record (id, stem, lecture section, tasks with
  their functions, points and dependencies);
* ``harness.py``: the grader's standard pallas_call around a student's kernel
  (copied into the worker; imports only numpy and pallas_sim);
* ``checks.py``: the hidden checks (never shipped to students);
* ``public_checks.py``: the public checks (shipped in the student bundle).
"""
