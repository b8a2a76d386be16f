"""``graders.checking.step_model.project``: the student's work at another candidate, projected
from their verified record at the chosen one and the reference's records at both
(docs/performance-model.md, "Performance tasks")."""

from __future__ import annotations

import numpy as np

from graders.checking import step_model


def _rec(steps: int, **ops: list[int]) -> step_model.StepRecord:
    return step_model.StepRecord(ops={k: np.array(v, np.int64) for k, v in ops.items()},
                                 num_steps=steps, largest_intermediate=7,
                                 scoped_vmem_bytes=0)


REF_C = _rec(3, mxu_flops_bf16=[100, 100, 100], vpu_ops=[10, 10, 10], vector_ops=[2, 2, 3])
REF_B = _rec(2, mxu_flops_bf16=[400, 0], vpu_ops=[40, 0], vector_ops=[2, 1])


def test_a_kernel_that_counts_what_the_reference_counts_is_projected_onto_the_reference():
    got = step_model.project(REF_C, REF_C, REF_B)
    assert set(got.ops) == set(REF_B.ops)
    assert all(np.array_equal(got.ops[k], REF_B.ops[k]) for k in REF_B.ops)
    assert got.num_steps == 2 and got.largest_intermediate == REF_B.largest_intermediate


def test_each_key_is_scaled_by_the_students_total_over_the_references_at_the_choice():
    student = _rec(3, mxu_flops_bf16=[100, 100, 100], vpu_ops=[30, 30, 30],
                   vector_ops=[4, 4, 6])
    got = step_model.project(student, REF_C, REF_B)
    assert got.ops["vpu_ops"].tolist() == [120, 0]       # 3x the reference's
    assert got.ops["vector_ops"].tolist() == [4, 2]      # 2x
    assert got.ops["mxu_flops_bf16"].tolist() == [400, 0]


def test_weights_make_the_ratio_one_of_full_size_work():
    student = _rec(3, mxu_flops_bf16=[100, 100, 100], vpu_ops=[10, 40, 10],
                   vector_ops=[2, 2, 3])
    # the middle step stands for 8 full-size steps: rho = (10 + 320 + 10) / (10 + 80 + 10)
    got = step_model.project(student, REF_C, REF_B, weights_c=np.array([1, 8, 1]))
    assert got.ops["vpu_ops"].tolist() == [136, 0]


def test_a_category_only_the_student_has_follows_the_references_mxu_work():
    """float32 products where the reference has bf16: the bf16 key goes to 0, the f32 one
    is spread over b's steps by the reference's MXU FLOPs (an empty step stays empty)."""
    student = _rec(3, mxu_flops_f32=[100, 100, 100], vpu_ops=[10, 10, 10],
                   vector_ops=[2, 2, 3], cast_elements=[6, 6, 6])
    got = step_model.project(student, REF_C, REF_B)
    assert got.ops["mxu_flops_f32"].tolist() == [400, 0]
    assert got.ops["mxu_flops_bf16"].tolist() == [0, 0]
    assert got.ops["cast_elements"].tolist() == [24, 0]   # 18 per 300 FLOPs, times 400


def test_less_work_at_the_choice_projects_less_work_elsewhere():
    student = _rec(3, mxu_flops_bf16=[100, 100, 100], vpu_ops=[5, 5, 5], vector_ops=[1, 1, 1])
    got = step_model.project(student, REF_C, REF_B)
    assert got.ops["vpu_ops"].tolist() == [20, 0]
    assert got.ops["vector_ops"].tolist() == [1, 0]       # 3/7 of [2, 1], rounded
