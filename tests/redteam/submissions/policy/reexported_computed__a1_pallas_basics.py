# Attack: the re-exported module reached with a name built at run time, inside the function
# (the compile-time check sees only getattr on an allowed module).
# Defence: the run-time guard applies the same allowlist to computed names; only the call
# that reaches for it fails.
import dataclasses


def bias_add(x, bias, *, block_shape=(128, 128)):
    system = getattr(dataclasses, "s" + "ys")
    tracing = system.modules["pallas_sim.tracing"]
    return tracing, x + bias
