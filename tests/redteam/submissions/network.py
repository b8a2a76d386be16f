# Attack: send the inputs out over the network (or fetch answers), here to a listener the
# test runs on the host's loopback.
def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    socket = _import("socket")
    try:
        with socket.create_connection(("127.0.0.1", @@PORT@@), timeout=1) as conn:
            conn.sendall(repr(shapes).encode())
        outcome = "CONNECTED"
    except OSError as exc:
        outcome = f"refused ({exc.strerror or type(exc).__name__})"
    raise ValueError(f"network: {outcome}")
