"""The untrusted worker and its trusted client: a submission runs only here (docs/security.md)."""
