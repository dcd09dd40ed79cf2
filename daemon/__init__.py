"""Hearth: a self-hosted voice daemon for homes."""

__version__ = "0.1.0"
