"""The course as records: ``Assignment`` and ``Task`` (``records``) and the labs discovered
from their folders under ``graders/labs/`` (``catalog``: ``ASSIGNMENTS``, ``get_assignment``,
``load_harness``). Every stage reads the records; the lab packages fill them in."""
