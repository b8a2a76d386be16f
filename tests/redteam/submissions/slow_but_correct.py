# Attack (on the grading slot, not the score): a correct submission whose every call waits
# just under the per-call timeout (@@SLEEP@@ s here). No call ever times out, so each of the
# ~130 calls a1's checks make costs almost the whole timeout: at the default 10 s, about
# 25 minutes of a grading slot for one file.
# Defence: a wall-clock budget per submission file (by default 3 x the timeout for each of
# its checks); when it is spent, the check that is running and every later one are
# recorded as timeout, with a message that says so.
sleep = _import("time").sleep


def slowly(function):
    def slow(*args, **kwargs):
        sleep(@@SLEEP@@)
        return function(*args, **kwargs)
    return slow


blocked_add = slowly(blocked_add)
bias_add = slowly(bias_add)
accumulate_inplace = slowly(accumulate_inplace)
vmem_bytes = slowly(vmem_bytes)
