"""The primitives of nuvec's graph, by family. Each file defines primitive classes with their
parameters and shape/dtype inference; backends (``nuvec.backends``) run them, and their
transform rules are in ``nuvec.transforms.rules`` (one module per family, same names).

The package imports nothing above the core and the backend registry: the operations
(``nuvec.ops``) build primitives, never the other way round."""
