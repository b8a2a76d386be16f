# Attack: an ndarray subclass whose __eq__ and __array_function__ say "equal".
# Defence: the protocol refuses ndarray subclasses by name.
class Agreeable(np.ndarray):
    def __eq__(self, other):
        return np.ones(self.shape, bool)

    def __array_function__(self, func, types, args, kwargs):
        return True

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return np.zeros(self.shape, bool)


def blocked_add(x, y, *, block_shape=(256, 256)):
    return np.zeros(x.shape, x.dtype).view(Agreeable)
