"""Memora's package: ``engine`` (no Memora-specific state) and ``app`` (the tutor)."""
