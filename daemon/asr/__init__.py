"""Speech-to-text engines."""
