# Weft's front door. `make test` does all set-up on a fresh Debian machine.
# Build trees: build/release (default), build/debug, build/asan, build/tsan.

BUILD_TYPE ?= release
BUILD_DIR := build/$(BUILD_TYPE)
JOBS ?= $(shell nproc)
# The default model: SmolLM2-135M-Instruct (Q4_1), instruction-tuned, with a
# chat template. Gemma 3 270M (models/gemma-3-270m-q4_k_m.gguf), a base
# model, is installed beside it for the tests and benchmarks.
MODEL ?= models/smollm2-135m-instruct-q4_1.gguf
WEFT := $(BUILD_DIR)/weft
CTEST_ARGS ?=
FUZZ_SECONDS ?= 60

.PHONY: all deps model configure build test test-asan test-tsan test-ci-asan test-aarch64 \
        unit inspect run serve chat fuzz soak api-fuzz replicas replicas-test format clean

all: build

deps:
	@bash scripts/deps.sh

model: deps
	@bash scripts/default-model.sh

# Warnings are errors in the release and debug builds; the sanitizer builds
# only report them (GCC's -Wmaybe-uninitialized misfires inside Boost.Beast
# under -fsanitize=address at -O2).
WERROR := $(if $(filter asan tsan,$(BUILD_TYPE)),OFF,ON)
configure: deps
	@cmake --preset $(BUILD_TYPE) -DWEFT_WERROR=$(WERROR) >/dev/null

build: configure
	@[ -x $(WEFT) ] || echo "build: compiling Weft in $(BUILD_DIR) with $(JOBS) jobs (a first build takes several minutes)"
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Sanitizer settings for every run under build/asan or build/tsan: any
# report fails the test (the builds also use -fno-sanitize-recover=all).
export ASAN_OPTIONS ?= abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS ?= halt_on_error=1:second_deadlock_stack=1

# Every test label: unit, golden, tool (python cross-checks), e2e. The
# release suite (`make test`, what CI runs) is followed by the unit tests
# and the engine tests under ASan+UBSan (test-ci-asan).
test: model build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) $(CTEST_ARGS)
ifeq ($(BUILD_TYPE),release)
	@$(MAKE) --no-print-directory test-ci-asan
endif

# The whole suite under a sanitizer (long: a full extra build).
test-asan:
	@$(MAKE) --no-print-directory test BUILD_TYPE=asan

test-tsan:
	@$(MAKE) --no-print-directory test BUILD_TYPE=tsan

# CI's sanitizer pass: builds only the C++ unit-test targets and the engine
# tests in build/asan (ASan+UBSan) and runs exactly those.
ASAN_CI_TESTS := util_test tensor_test gguf_test cpu_features_test \
  kernels_test kv_test model_test model_batch_test kv_window_test \
  tokenizer_test chat_test sampling_test engine_test engine_trace_test \
  engine_backend_test chat_template_choice_test engine_builder_test file_hasher_test \
  server_test loadgen_test fuzz_replay_test model_decode_step_test \
  $(if $(filter x86_64,$(shell uname -m)),avx512_emulated_test)
empty :=
space := $(empty) $(empty)
test-ci-asan: model deps
	@cmake --preset asan -DWEFT_WERROR=OFF >/dev/null
	@cmake --build build/asan -j $(JOBS) --target $(ASAN_CI_TESTS)
	@ctest --test-dir build/asan --output-on-failure -j $(JOBS) \
	  -R '^($(subst $(space),|,$(strip $(ASAN_CI_TESTS))))$$' $(CTEST_ARGS)

# Cross build for 64-bit Arm Linux (scalar and NEON kernels) in build/aarch64 and its
# C++ unit tests under qemu-user (scripts/cross-aarch64.sh installs the
# cross toolchain, qemu and the arm64 libraries).
test-aarch64: deps
	@bash scripts/cross-aarch64.sh build/aarch64

inspect: model build
	@$(WEFT) inspect $(MODEL)

# make run PROMPT="Once upon a time" [N=64] [RUN_ARGS="--temp 0"]
PROMPT ?= Once upon a time
N ?= 64
RUN_ARGS ?=
run: model build
	@$(WEFT) run -m $(MODEL) -p "$(PROMPT)" -n $(N) $(RUN_ARGS)

# The README's first command: installs what is missing, builds, serves the
# default model on 127.0.0.1:8080 (SERVE_ARGS="--port 9000 ..." for more).
SERVE_ARGS ?=
serve: model build
	@$(WEFT) serve -m $(MODEL) $(SERVE_ARGS)

# An interactive terminal chat with the default model (CHAT_ARGS="--temp 0").
CHAT_ARGS ?=
chat: model build
	@$(WEFT) chat -m $(MODEL) $(CHAT_ARGS)

# libFuzzer targets (need clang): build/fuzz.
fuzz: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build build/fuzz -j $(JOBS)
	@bash scripts/fuzz.sh build/fuzz $(FUZZ_SECONDS)

# Soak test: `weft serve` on the default model driven at ~2x capacity by
# normal, streaming, aborting, malformed, oversized and very slow clients,
# then checks leaks, KV blocks, RSS and statuses (scripts/soak.py).
SOAK_SECONDS ?= 600
SOAK_ARGS ?=
soak: model build
	@.venv/bin/python scripts/soak.py --weft $(WEFT) --model $(MODEL) \
	  --seconds $(SOAK_SECONDS) $(SOAK_ARGS)

# Property-based API fuzzing with schemathesis (pinned in
# requirements-dev.txt, installed into build/stvenv) against a live server on
# stories260K, checked against docs/openapi.yaml.
API_FUZZ_MODEL ?= $(abspath ../shared/models/stories260K.gguf)
API_FUZZ_ARGS ?=
api-fuzz: build
	@bash scripts/api-fuzz.sh $(WEFT) $(API_FUZZ_MODEL) $(API_FUZZ_ARGS)

# N replicas of `weft serve` behind nginx (scripts/replicas.sh) until Ctrl-C.
REPLICAS ?= 2
replicas: model build
	@WEFT=$(WEFT) MODEL=$(MODEL) bash scripts/replicas.sh $(REPLICAS)

# The replica checks (tests/python/test_replicas.py) at full S1 size: S1
# through nginx while every replica restarts in turn (0 failed, 0
# truncated, KV idle after), and a SIGKILL under load (only the killed
# replica's running requests fail). ctest's replicas_py is a short run of
# the same file. Bench JSON in build/replicas/.
REPLICAS_SECONDS ?= 90
replicas-test: model build
	@mkdir -p build/replicas
	@REPLICAS_N=$(REPLICAS) REPLICAS_SECONDS=$(REPLICAS_SECONDS) \
	  REPLICAS_CONCURRENCY=8 REPLICAS_PROMPT_TOKENS=256 REPLICAS_OUTPUT_TOKENS=128 \
	  REPLICAS_SERVE_ARGS="--kv-memory 256M" REPLICAS_OUT=build/replicas \
	  WEFT_BINARY=$(WEFT) WEFT_SOURCE_DIR=$(CURDIR) \
	  .venv/bin/python -m pytest -q -s -p no:cacheprovider tests/python/test_replicas.py

format:
	@clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf build
