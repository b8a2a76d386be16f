# Attack: pytest.skip / xfail / exit, by raising pytest's outcome exceptions.
# Defence: the grader is not a pytest run of the student's code; anything raised is a failure.
class Skipped(BaseException):
    __module__ = "_pytest.outcomes"


class XFailed(BaseException):
    __module__ = "_pytest.outcomes"


class Exit(BaseException):
    __module__ = "_pytest.outcomes"


def blocked_add(x, y, *, block_shape=(256, 256)):
    raise Skipped("skipped: not applicable")


def bias_add(x, bias, *, block_shape=(128, 128)):
    raise XFailed("expected to fail")


def accumulate_inplace(acc, x, *, block_shape=(256, 256)):
    raise Exit("exit with status 0")
