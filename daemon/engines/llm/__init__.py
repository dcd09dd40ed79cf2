"""Conversation models: a local GGUF through llama-cpp-python, or a remote server."""
