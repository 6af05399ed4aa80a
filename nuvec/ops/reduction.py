"""reduction operations."""
__all__: list[str] = []
