# Attack: patch the assert helpers and the test frameworks the grader might use.
# Defence: neither pytest nor hypothesis exists in the worker; builtins patched there
# change nothing in the grader.
_builtins = _import("builtins")
_builtins.AssertionError = type("NeverRaised", (Exception,), {})


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    pytest = _import("pytest")
    pytest.approx = lambda *args, **kwargs: args[0]
    return 0
