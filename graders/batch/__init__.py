"""Class runs: finding the submissions under the paths a TA names (``discovery``) and
grading them in a pool of grader processes with resume, schedule and the results store
(``run``). Takes ``graders.grading.grade``'s records and results; nothing below imports it."""
