# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# User-facing commands; CMake does the building.  See README.md.
#   make demo    install what is missing, build, run the example
#   make test    install what is missing, build, run every test (+ TSan and ASan runs)
#   make bench   build and run the benchmarks
#   make install PREFIX=dir   (DESTDIR=stage too; make uninstall undoes it)

PREFIX   ?= /usr/local
BUILD    ?= build
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all setup configure build demo test test-fast test-tsan bench install format format-check clean

all: build

setup:
	@./scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# Only what scripts/demo.sh runs (the plugins and the demo program), its build output kept in
# $(BUILD)/demo-build.log; on failure the log is printed without the progress lines.
DEMO_LOG = $(BUILD)/demo-build.log
demo: configure
	@echo "tether: building the plugins and the demo program (log: $(DEMO_LOG))"
	@cmake --build $(BUILD) -j $(JOBS) --target tether_demo_build > $(DEMO_LOG) 2>&1 || \
	  { grep -Ev '^\[ *[0-9]+%\]|^Scanning dependencies|^Consolidate compiler|(Entering|Leaving) directory' \
	      $(DEMO_LOG) >&2; echo "tether: the demo's build failed (full log: $(DEMO_LOG))" >&2; exit 1; }
	@./scripts/demo.sh $(BUILD)

# scripts/test.sh: every test in the normal build, the `tsan` tests under TSan, every test not
# labelled `noasan` under ASan+UBSan; each phase runs even when one before failed, and the last
# line sums them up.
TEST_ENV = BUILD="$(BUILD)" JOBS="$(JOBS)" CMAKE_FLAGS="$(CMAKE_FLAGS)"

test: setup
	@$(TEST_ENV) ./scripts/test.sh

test-tsan: setup
	@$(TEST_ENV) ./scripts/test.sh tsan

test-asan: setup
	@$(TEST_ENV) ./scripts/test.sh asan

bench: setup
	@cmake -S . -B $(BUILD)-bench -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD)-bench -j $(JOBS) --target bench

# Installs the build in $(BUILD), brought up to date.  It is configured first when there is none
# or when CMAKE_FLAGS are given; otherwise its configuration stays as it is.
install:
	@if [ ! -f $(BUILD)/CMakeCache.txt ] || [ -n "$(CMAKE_FLAGS)" ]; then \
	  $(MAKE) --no-print-directory configure; fi
	@cmake --build $(BUILD) -j $(JOBS)
	@cmake --install $(BUILD) --prefix $(PREFIX)

.PHONY: uninstall
uninstall:
	@cmake --build $(BUILD) --target uninstall

format:
	@git ls-files '*.c' '*.h' | xargs clang-format -i

format-check:
	@git ls-files '*.c' '*.h' | xargs clang-format --dry-run --Werror

clean:
	@rm -rf $(BUILD) $(BUILD)-tsan $(BUILD)-asan $(BUILD)-bench
