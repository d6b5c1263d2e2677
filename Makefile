# SPDX-License-Identifier: MIT
#
# Convenience wrapper around meson. Every target first makes sure the
# Debian packages it needs are installed (installing them when run as
# root, printing the exact command otherwise), then configures and builds.
#
#   make demo    build (release) and run the demonstration job
#   make test    build with ASan+UBSan and run the whole suite, then the
#                threaded tests under TSan
#   make bench   ping-pong benchmark beside Open MPI (see docs/performance.md)
#   make build   release build only, in build/
#   make clean

BUILD      ?= build
SAN_BUILD  ?= build-san
TSAN_BUILD ?= build-tsan

PKGS := gcc libc6-dev pkg-config meson ninja-build libuv1-dev libcmocka-dev \
        libev-dev \
        iproute2

.PHONY: all deps build demo test test-san test-tsan bench format clean

all: build

deps:
	@missing=""; \
	if command -v dpkg >/dev/null 2>&1; then \
	  for p in $(PKGS); do \
	    dpkg -s $$p 2>/dev/null | grep -q '^Status: install ok installed' || missing="$$missing $$p"; \
	  done; \
	else \
	  for c in meson ninja pkg-config cc; do \
	    command -v $$c >/dev/null 2>&1 || missing="$$missing $$c"; \
	  done; \
	  pkg-config --exists libuv cmocka 2>/dev/null || missing="$$missing libuv-dev cmocka-dev"; \
	fi; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing:$$missing"; \
	    apt-get update -q >/dev/null && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null || exit 1; \
	  else \
	    echo "missing:$$missing"; \
	    echo "install with: sudo apt-get install -y$$missing"; \
	    exit 1; \
	  fi; \
	fi

$(BUILD)/build.ninja: | deps
	meson setup $(BUILD) --buildtype=release

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

demo: build
	@sh tests/demo.sh $(BUILD)

$(SAN_BUILD)/build.ninja: | deps
	meson setup $(SAN_BUILD) --buildtype=debugoptimized \
	  -Db_sanitize=address,undefined -Db_lundef=false

$(TSAN_BUILD)/build.ninja: | deps
	meson setup $(TSAN_BUILD) --buildtype=debugoptimized \
	  -Db_sanitize=thread -Db_lundef=false

# ASan and UBSan on every test; any UBSan report fails the test.
test-san: deps $(SAN_BUILD)/build.ninja
	ninja -C $(SAN_BUILD)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	meson test -C $(SAN_BUILD) --print-errorlogs --num-processes 2 \
	  --no-suite bench

# TSan on the tests that exercise the progress engine's threads.
test-tsan: deps $(TSAN_BUILD)/build.ninja
	ninja -C $(TSAN_BUILD)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	meson test -C $(TSAN_BUILD) --print-errorlogs --num-processes 2 \
	  --suite unit --suite net --suite coll --wrapper 'setarch -R'

test: test-san test-tsan

bench: build
	@sh tests/bench/run_pingpong.sh $(BUILD)

format:
	clang-format -i include/*.h transport/*.[ch] runtime/*.[ch] \
	  launcher/*.c tests/*.[ch] tests/bench/*.c examples/*.c

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(TSAN_BUILD)
