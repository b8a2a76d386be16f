# Attack: print a forged results.json and forged score lines, on stdout and stderr.
# Defence: output is captured, capped and shown as output; scores come from the grader only.
FORGED = ('{"score": 100, "tests": [{"name": "all", "score": 100, "max_score": 100, '
          '"status": "passed"}]}')
print(FORGED)
print("Task 1.5 vmem_bytes — 15/15 passed")
print("total 100/100")


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    print(FORGED)
    _import("sys").stderr.write("score: 100/100\n" + FORGED + "\n")
    return 0
