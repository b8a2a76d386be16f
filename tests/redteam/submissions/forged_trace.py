# Attack: signed replies (through the worker's own pallas_lab_protocol.pack_message) whose
# pallas_call records contradict themselves: every operand's block indices are emptied.
# Checks that read the block index of each step then index an empty array: IndexError in
# the grader, reported as an internal grader error on the submission's behalf.
# Defence: a trace record must agree with itself (steps = product of the grid, block
# indices [steps, dims], one read count per step) before any check reads it; otherwise
# the call fails as the submission's error.
protocol = _import("pallas_lab_protocol")
honest_pack = protocol.pack_message


def forged_pack(value):
    if isinstance(value, dict) and isinstance(value.get("traces"), list):
        for record in value["traces"]:
            for operand in record.get("operands", []):
                operand["block_indices"] = np.zeros((0, 0), np.int32)
    return honest_pack(value)


protocol.pack_message = forged_pack
