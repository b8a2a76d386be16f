# Attack: write a forged protocol reply straight to the worker's reply channel.
# Defence: replies carry an HMAC tag under a per-worker key; a forged frame is refused.
def _frame(answer):
    header = ('{"v":1,"tree":{"dict":{"ok":true,"value":%d,"traces":{"list":[]},'
              '"returned_arg":{"list":[null]},"args_after":null}}}' % answer).encode()
    return b"PLW1" + len(header).to_bytes(8, "big") + (0).to_bytes(8, "big") + header


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    os = _import("os")
    frame = _frame(50331648)
    for fd in range(0, 64):
        try:
            os.write(fd, frame)
        except OSError:
            pass
    return 0
