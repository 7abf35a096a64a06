# gpu-topology-policy: the Kubewarden policy (Wasm), the node labeler and their tests.
#
#   make demo        build the policy, evaluate examples/requests/*.json, print decisions and patches
#   make test        fmt check, clippy, unit tests and e2e tests (what .ci/run runs)
#   make e2e-tests   the built module against e2e-tests/scenarios (harness; kwctl bats when available)
#   make bench       criterion benchmarks (Wasm harness vs native); not part of `make test`
#   make miri        the allocator's tests under Miri (nightly); not part of `make test`
#   make fuzz        each fuzz target for FUZZ_SECONDS (30): executions and findings (FUZZING.md)

SHELL := /bin/bash
CARGO ?= cargo
KWCTL ?= kwctl
BATS ?= bats
WASM_TARGET := wasm32-wasip1
BUILT_WASM := target/$(WASM_TARGET)/release/gpu_topology_policy.wasm

.PHONY: test unit-tests e2e-tests kwctl-e2e-tests demo bench miri fuzz fmt lint clean FORCE

# Cargo decides what is stale; the copy (and so the file's date) changes only
# when the module does, so annotated-policy.wasm is rebuilt only then.
policy.wasm: FORCE
	$(CARGO) build --target $(WASM_TARGET) --release -p gpu-topology-policy
	@cmp -s $(BUILT_WASM) policy.wasm || cp $(BUILT_WASM) policy.wasm
	@echo "policy.wasm: $$(stat -c %s policy.wasm) bytes"

annotated-policy.wasm: policy.wasm policy-metadata.yml README.md
	$(KWCTL) annotate -m policy-metadata.yml -u README.md -o annotated-policy.wasm policy.wasm

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	# The policy as it is shipped: code only built for Wasm (its allocator).
	$(CARGO) clippy --target wasm32-wasip1 -p gpu-topology-policy -- -D warnings

# Native unit tests only (no module needed).
unit-tests:
	$(CARGO) test --workspace --exclude e2e-tests

# One `cargo test --workspace` runs the unit tests and the harness scenarios
# together: a single native build, no second dependency resolution.
test: lint policy.wasm
	$(CARGO) test --workspace
	@echo "e2e: harness scenarios RAN (cargo test -p e2e-tests, module policy.wasm)"
	@$(MAKE) --no-print-directory kwctl-e2e-tests

e2e-tests: policy.wasm
	$(CARGO) test -p e2e-tests
	@echo "e2e: harness scenarios RAN (cargo test -p e2e-tests, module policy.wasm)"
	@$(MAKE) --no-print-directory kwctl-e2e-tests

# The same scenarios through `kwctl run` (bats), when kwctl and bats are installed.
kwctl-e2e-tests:
	@missing=""; \
	command -v $(KWCTL) >/dev/null 2>&1 || missing="$$missing kwctl"; \
	command -v $(BATS) >/dev/null 2>&1 || missing="$$missing bats"; \
	if [ -n "$$missing" ]; then \
		echo "e2e: kwctl bats suite SKIPPED (not on PATH:$$missing)"; \
	else \
		$(MAKE) --no-print-directory annotated-policy.wasm && \
		KWCTL=$(KWCTL) $(BATS) e2e-tests/kwctl.bats && \
		echo "e2e: kwctl bats suite RAN (e2e-tests/kwctl.bats)"; \
	fi

# The README's first command. With KWCTL set (environment or `make demo
# KWCTL=/path/to/kwctl`) the requests go through `kwctl run` instead of the
# built-in harness.
demo: policy.wasm
	$(CARGO) run --quiet -p e2e-tests --bin evaluate -- \
		$(if $(filter environment command line,$(origin KWCTL)),--kwctl $(KWCTL)) \
		--settings examples/settings.yaml examples/requests/*.json

bench: policy.wasm
	$(CARGO) bench -p e2e-tests

# The crate's only unsafe code, src/small_blocks.rs, checked for undefined
# behaviour and leaks (a few minutes).
miri:
	rustup component add --toolchain nightly miri rust-src
	$(CARGO) +nightly miri test --lib small_blocks

# cargo-fuzz on stable Rust (RUSTC_BOOTSTRAP=1, set by the script); not part
# of `make test`: CI replays the committed corpora as tests instead.
FUZZ_SECONDS ?= 30
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh

clean:
	$(CARGO) clean
	rm -f policy.wasm annotated-policy.wasm
