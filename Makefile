# WoTbench: one Makefile for the C programs, the Python package and the
# testbed. `make run` and `make test` work on a fresh Debian machine (root).

SHELL      := /bin/bash
BUILD      := build
BIN        := $(BUILD)/bin
VENV       := .venv
# The distribution's Python when there is one: a venv made from a Python
# under a private home (pyenv in /root, mode 700) cannot be run by another
# user, and the tests run wotbench as nobody (test_clean_restart).
PYTHON3    ?= $(firstword $(wildcard /usr/bin/python3) python3)
PY         := $(VENV)/bin/python
CC         ?= gcc
CLANG      ?= clang

COAP_INC   := /usr/include
COAP_LIB   := -l:libcoap-3-notls.a
CSTD       := -std=c11 -D_GNU_SOURCE
CWARN      := -Wall -Wextra -Werror
CFLAGS     ?= -O2 -g
ALL_CFLAGS := $(CSTD) $(CWARN) $(CFLAGS)
# Release binaries are fully static so that they run in FROM-scratch images;
# a link warning (e.g. glibc's about a resolver in a static program) fails
# the build, so that `make run` prints none.
STATIC_LDFLAGS := -static -pthread -Wl,--fatal-warnings
# Sanitizer builds cannot be static (ASan needs the dynamic loader); they
# still link libcoap's static archive.
SAN_FLAGS  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_FLAGS := -O1 -g -fsanitize=fuzzer,address,undefined

# Build facts compiled into wotbench-ge and wotbench-device (device/buildinfo.c,
# `--build-info`; the run's manifest.json "disclosure" records them): each
# program's compile and link flags, and the git commit and dirty state of the
# C sources (BI_PATHS: harness/host/disclosure.py's C_SOURCES) when it was
# built. build/gen/buildinfo.stamp changes with any of them, and only
# buildinfo.o depends on it.
BI_PATHS   := gateway-emulator device Makefile
BI_COMMIT  := $(shell git rev-parse HEAD 2>/dev/null)
BI_DIRTY   := $(shell s=$$(git status --porcelain -- $(BI_PATHS) 2>/dev/null) && { [ -z "$$s" ] && echo 0 || echo 1; } || echo -1)
BI_STAMP   := $(BUILD)/gen/buildinfo.stamp
# $(1) as a C string literal in a shell word: -DNAME=$(call bi_str,...).
bi_str = '"$(subst ','\'',$(subst ",\",$(subst \,\\,$(1))))"'
# The macros of one program's buildinfo.o: $(1) its compile flags, $(2) its link flags.
bi_defs = -DWB_CFLAGS=$(call bi_str,$(1)) -DWB_LDFLAGS=$(call bi_str,$(2)) \
          -DWB_GIT_COMMIT=$(call bi_str,$(BI_COMMIT)) -DWB_GIT_DIRTY=$(BI_DIRTY)

# Quiet recipes: one line per step ("  CC  build/obj/..."); `make V=1`
# shows every command. A failing step still prints its errors, and make
# names the target.
V ?= 0
ifeq ($(V),1)
  Q :=
  say =
else
  Q := @
  say = @printf '  %-4s %s\n' '$(1)' '$(2)';
endif

.PHONY: all setup build build-asan fuzz-build fuzz test check test-native run bench bench-ge bench-harness bench-swarm bench-report images clean-build venv images bench-harness bench-report

all: build

setup:
	$(Q)bash .ci/setup.sh

PIP_Q := $(if $(filter 1,$(V)),,-q) --disable-pip-version-check
venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	$(call say,VENV,$(VENV))$(PYTHON3) -m venv $(VENV)
	$(Q)$(VENV)/bin/pip install $(PIP_Q) --upgrade pip
	$(call say,PIP,-e .[test])$(VENV)/bin/pip install $(PIP_Q) -e '.[test]'
	$(Q)touch $@

include gateway-emulator/build.mk
include device/build.mk

ifneq ($(BI_GE) $(BI_GE_ASAN) $(BI_DEV) $(BI_DEV_ASAN),$(file < $(BI_STAMP)))
$(shell mkdir -p $(dir $(BI_STAMP)))
$(file > $(BI_STAMP),$(BI_GE) $(BI_GE_ASAN) $(BI_DEV) $(BI_DEV_ASAN))
endif

build: $(BIN)/wotbench-ge $(BIN)/wotbench-device
build-asan: $(BUILD)/asan/wotbench-ge $(BUILD)/asan/wotbench-device
fuzz-build: $(FUZZERS)

# The whole suite: unit, C binaries on loopback (also under ASan/UBSan),
# and Docker end-to-end. The check tier first, spread over the cores (as
# `make check`: its tests share nothing); then the native tier's tests that
# neither measure time, pin a core nor wait on short timers, on 2 workers
# (they use ephemeral ports and their own tmp_path; what they run is built
# here first and WOTBENCH_PREBUILT=1 keeps their fixtures from running make:
# harness/tests/building.py); then every other test one at a time:
# the `serial` ones (pyproject) and Docker's, which measure time on a quiet host.
test: setup build build-asan fuzz-build $(BIN)/devload $(BIN)/devrate images images-swarm images-gateways
	$(Q)$(PY) -m pytest --tier check -n auto $(PYTEST_ARGS)
	$(Q)$(PY) -m wotbench.tests.leftovers
	$(Q)WOTBENCH_PREBUILT=1 $(PY) -m pytest --tier native --exclude-tier check -m "not serial" -n 2 --durations=15 $(PYTEST_ARGS)
	$(Q)$(PY) -m pytest --exclude-tier check -m "serial or docker or root" --durations=30 $(PYTEST_ARGS)

# Test tiers, assigned by harness/tests/tiers.py from what each test uses.
# check: the standard tools (ruff, import-linter, mypy: harness/tests/test_tools.py)
# and every test that needs
# neither root, Docker nor a built binary and is not marked slow (a big input
# or a memory bound), spread over the cores (needs only the venv; under a
# minute on 2 cores). test-native: those plus the C binaries' tests (release,
# ASan/UBSan, fuzz smoke) and the slow ones; no Docker. A test that reaches beyond its tier
# fails, naming what it reached.
check: venv
	$(Q)$(PY) -m pytest --tier check -n auto $(PYTEST_ARGS)

test-native: venv build build-asan fuzz-build
	$(Q)$(PY) -m pytest --tier native $(PYTEST_ARGS)

# Each fuzzer for FUZZ_RUNS executions (the closing notes quote 1e6+).
# Fuzzers are named fuzz-<folder>-<what>; seeds live in <folder>/fuzz/seeds/<name>/.
FUZZ_RUNS ?= 200000
fuzz: fuzz-build
	@for f in $(FUZZERS); do n=$$(basename $$f); echo "== $$n"; mkdir -p $(BUILD)/corpus/$$n; \
	  $$f -runs=$(FUZZ_RUNS) -max_len=2048 $(BUILD)/corpus/$$n $$(ls -d */fuzz/seeds/$$n 2>/dev/null) 2>&1 | tail -n 2; \
	  test $${PIPESTATUS[0]} -eq 0 || exit 1; done

# clang-tidy over both C programs (fuzz/ and bench/ files included) with the
# root's .clang-tidy (bugprone-*, readability-function-size at 80 lines):
# fails on any finding. Run by gateway-emulator/tests/test_style.py.
CLANG_TIDY ?= clang-tidy
TIDY_SRCS  := $(sort $(wildcard gateway-emulator/*.c gateway-emulator/*/*.c device/*.c device/*/*.c))
.PHONY: tidy
tidy:
	$(Q)$(CLANG_TIDY) --quiet $(TIDY_SRCS) -- $(CSTD) -Igateway-emulator -Idevice -I$(COAP_INC)

# Every benchmark; each prints medians and writes JSON under build/bench/.
bench: bench-ge bench-device bench-tracegen bench-report bench-harness bench-swarm

# Docker images with no registry: static binaries FROM scratch, and a
# debootstrap base (docker import) for the network-tools sidecar.
images: build
	$(Q)bash docker/build-images.sh $(BIN)

# The Swarm lab's node image (docker/swarm-node.Dockerfile: the base plus
# Debian's docker.io); skipped when it is up to date.
.PHONY: images-swarm
images-swarm: images
	$(Q)bash docker/build-images.sh $(BIN) --swarm-node

# The shipped gateways under test (docker/gw-*.Dockerfile: libcoap's and
# aiocoap's CoAP forward proxies, a Node-RED HTTP-to-CoAP flow), FROM the
# debootstrap base; each skipped when it is up to date.
.PHONY: images-gateways
images-gateways: images
	$(Q)bash docker/build-images.sh $(BIN) --gateways

# The quickstart experiment on this machine (about two minutes).
run: setup build images
	@dirs=$$($(PY) -m wotbench.commands.main run experiments/quickstart.yaml) && \
	  $(PY) -m wotbench.commands.main report $$dirs && \
	  for d in $$dirs; do echo "results: $$d"; echo "report:  $$d/report/index.html"; done

# docs/results.md's catalogue blocks filled from $(RESULTS)/catalogue.sqlite,
# the rest of the page kept (docs/results.md, "How this page is made"); fails
# (exit 1) when a block had no run, after writing the page with a line saying so.
RESULTS ?= results
.PHONY: results-doc
results-doc: venv
	$(Q)$(PY) -m wotbench.commands.main runs --results $(RESULTS) --write-doc docs/results.md

# Bring-up/teardown rate, where the time goes, and memory per device for 100,
# 400 and 1,000 devices (harness/README.md).
bench-harness: setup build images
	$(Q)$(PY) -m wotbench.studies.harness_bench --devices 100 400 1000 --out $(BUILD)/bench/harness.json

# A two-node Swarm lab on this machine: start-up rate on 1 vs 2 nodes and
# the cross-host path (docs/multi-host.md).
bench-swarm: setup build images images-swarm
	$(Q)$(PY) -m wotbench.studies.harness_bench --swarm --devices 40 --reps 3 --out $(BUILD)/bench/swarm.json

clean-build:
	$(Q)rm -rf $(BUILD)

# The report of synthetic 10- and 100-million-request runs, out of core:
# CSV -> Parquet conversion and the analysis timed apart, peak RSS of each,
# rows/s (acceptance: 100M in <= 2 GiB at >= 2M rows/s). REPORT_OLD=<a
# PYTHONPATH root of older code> times it side by side on 10M (reporting/README.md).
REPORT_RUNS ?= $(BUILD)/bench/report-runs
bench-report: venv
	$(Q)$(PY) -m wotbench.reporting.bench.bench_report --requests 10000000 100000000 --dir $(REPORT_RUNS) \
		--out $(BUILD)/bench/report.json $(if $(REPORT_OLD),--old $(REPORT_OLD))

# Rows/s and peak memory of `wotbench tracegen` writing a 10-million-request,
# 1000-device workload (acceptance: >= 2 M rows/s, < 2 GB peak).
.PHONY: bench-tracegen
bench-tracegen: venv
	@mkdir -p $(BUILD)/bench
	$(Q)$(PY) tracegen/bench/bench_tracegen.py --rows 10000000 --devices 1000 --dir $(BUILD)/bench --json $(BUILD)/bench/tracegen.json
