"""pallas_sim's internals: the simulator's implementation, private by path.

Everything under ``pallas_sim/_src`` is internal (JAX's own convention): the public
names are re-exported by the modules at the top of the package (``pallas_sim``,
``pl``, ``pltpu``, ``jnp``, ``jax``, ``lax``, ``nn``, ``random``, ``tree``,
``tree_util``). A submission can never import a module from here: the submission
policy derives "internal" from this path (``graders/worker/policy/rules.py``,
docs/security.md), so a new module added here needs no list edited. Trusted code
(graders, reference, tests) may import from here.
"""
