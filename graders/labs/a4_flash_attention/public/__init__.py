"""What ships to students of this lab: the public checks and what they run (the public
harness, the worked answers) and the cases of ``check --backend jax``."""
