"""Thin protocol adapters: bytes in, calls into daemon/, bytes out."""
