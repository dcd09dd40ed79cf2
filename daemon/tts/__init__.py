"""Text-to-speech engines and the service that streams and caches them."""
