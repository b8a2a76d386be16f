# Attack: return objects that compare equal to anything.
# Defence: only plain values and plain arrays cross the protocol.
class AlwaysEqual:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __array__(self, dtype=None, copy=None):
        raise TypeError("no")


def blocked_add(x, y, *, block_shape=(256, 256)):
    return AlwaysEqual()


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    return AlwaysEqual()
