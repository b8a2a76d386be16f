"""What connects pallas-lab to the systems a course already runs: Gradescope's
autograder (``gradescope``) and nbgrader (``nbgrader``)."""
