# Attack: read the reference, the solutions, the checks, another student's file and the
# results by path, through numpy (which the static check allows) and through open().
TARGETS = [
    "@@REPO@@/reference/a1_pallas_basics.py",
    "@@REPO@@/solutions/a1_pallas_basics.py",
    "@@REPO@@/graders/labs/a1_pallas_basics/hidden/checks.py",
    "@@CLASS@@/aaa_honest/a1_pallas_basics.py",
    "@@RESULTS@@/aaa_honest/a1_pallas_basics/results.json",
]


def _try_read(path):
    try:
        data = np.fromfile(path, dtype=np.uint8)
        return f"READ {data.size} bytes by numpy: {bytes(data[:80]).decode(errors='replace')}"
    except Exception as exc:  # noqa: BLE001
        numpy_error = type(exc).__name__
    try:
        with _import("builtins").open(path, "rb") as handle:
            return f"READ by open(): {handle.read(80)!r}"
    except Exception as exc:  # noqa: BLE001
        return f"refused ({numpy_error}, {type(exc).__name__})"


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    report = "; ".join(f"{path}: {_try_read(path)}" for path in TARGETS)
    raise ValueError(report)
