# Weft's front door. `make test` does all set-up on a fresh Debian machine.
# Build trees: build/release (default), build/debug, build/asan, build/tsan.

BUILD_TYPE ?= release
BUILD_DIR := build/$(BUILD_TYPE)
JOBS ?= $(shell nproc)
MODEL ?= models/gemma-3-270m-q4_k_m.gguf
WEFT := $(BUILD_DIR)/weft
CTEST_ARGS ?=
FUZZ_SECONDS ?= 60

.PHONY: all deps model configure build test test-asan test-tsan unit inspect \
        run serve fuzz format clean

all: build

deps:
	@bash scripts/deps.sh

model: deps
	@bash scripts/default-model.sh

configure: deps
	@cmake --preset $(BUILD_TYPE) -DWEFT_WERROR=ON >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Every test label: unit, golden, tool (python cross-checks), e2e.
test: model build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) $(CTEST_ARGS)

test-asan:
	@$(MAKE) --no-print-directory test BUILD_TYPE=asan

test-tsan:
	@$(MAKE) --no-print-directory test BUILD_TYPE=tsan

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

# libFuzzer targets (need clang): build/fuzz.
fuzz: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build build/fuzz -j $(JOBS)
	@bash scripts/fuzz.sh build/fuzz $(FUZZ_SECONDS)

format:
	@clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf build
