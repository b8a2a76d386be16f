"""The grading core's check framework, comparisons and input strategies, shared by every
lab's hidden checks (graders/labs/<stem>/checks.py)."""
