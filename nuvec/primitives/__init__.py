"""The primitives of nuvec's graph, by family. Each file defines primitive classes with their
shape/dtype inference and transform rules; backends (``nuvec.backends``) run them."""
