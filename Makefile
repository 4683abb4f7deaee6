# Two entry points, each doing all set-up on a fresh Debian machine with Python 3.11 and make:
#   make run   - install everything, start the app with the default example
#   make test  - install everything, run the whole test suite under Xvfb with openbox managing its
#                windows, two pytest processes at once (each its own display: tests/worker_display.py)
# and for developers, make test-fast: the same tests less those marked slow (each over ~10 s in CI)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# when this make started: `make test` ends with the seconds since, set-up included (pytest's own
# last line gives the suite's; CI's limit is 15 minutes for all of it)
MAKE_START := $(shell date +%s)
ELAPSED = echo "make $@: $$(( $$(date +%s) - $(MAKE_START) )) s in all, set-up included"

# whole files to each of two processes, slow files first (tests/conftest.py); `make test` lists
# the 15 slowest tests, to keep the `slow` marker (pyproject.toml) on the tests that are slow
PYTEST := xvfb-run -a -s "-screen 0 1920x1200x24" scripts/with-window-manager.sh $(BIN)/python -m pytest -q -n 2 --dist loadfile

.PHONY: run test test-fast lint bench setup bytecode clean

setup: $(STAMP)

# bytecode up front: where PYTHONDONTWRITEBYTECODE is set (as in CI), each process compiles what it
# imports again. `make test` starts hundreds of processes that import gradviz (workers 0.14 s of CPU each to compile,
# app windows 0.25 s, CLIs 0.03 s); tests/ holds the helpers the pytest processes import. A .pyc is
# used only while it matches its source. tests/corpus/ is user code, some of it broken on purpose.
bytecode: setup
	$(BIN)/python -m compileall -q -x 'tests/corpus/' gradviz tests > /dev/null

# set up again whenever the dependencies or their pinned versions change
$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null \
		|| { echo "make: gradviz needs Python >= 3.11 as '$(PYTHON)' (set PYTHON=...)"; exit 1; }
	PYTHON=$(PYTHON) bash scripts/install-system-deps.sh --with-xvfb
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[app,test]"
	touch $@

run: bytecode
	$(BIN)/gradviz

test: bytecode
	$(BIN)/ruff check gradviz tests bench resources main.py
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy
	$(PYTEST) --durations=15; status=$$?; $(ELAPSED); exit $$status

test-fast: bytecode
	$(PYTEST) -m "not slow"; status=$$?; $(ELAPSED); exit $$status

lint: setup
	$(BIN)/ruff check gradviz tests bench resources main.py
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy

# Run with the machine otherwise idle: every line is a ratio against peers measured in the same run.
BENCH_LOG = build/bench.log

bench: setup
	$(BIN)/python -m compileall -q gradviz bench > /dev/null
	@mkdir -p build && rm -f $(BENCH_LOG)
	$(BIN)/python -u bench/scaling.py | tee -a $(BENCH_LOG)
	$(BIN)/python -u bench/fast_mode.py | tee -a $(BENCH_LOG)
	$(BIN)/python -u bench/jacobian_speed.py | tee -a $(BENCH_LOG)
	$(BIN)/python -u bench/run_overhead.py | tee -a $(BENCH_LOG)
	$(BIN)/python -u bench/many_targets.py | tee -a $(BENCH_LOG)
	$(BIN)/python -u bench/held_bytes.py | tee -a $(BENCH_LOG)
	$(BIN)/python -u bench/ui_latency.py | tee -a $(BENCH_LOG)
	$(BIN)/python -u bench/window_load.py | tee -a $(BENCH_LOG)
	@echo; echo "Targets, each a ratio measured in the same run:"; grep "^target:" $(BENCH_LOG)

clean:
	rm -rf $(VENV) build *.egg-info
