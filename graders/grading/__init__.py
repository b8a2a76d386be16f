"""Grading one file: the ``Submission`` record (``submission``), a notebook made into its
module (``notebook``), the session and the checks run against it with their results
(``grade``). Uses the check framework (``graders.checking``) and the worker."""
