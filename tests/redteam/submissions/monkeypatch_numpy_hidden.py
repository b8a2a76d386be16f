# Attack: the same monkeypatching, hidden from the static check.
# Defence: the grader compares in its own process, with its own numpy.
_setattr = _import("builtins").setattr
for _name in ("allclose", "array_equal", "isclose"):
    _setattr(np, _name, lambda *args, **kwargs: True)
_setattr(np.testing, "assert_allclose", lambda *args, **kwargs: None)
_setattr(np.testing, "assert_array_equal", lambda *args, **kwargs: None)


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    return 0
