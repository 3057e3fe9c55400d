# SwiftMoQ — two commands on a fresh machine: `make demo` and `make test`.
# SPDX-License-Identifier: MIT

SWIFT        ?= swift
JOBS         ?= 2
BUILD        := build
FUZZ_SECONDS ?= 60
PLUGIN_DIR   ?= $(HOME)/.local/share/gstreamer-1.0/plugins
# Tests and demos never touch the user's GStreamer registry.
export GST_REGISTRY_1_0 := $(CURDIR)/$(BUILD)/gst-registry.bin

.PHONY: all setup build plugin cli test unit-test lint fuzz fuzz-build demo install clean help element-docs check-element-docs

all: build

help:
	@echo "make demo     set up the machine, build, and run the publisher -> relay -> subscriber demo"
	@echo "make test     set up the machine, build, lint, run every test and a short fuzz run"
	@echo "make build    build/bin/swiftmoq and build/gst/libgstswiftmoq.so (release)"
	@echo "make install  copy the GStreamer plugin to $(PLUGIN_DIR)"
	@echo "make fuzz     run the fuzzers for FUZZ_SECONDS (default 60)"
	@echo "make element-docs  regenerate docs/elements.txt after an interface change"

# Idempotent: Debian packages, ngtcp2 1.11 from bookworm-backports, the moq-rs virtualenv.
setup: .venv/.setup-done
.venv/.setup-done: scripts/setup.sh
	./scripts/setup.sh
	@touch $@

build: setup cli plugin

cli: setup
	$(SWIFT) build -c release -j $(JOBS) --product swiftmoq
	@mkdir -p $(BUILD)/bin
	cp "$$($(SWIFT) build -c release --show-bin-path)/swiftmoq" $(BUILD)/bin/swiftmoq

# The plugin carries the Swift runtime inside it (-static-stdlib): ldd lists no libswift*.
plugin: setup
	SWIFTMOQ_STATIC_STDLIB=1 $(SWIFT) build -c release -j $(JOBS) --product gstswiftmoq
	@mkdir -p $(BUILD)/gst
	cp "$$(SWIFTMOQ_STATIC_STDLIB=1 $(SWIFT) build -c release --show-bin-path)/libgstswiftmoq.so" $(BUILD)/gst/
	@if ldd $(BUILD)/gst/libgstswiftmoq.so | grep -q libswift; then \
		echo "error: libgstswiftmoq.so links the Swift runtime dynamically" >&2; exit 1; fi

install: plugin
	@mkdir -p $(PLUGIN_DIR)
	cp $(BUILD)/gst/libgstswiftmoq.so $(PLUGIN_DIR)/
	@echo "installed $(PLUGIN_DIR)/libgstswiftmoq.so"

lint:
	$(SWIFT) format lint --strict -r Sources Tests Fuzz Plugins Package.swift

# The elements' interface (gst-inspect-1.0) is a checked-in snapshot: changing it is deliberate.
element-docs: plugin
	./scripts/element-docs.sh $(BUILD)/gst > docs/elements.txt

check-element-docs: plugin
	@./scripts/element-docs.sh $(BUILD)/gst > $(BUILD)/elements.txt
	@diff -u docs/elements.txt $(BUILD)/elements.txt || { \
		echo "error: the elements' interface changed: run 'make element-docs' (or 'swift package --allow-writing-to-package-directory element-docs') and commit docs/elements.txt" >&2; exit 1; }

unit-test: setup
	$(SWIFT) build --build-tests -j $(JOBS)
	$(SWIFT) test --skip-build

test: setup build lint check-element-docs unit-test
	$(MAKE) fuzz FUZZ_SECONDS=$(or $(CI_FUZZ_SECONDS),30)

# libFuzzer over every wire decoder (built as one module with the MoqWire sources).
fuzz-build:
	@mkdir -p $(BUILD)/fuzz
	swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name FuzzWire \
		Sources/MoqWire/*.swift Fuzz/FuzzWire/FuzzWire.swift -o $(BUILD)/fuzz/fuzz-wire

fuzz: fuzz-build
	@mkdir -p $(BUILD)/fuzz/corpus
	$(BUILD)/fuzz/fuzz-wire -runs=0 Fuzz/FailCases/wire Fuzz/seeds/wire
	$(BUILD)/fuzz/fuzz-wire -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -rss_limit_mb=2048 \
		-artifact_prefix=$(BUILD)/fuzz/ $(BUILD)/fuzz/corpus Fuzz/seeds/wire

demo: build
	./scripts/demo.sh

clean:
	rm -rf .build $(BUILD)
