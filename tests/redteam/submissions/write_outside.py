# Attack: write forged results, overwrite another student's submission, drop files around.
# Defence: the sandbox's root is read-only and holds none of these paths.
TARGETS = [
    "@@RESULTS@@/pwned.json",
    "@@CLASS@@/aaa_honest/a1_pallas_basics.py",
    "@@WRITTEN@@",
]


def _try_write(path):
    try:
        np.frombuffer(b"def vmem_bytes(*a):\n    return 0\n", np.uint8).tofile(path)
        return "WROTE"
    except Exception as exc:  # noqa: BLE001
        return f"refused ({type(exc).__name__})"


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    raise ValueError("; ".join(f"{path}: {_try_write(path)}" for path in TARGETS))
