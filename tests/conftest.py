"""Test-suite settings. Under CI (CI=true) hypothesis draws its examples from a fixed seed, so
a CI run checks exactly the examples that a local `CI=true make test` checked; locally the
examples are fresh on every run (and failures are kept in .hypothesis/ and replayed)."""
import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
