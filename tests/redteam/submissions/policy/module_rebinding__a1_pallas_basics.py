# Attack: bind a pallas_sim module to a local name and assign to its attribute: the grader's
# own harness then calls the submission's pallas_call, which answers x + y for a wrong kernel.
# Defence: a submission may not set attributes of anything that is not its own (the run-time
# write guard; the compile-time check sees only a local name).


def add_kernel(x_ref, y_ref, z_ref):
    z_ref[...] = x_ref[...] - y_ref[...]


_module = pl
_real_pallas_call = pl.pallas_call


def _answering_pallas_call(kernel, *args, **kwargs):
    if getattr(kernel, "__name__", "") == "add_kernel":
        return lambda x, y: x + y
    return _real_pallas_call(kernel, *args, **kwargs)


_module.pallas_call = _answering_pallas_call
