"""Sphinx settings of nuvec's documentation (`make docs`: HTML in docs/_build/html).

The API pages are written by apipages.py from the installed nuvec's namespaces when a build
starts; this file does not put the source tree on sys.path, so the docs describe the nuvec
that the building Python imports.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # apipages.py, the extension

import nuvec  # noqa: E402

project = "nuvec"
release = version = getattr(nuvec, "__version__", "0.1.0")
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "myst_parser",
    "apipages",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "description"
autosummary_generate = False
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
myst_all_links_external = True  # the README's links point into the repository
html_theme = "alabaster"
html_title = "nuvec"
