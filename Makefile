# SwiftMoQ — two commands on a fresh machine: `make demo` and `make test`.
# SPDX-License-Identifier: MIT

SWIFT        ?= swift
JOBS         ?= 2
BUILD        := build
FUZZ_SECONDS ?= 60
PLUGIN_DIR   ?= $(HOME)/.local/share/gstreamer-1.0/plugins
# Tests and demos never touch the user's GStreamer registry.
export GST_REGISTRY_1_0 := $(CURDIR)/$(BUILD)/gst-registry.bin
# Copies of the system's .pc files without -pthread, which SwiftPM warns about on every build
# (scripts/pkgconfig-shadow.sh); the package itself names the standard modules.
export PKG_CONFIG_PATH := $(CURDIR)/$(BUILD)/pkgconfig$(if $(PKG_CONFIG_PATH),:$(PKG_CONFIG_PATH))

.PHONY: all setup build plugin cli test unit-test lint fuzz fuzz-build fuzz-wire fuzz-catalog fuzz-moqt fuzz-moqt-session fuzz-session demo install \
	clean help \
	element-docs check-element-docs bench bench-tools bench-profile tsan faults soak consumer-test web-test

all: build

help:
	@echo "make demo     set up the machine, build, and publish + play back a test pattern through the relay"
	@echo "make test     set up the machine, build, lint, run every test and a short fuzz run"
	@echo "make build    build/bin/swiftmoq and build/gst/libgstswiftmoq.so (release)"
	@echo "make install  copy the GStreamer plugin to $(PLUGIN_DIR)"
	@echo "make fuzz     run the codec, catalog and session fuzzers (both families) for FUZZ_SECONDS in total (default 60)"
	@echo "make element-docs  regenerate docs/elements.txt after an interface change"
	@echo "make bench    Swift vs Rust: latency, throughput, fan-out, GStreamer path, memory (not part of make test)"
	@echo "make bench-profile  perf profiles of the Swift relay and clients under the latency/throughput/fan-out cases"

# Idempotent: Debian packages, ngtcp2 1.11 from bookworm-backports, the moq-rs virtualenv.
setup: .venv/.setup-done $(BUILD)/pkgconfig/.done
.venv/.setup-done: scripts/setup.sh
	./scripts/setup.sh
	@touch $@
$(BUILD)/pkgconfig/.done: scripts/pkgconfig-shadow.sh .venv/.setup-done
	./scripts/pkgconfig-shadow.sh $(BUILD)/pkgconfig
	@touch $@

build: setup cli plugin

cli: setup
	$(SWIFT) build -c release -j $(JOBS) --product swiftmoq
	@mkdir -p $(BUILD)/bin
	cp --remove-destination "$$($(SWIFT) build -c release --show-bin-path)/swiftmoq" $(BUILD)/bin/swiftmoq

# The plugin carries the Swift runtime inside it (-static-stdlib): ldd lists no libswift*.
plugin: setup
	SWIFTMOQ_STATIC_STDLIB=1 $(SWIFT) build -c release -j $(JOBS) --product gstswiftmoq
	@mkdir -p $(BUILD)/gst
	cp --remove-destination "$$(SWIFTMOQ_STATIC_STDLIB=1 $(SWIFT) build -c release --show-bin-path)/libgstswiftmoq.so" $(BUILD)/gst/
	@if ldd $(BUILD)/gst/libgstswiftmoq.so | grep -q libswift; then \
		echo "error: libgstswiftmoq.so links the Swift runtime dynamically" >&2; exit 1; fi
	@GST_PLUGIN_PATH=$(BUILD)/gst GST_REGISTRY_1_0=$(BUILD)/gst-check-registry.bin gst-inspect-1.0 moqsink >/dev/null || { \
		echo "error: GStreamer cannot load $(BUILD)/gst/libgstswiftmoq.so:" >&2; \
		GST_PLUGIN_PATH=$(BUILD)/gst GST_REGISTRY_1_0=$(BUILD)/gst-check-registry.bin GST_DEBUG=GST_PLUGIN_LOADING:2 \
		gst-inspect-1.0 moqsink 2>&1 | grep -i -m3 -e failed -e undefined >&2; exit 1; }
	@rm -f $(BUILD)/gst-check-registry.bin

# Installed stripped (debug symbols and the static Swift runtime's symbol tables are half the
# file); the build tree keeps the unstripped plugin for debugging. The installed file is checked to load.
install: plugin
	@mkdir -p $(PLUGIN_DIR)
	strip --strip-unneeded -o $(PLUGIN_DIR)/libgstswiftmoq.so $(BUILD)/gst/libgstswiftmoq.so
	@GST_PLUGIN_PATH=$(PLUGIN_DIR) GST_REGISTRY_1_0=$(BUILD)/gst-install-registry.bin gst-inspect-1.0 moqsrc >/dev/null || { \
		echo "error: the stripped plugin does not load" >&2; exit 1; }
	@echo "installed $(PLUGIN_DIR)/libgstswiftmoq.so ($$(du -h $(PLUGIN_DIR)/libgstswiftmoq.so | cut -f1), stripped; unstripped: $(BUILD)/gst/)"

lint:
	$(SWIFT) format lint --strict -r Sources Tests Fuzz Plugins Package.swift
	python3 scripts/check-layers.py
	python3 scripts/embed-web.py --check
	@# swift-format sorts imports with the comment above the first one: keep the licence line first.
	@bad=$$(for f in $$(git ls-files '*.swift' | grep -v '^Package.swift$$'); do \
		head -1 "$$f" | grep -q '^// SPDX-License-Identifier: MIT$$' || echo "$$f"; done); \
		if [ -n "$$bad" ]; then echo "the SPDX line is not first in:" $$bad; exit 1; fi

# The elements' interface (gst-inspect-1.0) is a checked-in snapshot: changing it is deliberate.
element-docs: plugin
	./scripts/element-docs.sh $(BUILD)/gst > docs/elements.txt

check-element-docs: plugin
	@./scripts/element-docs.sh $(BUILD)/gst > $(BUILD)/elements.txt
	@diff -u docs/elements.txt $(BUILD)/elements.txt || { \
		echo "error: the elements' interface changed: run 'make element-docs' (or 'swift package --allow-writing-to-package-directory element-docs') and commit docs/elements.txt" >&2; exit 1; }

# A subscriber process's RSS growth over 10,000 groups is measured alone too: beside the parallel
# suite it read 1.0-1.2 MB (limit 1 MB) where 40,000 groups alone stay under it (no leak: noise).
# Tests whose pass criterion depends on throughput (an open-loop flood through the relay) or on
# a latency budget (media through network faults) run alone, after the parallel suite, one at a
# time: on 2 cores the parallel suite, or another of them (Chromium, a flood), takes the CPU they measure.
# moqsrc's end-to-end suite is among them since a CI run of the parallel suite failed two of its
# timing checks under load; the long-form controls measure each effect to within 100 ms.
SOLO_TESTS := OverloadInteropTests|KitLoggerTests|ClientNetworkThreadsTests|flatSubscriberMemory|NetworkFaultTests|LosslessReconnectTests|LongFormTests|LongFormPlayerTests|WatchPageTests|MoqSrcTests

# Run in a process of their own: with LadderPlaybackTests in the same test process (even when it runs
# after), MoqSrcTests.rustPublisherToDecodebin joins 2 s late (not understood yet: docs/reliability.md "Open").
ISOLATED_TESTS := LadderPlaybackTests

# Tests that run media pipelines in real time (encoders, decoders, sinks on the clock) run one at a
# time after the parallel suite, as under ThreadSanitizer (scripts/tsan.sh): beside each other and the
# Rust peers on 2 cores they starved (a decoded frame not there within 20 s, a connect not within 2 s).
# The relay-cluster interop test joins that phase: three relays, a Rust node and 20 viewers judge how
# fast an announcement's end spreads (1 s).
MEDIA_TESTS := GstTests\.|MoqKitTests\.|MoqTestKitTests\.|ClusterInteropTests

# The parallel suite also checks, every loop iteration, that each QUIC connection's cached expiry
# (the event loop's heap) is ngtcp2's (debug builds; an assertion names a missed refresh).
# At most PARALLEL_WIDTH tests run at once: with all ~690 started together on 2 cores (Swift
# Testing's default), half of them took over 16 s however short they were, and whichever test had a
# deadline in that crush failed (a different one in each of stop 42's CI runs). At 8 the median test
# takes 9 s less and the phase is no longer (67 s against 71 s).
# Each phase's whole output is in build/test/<phase>.log (scripts/test-phase.sh). The real-time
# phases after it run a test that failed again, alone (RERUN_FAILED: scripts/rerun-real-time.sh says why).
PARALLEL_WIDTH ?= 8
unit-test: setup
	$(SWIFT) build --build-tests -j $(JOBS)
	SWIFTMOQ_CHECK_EXPIRIES=1 SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(PARALLEL_WIDTH) SWIFT=$(SWIFT) \
		./scripts/test-phase.sh parallel --skip '$(SOLO_TESTS)|$(MEDIA_TESTS)'
	SWIFT=$(SWIFT) RERUN_FAILED=1 ./scripts/test-phase.sh media --filter '$(MEDIA_TESTS)' --skip '$(SOLO_TESTS)|$(ISOLATED_TESTS)' --no-parallel
	SWIFT=$(SWIFT) RERUN_FAILED=1 ./scripts/test-phase.sh solo --filter '$(SOLO_TESTS)' --no-parallel
	SWIFT=$(SWIFT) RERUN_FAILED=1 ./scripts/test-phase.sh isolated --filter '$(ISOLATED_TESTS)' --no-parallel

# The watch page's protocol and catalog modules without a browser (the browser test is in the suite).
web-test:
	node Tests/Web/web_modules_test.mjs

# The suite under ThreadSanitizer (its own build in .build-tsan; logs in build/tsan).
tsan: setup
	SWIFT=$(SWIFT) JOBS=$(JOBS) ./scripts/tsan.sh

# The fault matrix (docs/reliability.md): moqsink -> proxy -> relay -> proxy -> moqsrc through each
# impairment, a few minutes. FAULTS=<substring> runs the rows whose name contains it; the table and
# chart are rewritten only after a full run.
faults: setup
	@$(BENCH_PYTHON) -c 'import importlib.metadata as m, sys; sys.exit(m.version("matplotlib") != "$(MATPLOTLIB_VERSION)")' \
		2>/dev/null || .venv/bin/pip install -q matplotlib==$(MATPLOTLIB_VERSION)
	$(SWIFT) build --build-tests -j $(JOBS)
	SWIFTMOQ_FAULTS='$(or $(FAULTS),1)' $(SWIFT) test --skip-build --filter FaultMatrixTests
	@if [ -z '$(FAULTS)' ]; then $(BENCH_PYTHON) scripts/faults-report.py; fi

# Relay restarts, blackholes and loss in a loop for SOAK_SECONDS (10 min by default): memory flat
# (<= 5 MB growth), no leaked sessions, threads or file descriptors; samples in build/soak/samples.csv.
SOAK_SECONDS ?= 600
soak: setup
	$(SWIFT) build --build-tests -j $(JOBS)
	SWIFTMOQ_SOAK=$(SOAK_SECONDS) $(SWIFT) test --skip-build --filter SoakTests

# A package that depends on this one builds and runs with only Debian's -dev packages
# (scripts/consumer: discovery, catalog, headless playback, stats).
consumer-test: setup
	SWIFT=$(SWIFT) JOBS=$(JOBS) ./scripts/consumer-test.sh

test: setup build lint check-element-docs web-test unit-test consumer-test
	$(MAKE) fuzz FUZZ_SECONDS=$(or $(CI_FUZZ_SECONDS),30)

# libFuzzer over every wire decoder (MoqWire, MoqWebTransport's HTTP/3 and MoqQMux's framings), over
# the catalog decoder and legacy frames (MoqCatalog), and over the session core driven by a hostile
# peer's script (MoqSession + the script in Fuzz/FuzzSession/Harness, which the session tests also
# replay). Each source module is built as its own module (a static library instrumented for
# libFuzzer and ASan), in dependency order, exactly as SwiftPM builds it: the sources import each
# other as in the package, with no conditional imports.
FUZZ_MODULES = MoqBase MoqSync MoqWire MoqtWire MoqModel MoqWebTransport MoqQMux MoqCatalog MoqSession MoqtSession
FUZZ_FLAGS = -sanitize=fuzzer,address -parse-as-library -O -enable-testing -package-name swiftmoq
FUZZ_LIBS = $(BUILD)/fuzz/modules
fuzz-build:
	@mkdir -p $(FUZZ_LIBS)
	@for m in $(FUZZ_MODULES); do \
		echo "swiftc … -module-name $$m -emit-library -static"; \
		swiftc $(FUZZ_FLAGS) -I $(FUZZ_LIBS) -module-name $$m -emit-module \
			-emit-module-path $(FUZZ_LIBS)/$$m.swiftmodule -emit-library -static -o $(FUZZ_LIBS)/lib$$m.a \
			$$(find Sources/$$m -name '*.swift' | sort) || exit 1; \
	done
	swiftc $(FUZZ_FLAGS) -I $(FUZZ_LIBS) -L $(FUZZ_LIBS) -module-name FuzzWire Fuzz/FuzzWire/FuzzWire.swift \
		-lMoqQMux -lMoqWebTransport -lMoqWire -lMoqBase -o $(BUILD)/fuzz/fuzz-wire
	swiftc $(FUZZ_FLAGS) -I $(FUZZ_LIBS) -L $(FUZZ_LIBS) -module-name FuzzCatalog Fuzz/FuzzCatalog/FuzzCatalog.swift \
		-lMoqCatalog -lMoqWire -lMoqBase -o $(BUILD)/fuzz/fuzz-catalog
	swiftc $(FUZZ_FLAGS) -I $(FUZZ_LIBS) -L $(FUZZ_LIBS) -module-name FuzzSession \
		Fuzz/FuzzSession/Harness/*.swift Fuzz/FuzzSession/FuzzSession.swift \
		-lMoqtSession -lMoqtWire -lMoqSession -lMoqWebTransport -lMoqModel -lMoqWire -lMoqSync -lMoqBase \
		-o $(BUILD)/fuzz/fuzz-session
	swiftc $(FUZZ_FLAGS) -I $(FUZZ_LIBS) -L $(FUZZ_LIBS) -module-name FuzzMoqtSession \
		Fuzz/FuzzSession/Harness/*.swift Fuzz/FuzzMoqtSession/FuzzMoqtSession.swift \
		-lMoqtSession -lMoqtWire -lMoqSession -lMoqWebTransport -lMoqModel -lMoqWire -lMoqSync -lMoqBase \
		-o $(BUILD)/fuzz/fuzz-moqt-session
	swiftc $(FUZZ_FLAGS) -I $(FUZZ_LIBS) -L $(FUZZ_LIBS) -module-name FuzzMoqt Fuzz/FuzzMoqt/FuzzMoqt.swift \
		-lMoqtWire -lMoqWire -lMoqBase -o $(BUILD)/fuzz/fuzz-moqt

# FUZZ_SECONDS is split between the five targets (the session fuzzer gets what is left over).
FUZZ_WIRE_SECONDS    = $(shell expr $(FUZZ_SECONDS) / 5)
FUZZ_CATALOG_SECONDS = $(shell expr $(FUZZ_SECONDS) / 5)
FUZZ_MOQT_SECONDS    = $(shell expr $(FUZZ_SECONDS) / 5)
FUZZ_MOQT_SESSION_SECONDS = $(shell expr $(FUZZ_SECONDS) / 5)
FUZZ_SESSION_SECONDS = $(shell expr $(FUZZ_SECONDS) - 4 \* \( $(FUZZ_SECONDS) / 5 \))

fuzz: fuzz-build fuzz-wire fuzz-catalog fuzz-moqt fuzz-moqt-session fuzz-session

# -max_total_time=0 would mean "forever", so a zero share skips the timed run.
fuzz-wire: fuzz-build
	@mkdir -p $(BUILD)/fuzz/corpus
	$(BUILD)/fuzz/fuzz-wire -runs=0 Fuzz/FailCases/wire Fuzz/seeds/wire
	@if [ $(FUZZ_WIRE_SECONDS) -gt 0 ]; then \
		echo $(BUILD)/fuzz/fuzz-wire -max_total_time=$(FUZZ_WIRE_SECONDS) ...; \
		$(BUILD)/fuzz/fuzz-wire -max_total_time=$(FUZZ_WIRE_SECONDS) -max_len=4096 -rss_limit_mb=2048 \
			-artifact_prefix=$(BUILD)/fuzz/ $(BUILD)/fuzz/corpus Fuzz/seeds/wire; \
	fi

fuzz-catalog: fuzz-build
	@mkdir -p $(BUILD)/fuzz/corpus-catalog
	$(BUILD)/fuzz/fuzz-catalog -runs=0 Fuzz/FailCases/catalog Fuzz/seeds/catalog
	@if [ $(FUZZ_CATALOG_SECONDS) -gt 0 ]; then \
		echo $(BUILD)/fuzz/fuzz-catalog -max_total_time=$(FUZZ_CATALOG_SECONDS) ...; \
		$(BUILD)/fuzz/fuzz-catalog -max_total_time=$(FUZZ_CATALOG_SECONDS) -max_len=16384 -rss_limit_mb=2048 \
			-dict=Fuzz/FuzzCatalog/catalog.dict -artifact_prefix=$(BUILD)/fuzz/catalog- \
			$(BUILD)/fuzz/corpus-catalog Fuzz/seeds/catalog; \
	fi

# MoQ Transport's codec (MoqtWire). FUZZ_MOQT_RUNS=N runs exactly N inputs instead of a time budget.
fuzz-moqt: fuzz-build
	@mkdir -p $(BUILD)/fuzz/corpus-moqt
	$(BUILD)/fuzz/fuzz-moqt -runs=0 Fuzz/FailCases/moqt Fuzz/seeds/moqt
	@if [ -n "$(FUZZ_MOQT_RUNS)" ] || [ $(FUZZ_MOQT_SECONDS) -gt 0 ]; then \
		echo $(BUILD)/fuzz/fuzz-moqt ...; \
		$(BUILD)/fuzz/fuzz-moqt $(if $(FUZZ_MOQT_RUNS),-runs=$(FUZZ_MOQT_RUNS),-max_total_time=$(FUZZ_MOQT_SECONDS)) \
			-max_len=4096 -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10 \
			-artifact_prefix=$(BUILD)/fuzz/moqt- $(BUILD)/fuzz/corpus-moqt Fuzz/seeds/moqt; \
	fi

# MoQ Transport's session core (MoqtSession, the script in Fuzz/FuzzSession/Harness/MoqtSessionFuzz.swift).
# FUZZ_MOQT_SESSION_RUNS=N runs exactly N inputs instead of a time budget.
fuzz-moqt-session: fuzz-build
	@mkdir -p $(BUILD)/fuzz/corpus-moqt-session
	$(BUILD)/fuzz/fuzz-moqt-session -runs=0 Fuzz/FailCases/moqt-session Fuzz/seeds/moqt-session
	@if [ -n "$(FUZZ_MOQT_SESSION_RUNS)" ] || [ $(FUZZ_MOQT_SESSION_SECONDS) -gt 0 ]; then \
		echo $(BUILD)/fuzz/fuzz-moqt-session ...; \
		$(BUILD)/fuzz/fuzz-moqt-session \
			$(if $(FUZZ_MOQT_SESSION_RUNS),-runs=$(FUZZ_MOQT_SESSION_RUNS),-max_total_time=$(FUZZ_MOQT_SESSION_SECONDS)) \
			-max_len=4096 -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10 \
			-artifact_prefix=$(BUILD)/fuzz/moqt-session- $(BUILD)/fuzz/corpus-moqt-session Fuzz/seeds/moqt-session; \
	fi

# FUZZ_RUNS=N runs exactly N inputs instead of a time budget (the 10 M run of record).
fuzz-session: fuzz-build
	@mkdir -p $(BUILD)/fuzz/corpus-session
	$(BUILD)/fuzz/fuzz-session -runs=0 Fuzz/FailCases/session Fuzz/seeds/session
	@if [ -n "$(FUZZ_RUNS)" ] || [ $(FUZZ_SESSION_SECONDS) -gt 0 ]; then \
		echo $(BUILD)/fuzz/fuzz-session ...; \
		$(BUILD)/fuzz/fuzz-session $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SESSION_SECONDS)) \
			-max_len=4096 -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10 \
			-artifact_prefix=$(BUILD)/fuzz/session- $(BUILD)/fuzz/corpus-session Fuzz/seeds/session; \
	fi

demo: build
	./scripts/demo.sh

# Benchmarks are measurements, never timed tests: `make test` does not run them. BENCHMARKS.md says how
# they are made and what they showed; BENCH_* variables (scripts/benchlib/config.py) shorten or select cases.
BENCH_PYTHON := .venv/bin/python
MATPLOTLIB_VERSION := 3.10.9

bench-tools: setup cli
	$(SWIFT) build -c release -j $(JOBS) --product moqbench
	@mkdir -p $(BUILD)/bin
	cp --remove-destination "$$($(SWIFT) build -c release --show-bin-path)/moqbench" $(BUILD)/bin/moqbench
	@$(BENCH_PYTHON) -c 'import importlib.metadata as m, sys; sys.exit(m.version("matplotlib") != "$(MATPLOTLIB_VERSION)")' \
		2>/dev/null || .venv/bin/pip install -q matplotlib==$(MATPLOTLIB_VERSION)

bench: bench-tools
	$(BENCH_PYTHON) scripts/bench.py --out $(BUILD)/bench

# The Swift relay and clients under `perf record -g` (cases 1-3, 200 subscribers only); summaries in
# build/bench-profile/perf/*.txt. CPU figures of that run include perf's own overhead.
bench-profile: bench-tools
	BENCH_CASES=$${BENCH_CASES:-latency,throughput,fanout} BENCH_FANOUT_COUNTS=$${BENCH_FANOUT_COUNTS:-200} \
		$(BENCH_PYTHON) scripts/bench.py --no-wait --out $(BUILD)/bench-profile --profile $(BUILD)/bench-profile/perf

clean:
	rm -rf .build $(BUILD)
