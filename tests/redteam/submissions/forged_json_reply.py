# Attack: make the worker program itself send a huge reply. The worker signs whatever its
# protocol module hands it, so replacing pallas_lab_protocol.pack_message (reached with
# the smuggled __import__) gives a reply with a valid signature: here a JSON header of
# @@MIB@@ MiB holding millions of empty lists, for the first worked answer of Task 1.5.
# Decoding it costs the grader dozens of times its size in memory, and minutes.
# Defence: every reply has a budget derived from the call's inputs; the grader reads the
# frame's prefix, refuses a header or blob larger than the budget before reading it, and
# charges the call to the submission (status error, the sizes named).
honest_vmem_bytes = vmem_bytes


def forged_frame(mib):
    filler = b'{"list":[]},' * (mib * 1024 * 1024 // 12)
    header = (b'{"v":1,"tree":{"dict":{"ok":true,"value":{"dict":{"x":{"list":['
              + filler + b'null]}}},"traces":{"list":[]},"returned_arg":{"list":[null]},'
              b'"args_after":null}}}')
    return b"PLW1" + len(header).to_bytes(8, "big") + (0).to_bytes(8, "big") + header


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    if block_shape is None and list(shapes[0]) == [2048, 2048]:
        protocol = _import("pallas_lab_protocol")
        honest_pack = protocol.pack_message

        def forged_pack(value):
            protocol.pack_message = honest_pack
            return forged_frame(@@MIB@@)

        protocol.pack_message = forged_pack
    return honest_vmem_bytes(shapes, dtypes, block_shape, buffer_count)
