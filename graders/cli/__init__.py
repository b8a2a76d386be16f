"""The ``pallas-lab`` command line: ``main`` parses and dispatches each subcommand to its
stage (grading, batch, release, integrations, reports, the student's self-check);
``grade_options`` checks the grade command's options before anything is graded."""
