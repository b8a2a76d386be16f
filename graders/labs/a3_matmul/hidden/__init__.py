"""What never ships to students of this lab: the hidden checks, their diagnoses, the
grader's harness (the standard calls) and the timing of the performance task."""
