# Attack: monkeypatch numpy's comparison helpers so that any answer "matches".
# Defence: the static check refuses assignments to attributes of imported modules.
np.allclose = lambda *args, **kwargs: True
np.array_equal = lambda *args, **kwargs: True
np.testing.assert_allclose = lambda *args, **kwargs: None


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    return 0
