# gpu-topology-policy: the Kubewarden policy (Wasm), the node labeler and their tests.
#
#   make demo        build the policy, evaluate the examples against a replayed fleet and without one
#   make test        fmt check, clippy, unit tests, e2e tests and the manifests' schema
#                    check (what .ci/run runs)
#   make schema-venv the pinned Python packages of the schema check (target/schema-venv)
#   make module-size the optimized module within 1 MiB (part of `make test`)
#   make e2e-tests   the built module against e2e-tests/scenarios (harness; kwctl bats when available)
#   make bench       criterion benchmarks (Wasm harness vs native; the tool at scale); not part of `make test`
#   make miri        the allocator's tests under Miri (nightly); not part of `make test`
#   make artifacthub-pkg.yml   regenerate the Artifact Hub package with kwctl (release time)
#   make fuzz        each fuzz target for FUZZ_SECONDS (30): executions and findings (FUZZING.md)

SHELL := /bin/bash
CARGO ?= cargo
KWCTL ?= kwctl
BATS ?= bats
WASM_TARGET := wasm32-wasip1
# The module's path inside cargo's target directory (see policy.wasm).
BUILT_WASM := $(WASM_TARGET)/release/gpu_topology_policy.wasm
# The generated bats suite: one @test per e2e-tests/scenarios/*.json (git-ignored).
KWCTL_BATS := e2e-tests/kwctl.bats

.PHONY: module-size schema-venv test unit-tests e2e-tests kwctl-e2e-tests $(KWCTL_BATS) demo bench miri fuzz fmt lint clean FORCE

# Cargo decides what is stale; the copy (and so the file's date) changes only
# when the module does, so annotated-policy.wasm is rebuilt only then.
# `--locked`: build exactly Cargo.lock, as the Kubewarden policies' Makefiles do.
# The module is read from the target directory cargo itself reports, so
# CARGO_TARGET_DIR and build.target-dir are honoured (`--artifact-dir`, which
# would copy it out, is still unstable on Rust 1.95).
#
# binaryen's wasm-opt then optimizes the module, as the Kubewarden release
# workflow does: 11.6% smaller at the same instructions per call
# (BENCHMARKS.md, "Module size"). The features are the ones rustc enables for
# wasm32-wasip1, named so that every wasm-opt from Debian's 108 on reads and
# keeps them. It runs only when cargo's module changed (its last input is
# kept beside it). Without wasm-opt the module is cargo's, with a warning, so
# that a machine with only Rust and make still builds and tests; CI (.ci/run)
# installs it, and the release (annotated-policy.wasm) refuses to go without.
#
# `--low-memory-unused` lets wasm-opt fold a constant added to an address
# into the load's or store's offset (`i32.load (i32.add p (i32.const 16))`
# becomes `i32.load offset=16 p`). The two differ only when `p + 16` wraps
# past 4 GiB, which no Rust pointer does (an offset stays within its
# allocation, and policy-server caps the memory at 256 MiB); the fold saves
# 11 KB and an add per access (BENCHMARKS.md, "Module size").
WASM_OPT ?= wasm-opt
WASM_OPT_FLAGS := -O3 --low-memory-unused --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
	--enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue
policy.wasm: FORCE
	$(CARGO) build --locked --target $(WASM_TARGET) --release -p gpu-topology-policy
	@target_dir=$$($(CARGO) metadata --locked --format-version 1 --no-deps \
		| sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p'); \
	if [ -z "$$target_dir" ]; then \
		echo "policy.wasm: cargo metadata reported no target_directory" >&2; exit 1; \
	fi; \
	built="$$target_dir/$(BUILT_WASM)"; input="$$built.wasm-opt-input"; \
	if ! command -v $(WASM_OPT) >/dev/null 2>&1; then \
		echo "policy.wasm: WARNING: $(WASM_OPT) not found, the module is not optimized (install binaryen: apt-get install binaryen, brew install binaryen)" >&2; \
		rm -f "$$input"; cmp -s "$$built" policy.wasm || cp "$$built" policy.wasm; exit 0; \
	fi; \
	if [ -f policy.wasm ] && cmp -s "$$built" "$$input"; then exit 0; fi; \
	echo "$(WASM_OPT) $(WASM_OPT_FLAGS) ($$(stat -c %s "$$built") bytes)"; \
	$(WASM_OPT) $(WASM_OPT_FLAGS) "$$built" -o "$$built.optimized" && \
	{ cmp -s "$$built.optimized" policy.wasm || cp "$$built.optimized" policy.wasm; } && \
	cp "$$built" "$$input"
	@echo "policy.wasm: $$(stat -c %s policy.wasm) bytes"

# The module stays within 1 MiB (BENCHMARKS.md, "Module size"). Checked on
# the optimized module only: without wasm-opt the build warns and is larger.
MODULE_MAX_BYTES := 1048576
module-size: policy.wasm
	@size=$$(stat -c %s policy.wasm); \
	if ! command -v $(WASM_OPT) >/dev/null 2>&1; then \
		echo "module-size: not checked, policy.wasm is not optimized ($(WASM_OPT) not found)" >&2; \
	elif [ "$$size" -gt $(MODULE_MAX_BYTES) ]; then \
		echo "module-size: policy.wasm is $$size bytes, over $(MODULE_MAX_BYTES) (1 MiB): see BENCHMARKS.md, \"Module size\"" >&2; exit 1; \
	else \
		echo "module-size: policy.wasm is $$size bytes, within $(MODULE_MAX_BYTES) (1 MiB)"; \
	fi

# The release module is always optimized.
annotated-policy.wasm: policy.wasm policy-metadata.yml README.md
	@command -v $(WASM_OPT) >/dev/null 2>&1 || { \
		echo "annotated-policy.wasm: $(WASM_OPT) not found: the release module must be optimized (install binaryen)" >&2; exit 1; }
	$(KWCTL) annotate -m policy-metadata.yml -u README.md -o annotated-policy.wasm policy.wasm

# What `kwctl scaffold artifacthub` derives from the metadata and the Rancher UI
# questions; tests/metadata.rs checks the checked-in file against both. Run at
# release time (it needs kwctl); createdAt is the only line that then changes.
artifacthub-pkg.yml: policy-metadata.yml questions-ui.yml
	$(KWCTL) scaffold artifacthub --metadata-path policy-metadata.yml \
		--questions-path questions-ui.yml --output artifacthub-pkg.yml

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	# Doc links are the code's cross-references: a link that no longer
	# resolves (an item renamed or moved) fails, private items included.
	RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links" $(CARGO) doc --workspace --no-deps --document-private-items --quiet
	# The policy as it is shipped: code only built for Wasm (its allocator).
	$(CARGO) clippy --target wasm32-wasip1 -p gpu-topology-policy -- -D warnings
	# The fuzz crate (its own workspace: the root's --workspace never builds
	# it) type-checked and linted on stable, its targets and their labeler
	# checks included, so that they cannot rot between fuzzing runs; only
	# building and running them needs cargo-fuzz (FUZZING.md), and only
	# they link libFuzzer (C++: --no-default-features leaves it out here). --locked: a
	# dependency change of the crates it builds must update fuzz/Cargo.lock
	# (`cargo fetch --manifest-path fuzz/Cargo.toml`). It shares target/ with
	# the workspace, so the dependencies the clippy run above checked are
	# reused, not built a second time (about 2 minutes here, not 14).
	$(CARGO) clippy --locked --manifest-path fuzz/Cargo.toml --target-dir target \
		--no-default-features --features labeler --lib --bins -- -D warnings

# The Python packages of the schema check (tests/support_matrix.rs runs
# tests/schemas/validate.py): a venv inside the git-ignored target/, so no
# system Python is changed (PEP 668 "externally managed" Pythons included).
# Recreated when the pins change. PYTHON: the interpreter that makes the venv.
PYTHON ?= python3
SCHEMA_VENV := target/schema-venv
schema-venv: $(SCHEMA_VENV)/installed

$(SCHEMA_VENV)/installed: tests/schemas/requirements.txt
	rm -rf $(SCHEMA_VENV)
	$(PYTHON) -m venv $(SCHEMA_VENV)
	$(SCHEMA_VENV)/bin/python3 -m pip install --quiet --disable-pip-version-check \
		--no-input -r tests/schemas/requirements.txt
	@touch $@

# Native unit tests only (no module needed).
unit-tests: schema-venv
	$(CARGO) test --workspace --exclude e2e-tests

# One `cargo test --workspace` runs the unit tests and the harness scenarios
# together: a single native build, no second dependency resolution.
test: lint policy.wasm module-size schema-venv
	$(CARGO) test --workspace
	@echo "e2e: harness scenarios RAN (cargo test -p e2e-tests, module policy.wasm)"
	@$(MAKE) --no-print-directory kwctl-e2e-tests

e2e-tests: policy.wasm
	$(CARGO) test -p e2e-tests
	@echo "e2e: harness scenarios RAN (cargo test -p e2e-tests, module policy.wasm)"
	@$(MAKE) --no-print-directory kwctl-e2e-tests

# The bats file is generated on every run, so that scenarios added to
# e2e-tests/scenarios/ become tests without anyone editing it.
$(KWCTL_BATS):
	@e2e-tests/gen-kwctl-bats.sh $(KWCTL_BATS)

# The same scenarios through `kwctl run` (bats), when kwctl and bats are
# installed. With bats but no kwctl, the generated suite is still counted
# (`bats --count`): one test per scenario plus the demo test.
kwctl-e2e-tests:
	@if ! command -v $(BATS) >/dev/null 2>&1; then \
		missing="bats"; command -v $(KWCTL) >/dev/null 2>&1 || missing="kwctl bats"; \
		echo "e2e: kwctl bats suite SKIPPED (not on PATH: $$missing)"; \
		exit 0; \
	fi; \
	$(MAKE) --no-print-directory $(KWCTL_BATS) || exit 1; \
	scenarios=$$(ls e2e-tests/scenarios/*.json | wc -l); \
	tests=$$($(BATS) --count $(KWCTL_BATS)) || exit 1; \
	if [ "$$tests" -ne "$$((scenarios + 1))" ]; then \
		echo "e2e: $(KWCTL_BATS) has $$tests tests for $$scenarios scenarios (expected one each, plus the demo)" >&2; \
		exit 1; \
	fi; \
	if ! command -v $(KWCTL) >/dev/null 2>&1; then \
		echo "e2e: kwctl bats suite SKIPPED (not on PATH: kwctl; $(KWCTL_BATS) generated with $$tests tests)"; \
	else \
		$(MAKE) --no-print-directory annotated-policy.wasm && \
		KWCTL=$(KWCTL) $(BATS) $(KWCTL_BATS) && \
		echo "e2e: kwctl bats suite RAN ($(KWCTL_BATS), $$tests tests)"; \
	fi

# The README's first command: the runs of examples/demo.yaml, the examples
# against a replayed labeled fleet (examples/cluster/fleet.yml) and against
# no cluster. With KWCTL set (environment or `make demo KWCTL=/path/to/kwctl`)
# the requests go through `kwctl run` instead of the built-in harness, on the
# annotated module: `--allow-context-aware` grants only what a module's
# metadata lists.
DEMO_KWCTL := $(filter environment command line,$(origin KWCTL))
DEMO_MODULE := $(if $(DEMO_KWCTL),annotated-policy.wasm,policy.wasm)

demo: $(DEMO_MODULE)
	$(CARGO) run --quiet -p e2e-tests --bin evaluate -- \
		$(if $(DEMO_KWCTL),--kwctl $(KWCTL) --module $(DEMO_MODULE)) \
		--plan examples/demo.yaml

bench: policy.wasm
	$(CARGO) bench -p e2e-tests -p gpu-topology-cli

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
	rm -f policy.wasm annotated-policy.wasm $(KWCTL_BATS)
