"""sort operations."""
__all__: list[str] = []
