"""Other backends for code written against ``pallas_sim``.

:mod:`pallas_sim.backends.real_jax` exposes the real ``jax``, ``jnp``, ``pl``
and ``pltpu`` with interpret mode forced, so a kernel file runs unchanged on
``jax.experimental.pallas`` on a CPU (needs the ``pallas-lab[jax]`` extra).
:mod:`pallas_sim.backends.swap` loads a kernel file against either backend.
Nothing here is imported by ``import pallas_sim``.
"""
