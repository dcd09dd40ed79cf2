"""The HTTP API (FastAPI on uvicorn)."""
