"""Public checks, one module per assignment (``a1.py``, ``a4.py``, ...); see ``public.py``."""
