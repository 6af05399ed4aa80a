class BufferExporter:
    """Base of ``Array``: the C-level buffer export (``_buffer.pyx``)."""
