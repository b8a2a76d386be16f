"""One package per assignment, discovered by ``graders.course.catalog`` (no central table).

``graders/labs/<stem>/`` holds everything that belongs to one assignment, and its
folders say what students get (the bundle decides by folder, ``graders.release.bundle.lab_hidden``):

* ``__init__.py``: ``ASSIGNMENT``, the record (id, stem, lecture section, tasks with
  their functions, points and dependencies); shipped;
* ``public/``: shipped in the student bundle, every file in it: ``public_checks.py`` (the
  public checks; a package of one module per task or group of tasks when long),
  ``public_harness.py`` (what they run around the student's code), ``worked.py`` (the
  lecture's worked answers) and ``fidelity.py`` (the cases of ``check --backend jax``);
* ``hidden/``: never shipped: ``checks.py`` (the hidden checks; a package ``checks/``
  whose ``MODULES`` fix the registration order when long), ``diagnose.py``,
  ``harness.py`` (the grader's standard pallas_call around a student's kernel, copied
  into the worker; imports only numpy and pallas_sim) and the performance task's timing.

Code outside ``graders/labs/`` never names a lab's stem; it reads the records.
"""
