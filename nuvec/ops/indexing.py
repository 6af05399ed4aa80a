"""indexing operations."""
__all__: list[str] = []
