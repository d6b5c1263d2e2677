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
#   make plots   redraw docs/img/ from docs/data/ (matplotlib; SVG and PNG)
#   make build   release build only, in build/
#   make clean

BUILD      ?= build
SAN_BUILD  ?= build-san
TSAN_BUILD ?= build-tsan

PKGS := gcc libc6-dev pkg-config meson ninja-build libuv1-dev libcmocka-dev \
        libev-dev libsodium-dev iproute2
# Plots (make plots, and the demo's) are drawn by matplotlib, which Debian
# installs for its own python3: that one runs the scripts.
PLOT_PKGS := python3-matplotlib
PYTHON ?= $(if $(wildcard /usr/bin/python3),/usr/bin/python3,python3)

.PHONY: all deps plot-deps build demo test test-san test-tsan bench plots \
        format clean

all: build

deps:
	@$(call install_missing,$(PKGS))

plot-deps:
	@$(call install_missing,$(PLOT_PKGS))

# Installs the Debian packages $(1) that are missing (as root), or prints
# the apt-get line and fails.
define install_missing
	missing=""; \
	if command -v dpkg >/dev/null 2>&1; then \
	  for p in $(1); do \
	    dpkg -s $$p 2>/dev/null | grep -q '^Status: install ok installed' || missing="$$missing $$p"; \
	  done; \
	else \
	  case " $(1) " in *" libuv1-dev "*) \
	    for c in meson ninja pkg-config cc; do \
	      command -v $$c >/dev/null 2>&1 || missing="$$missing $$c"; \
	    done; \
	    pkg-config --exists libuv cmocka libsodium 2>/dev/null || missing="$$missing libuv-dev cmocka-dev libsodium-dev";; \
	  esac; \
	  case " $(1) " in *" python3-matplotlib "*) \
	    $(PYTHON) -c 'import matplotlib' 2>/dev/null || missing="$$missing python3-matplotlib";; \
	  esac; \
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
endef

$(BUILD)/build.ninja: | deps
	meson setup $(BUILD) --buildtype=release

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

demo: build plot-deps
	@PYTHON=$(PYTHON) sh tests/demo.sh $(BUILD)

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
	meson test -C $(SAN_BUILD) --print-errorlogs --num-processes 2

# TSan on the tests that exercise the progress engine's threads.
test-tsan: deps $(TSAN_BUILD)/build.ninja
	ninja -C $(TSAN_BUILD)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	meson test -C $(TSAN_BUILD) --print-errorlogs --num-processes 2 \
	  --suite unit --suite net --suite coll --wrapper 'setarch -R'

test: test-san test-tsan

bench: build
	@bash tests/bench/run_pingpong.sh $(BUILD)

# The figures of docs/ from the data beside them; each also as PNG (not
# committed: docs/img/*.png is ignored) to look at.
plots: plot-deps
	$(PYTHON) tests/bench/plot_bcast_csv.py docs/data/bcast/bcast_p16.csv \
	  docs/img/bcast_p16.svg \
	  "broadcast on 16 emulated hosts (100 Mbit/s): per-node time against size"
	for pat in rootearly late20; do \
	  $(PYTHON) tests/bench/plot_arrival_csv.py \
	    docs/data/arrival/sweep-$$pat.csv docs/img/arrival_$$pat || exit 1; \
	done
	$(PYTHON) tests/bench/plot_s2p_csv.py docs/data/s2p/s2p_sweeps.csv \
	  docs/img/s2p

format:
	clang-format -i include/*.h transport/*.[ch] runtime/*.[ch] \
	  launcher/*.c tests/*.[ch] tests/bench/*.c examples/*.c

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(TSAN_BUILD)
