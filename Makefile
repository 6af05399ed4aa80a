# nuvec: `make demo` installs and runs a short compile demo on the CPU; `make test` runs all CI runs.
PYTHON ?= python3
PIP := $(PYTHON) -m pip
SWIFT := $(shell command -v swift 2>/dev/null)

.PHONY: install demo test test-python test-swift bench bench-quick fuzz clean

install:
	$(PIP) install -q -e '.[test]'
ifneq ($(SWIFT),)
	swift build --package-path swift -c release
endif

demo: install
	$(PYTHON) examples/demo.py

# Swift first, so that pytest's summary closes the output.
test: install test-swift test-python

test-python:
	$(PYTHON) -m pytest tests

test-swift:
ifneq ($(SWIFT),)
	swift test --package-path swift --disable-swift-testing
else
	@echo "swift not found: the Swift shim's tests were not run"
endif

bench: install
	$(PYTHON) -m benchmarks

bench-quick: install
	$(PYTHON) -m benchmarks --quick

# long randomized runs, bounded in time: shapeless compile against eager, and damaged files
# and kernel caches (short versions of both run in `make test`)
fuzz: install
	$(PYTHON) -m fuzz.shapeless --programs 10000
	$(PYTHON) -m fuzz.files --seconds 300

clean:
	rm -rf build dist *.egg-info swift/.build
	find nuvec -name '*.so' -delete
