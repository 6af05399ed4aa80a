"""linalg operations."""
__all__: list[str] = []
