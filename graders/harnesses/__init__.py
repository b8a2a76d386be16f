"""The grader's standard pallas_call around a student's kernel.

These modules run INSIDE the untrusted worker (as the package
``pallas_lab_harnesses``), so a kernel can be checked in isolation from the
student's wrapper: a fault in the wrapper is then not charged to the kernel.
They import only numpy and pallas_sim, never ``reference`` or ``graders``.
Each harness takes the submission module first, then the case's arguments.
"""
