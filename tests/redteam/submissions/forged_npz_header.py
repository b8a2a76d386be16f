# Attack: a signed reply (forged through the worker's own pallas_lab_protocol.pack_message)
# whose .npz blob holds one small member whose .npy header claims a float64 array of 2**40
# elements (8 TiB). np.load allocates what the header claims: MemoryError in the grader,
# reported as "internal grader error ... not your fault" and exit status 1.
# Defence: the zip directory and every .npy header are validated against the call's reply
# budget (dtype, dims, element count, declared size = bytes present) before anything is
# allocated; the call fails as the submission's error, naming the declared size.
honest_vmem_bytes = vmem_bytes


def forged_frame():
    io, zipfile = _import("io"), _import("zipfile")
    text = "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }"
    text = text + " " * (118 - len(text)) + "\n"
    npy = b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode() + b"\0" * 64
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a0.npy", npy)
    blob = buffer.getvalue()
    header = (b'{"v":1,"tree":{"dict":{"ok":true,"value":{"array":"a0","dtype":"<f8"},'
              b'"traces":{"list":[]},"returned_arg":{"list":[null]},"args_after":null}}}')
    return b"PLW1" + len(header).to_bytes(8, "big") + len(blob).to_bytes(8, "big") + header + blob


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    if block_shape is None and list(shapes[0]) == [2048, 2048]:
        protocol = _import("pallas_lab_protocol")
        honest_pack = protocol.pack_message

        def forged_pack(value):
            protocol.pack_message = honest_pack
            return forged_frame()

        protocol.pack_message = forged_pack
    return honest_vmem_bytes(shapes, dtypes, block_shape, buffer_count)
