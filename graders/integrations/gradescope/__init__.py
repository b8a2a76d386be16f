"""Gradescope: the autograder archive and what runs inside it (``autograder``), and the
results document sent back (``upload``)."""
