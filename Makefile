# nuvec: `make demo` installs and runs a short compile demo on the CPU; `make test` runs all CI runs.
# `make test` and `make docs` install this clone (editable) first; with NUVEC_TEST_INSTALLED=1
# they use the nuvec that PYTHON already has instead (.ci/run: the wheel, in a fresh venv).
PYTHON ?= python3
PIP := $(PYTHON) -m pip
SWIFT := $(shell command -v swift 2>/dev/null)
INSTALL := $(if $(NUVEC_TEST_INSTALLED),,install)

.PHONY: install demo lint test test-python test-swift docs bench bench-quick fuzz clean

install:
	$(PIP) install -q -e '.[test]'
ifneq ($(SWIFT),)
	swift build --package-path swift -c release
endif

demo: install
	$(PYTHON) examples/demo.py

# ruff (lint, format) over every Python file here; where the package's sources are here, mypy
# over its public API and the import-layer check (.ci/run lints the source tree, then tests
# from a copy without nuvec/)
lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	@if [ -d nuvec ]; then echo "$(PYTHON) -m mypy"; $(PYTHON) -m mypy; \
	echo "$(PYTHON) -m pytest tests/test_import_layers.py"; \
	$(PYTHON) -m pytest -p no:cacheprovider --noconftest tests/test_import_layers.py; \
	else echo "no nuvec/ here: mypy and the import-layer check skipped (they read the sources)"; fi

# Lint first; Swift next, so that pytest's summary closes the output.
test: $(INSTALL) lint test-swift test-python

test-python:
	$(PYTHON) -m pytest tests

test-swift:
ifneq ($(SWIFT),)
	swift test --package-path swift --disable-swift-testing
else
	@echo "swift not found: the Swift shim's tests were not run"
endif

# the API reference and guides (docs/) from the docstrings; a warning fails the build
docs: $(INSTALL)
	$(PIP) install -q -r docs/requirements.txt
	$(PYTHON) -m sphinx -W --keep-going -q -b html docs docs/_build/html

bench: install
	$(PYTHON) -m benchmarks
	$(PYTHON) -m benchmarks.cached
	$(PYTHON) -m benchmarks.generation

bench-quick: install
	$(PYTHON) -m benchmarks --quick
	$(PYTHON) -m benchmarks.cached --quick

# long randomized runs, bounded in time: shapeless compile against eager, and damaged files
# and kernel caches (short versions of both run in `make test`)
fuzz: install
	$(PYTHON) -m fuzz.shapeless --programs 10000
	$(PYTHON) -m fuzz.files --seconds 300

clean:
	rm -rf build dist *.egg-info swift/.build docs/_build docs/api/generated
	find nuvec -name '*.so' -delete
