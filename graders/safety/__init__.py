"""Hostile bytes handled safely on the trusted side: bounded reads of submitted files
(``submission_files``: lstat first, no links followed, capped, streamed) and text made safe
to print in a terminal, a CSV cell or a page (``safe_text``). Imports nothing of graders."""
