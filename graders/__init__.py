"""pallas-lab: the autograder, the course tooling and the student commands.

The map of the package is docs/architecture.md.
"""
