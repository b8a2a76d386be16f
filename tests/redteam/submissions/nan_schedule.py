# Attack: a schedule of NaN intervals. Every rule of the model compares times with < or >,
# and every comparison with NaN is False, so a rule check written as "fail when a < b"
# never sees a broken rule. The same for utilization and bandwidth: NaN answers.
# Defence: replies must be finite where a finite value is expected, and every comparison
# is written so that NaN fails it; the feedback says NaN.
def pipeline_schedule(dma_times, compute_times, n_buffers):
    n = len(dma_times)
    return np.full((n, 2), np.nan), np.full((n, 2), np.nan)


def pipeline_utilization(dma_times, compute_times, n_buffers):
    return float("nan")


def effective_bandwidth(bytes_per_step, compute_time, utilization):
    return float("inf")
