# Attack: a MaskInfo whose partial_mask_blocks holds tens of thousands of distinct patterns,
# for tiles of 16 to 64 elements (the rest of MaskInfo is right). A grader that checks
# "patterns are distinct" by comparing every pair does billions of comparisons: hours per
# drawn example, the worker idle, and the same again after every restart.
# Defence: counts larger than what the input allows are refused before any loop
# (a mask has at most one pattern per partial tile), and distinctness is checked by hashing.
honest_build_mask_info = build_mask_info


def build_mask_info(mask, block_q, block_kv):
    info = honest_build_mask_info(mask, block_q, block_kv)
    cells = block_q * block_kv
    if not 16 <= cells <= 64:
        return info
    stored = {bytes(p.reshape(-1)) for p in info.partial_mask_blocks.astype(np.uint8)}
    values = np.arange(1, 30001 + len(stored), dtype=np.uint64)
    bits = ((values[:, None] >> np.arange(cells, dtype=np.uint64)) & 1).astype(np.uint8)
    extra = [row for row in bits if bytes(row) not in stored][:30000]
    patterns = np.stack(extra).reshape(-1, block_q, block_kv).astype(bool)
    return info._replace(partial_mask_blocks=np.concatenate([info.partial_mask_blocks,
                                                              patterns]))
