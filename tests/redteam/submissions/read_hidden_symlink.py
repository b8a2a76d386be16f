# Attack: symlinks placed beside the submission point at the reference.
# Defence: only a copy of the file is graded; the links' targets are not in the sandbox.
TARGETS = [
    "ref_link.py",
    "link_dir/a1_pallas_basics.py",
    "@@CLASS@@/read_hidden_symlink/ref_link.py",
    "@@CLASS@@/read_hidden_symlink/link_dir/a1_pallas_basics.py",
]


def _try_read(path):
    try:
        data = np.fromfile(path, dtype=np.uint8)
        return f"READ {data.size} bytes: {bytes(data[:80]).decode(errors='replace')}"
    except Exception as exc:  # noqa: BLE001
        return f"refused ({type(exc).__name__})"


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    raise ValueError("; ".join(f"{path}: {_try_read(path)}" for path in TARGETS))
