# SPDX-License-Identifier: MIT
#
# Convenience wrapper around meson. Every target first makes sure the
# Debian packages it needs are installed (installing them when run as
# root, printing the exact command otherwise), then configures and builds.
#
#   make demo    build (release) and run the demonstration job
#   make test    build with ASan+UBSan and run the whole suite, then the
#                threaded tests under TSan, then a short run of every fuzz
#                harness (skipped without clang and libFuzzer)
#   make bench   ping-pong benchmark beside Open MPI (MINIMP_ANCHORS names
#                the anchors, or none; docs/testing.md)
#   make report  run the benchmarks of docs/performance.md beside the
#                anchors, holding the bench lock for the whole run, each
#                benchmark once nothing else is runnable; save the rows in
#                docs/data/history/ and rewrite the generated tables of
#                docs/performance.md and README.md (QUICK=1: fewer rounds
#                and sizes, under 20 minutes; tests/bench/report.py)
#   make plots   redraw docs/img/ from docs/data/ (matplotlib; SVG and PNG)
#   make build   release build only, in build/
#   make fuzz    build the fuzz harnesses with clang and libFuzzer and run
#                each (FUZZ_RUNS executions, FUZZ_TIME seconds at most;
#                FUZZ=name... picks some; see docs/testing.md)
#   make clean

BUILD      ?= build
SAN_BUILD  ?= build-san
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz

# make fuzz: executions per harness (-1: until FUZZ_TIME), seconds per
# harness (0: no limit), harnesses run at once, which harnesses (all when
# empty, else names such as "frame hosts").
FUZZ_RUNS ?= 100000
FUZZ_TIME ?= 0
FUZZ_JOBS ?= 1
FUZZ      ?=
# make test: every harness for this many executions, at most 60 s each.
FUZZ_CI_RUNS ?= 20000

# A cluster's own software, for the realcluster suite (tests/realcluster):
# OpenSSH, munge and Slurm on the emulated hosts, and Open MPI's mpirun as
# another PMIx launcher. Their daemons are never started by the install
# (below): tests/realcluster starts them inside the emulated hosts only.
CLUSTER_PKGS := openssh-server openssh-client munge slurm-wlm openmpi-bin
PKGS := gcc libc6-dev pkg-config meson ninja-build libuv1-dev libcmocka-dev \
        libev-dev libsodium-dev iproute2 nftables \
        libpmix-dev libmunge-dev groff-base $(CLUSTER_PKGS)
# Plots (make plots, and the demo's) are drawn by matplotlib, which Debian
# installs for its own python3: that one runs the scripts.
PLOT_PKGS := python3-matplotlib
PYTHON ?= $(if $(wildcard /usr/bin/python3),/usr/bin/python3,python3)

# What the fuzz harnesses need besides: clang and its libFuzzer, which
# Debian 12 and later ship in libclang-rt-NN-dev (libclang-rt-dev names the
# default version); older releases have it in clang's own dependencies, so
# libclang-rt-dev is asked for only where the archive has it.
FUZZ_PKGS := clang
FUZZ_RT   := libclang-rt-dev

.PHONY: all deps plot-deps build demo test test-san test-tsan bench report plots \
        format clean fuzz fuzz-deps test-fuzz

all: build

deps:
	@$(call install_missing,$(PKGS))

plot-deps:
	@$(call install_missing,$(PLOT_PKGS))

# Installs the Debian packages $(1) that are missing (as root), or prints
# the apt-get line and fails.
# While it installs, invoke-rc.d is told to start no service (a
# policy-rc.d that says no, where the machine has none): an sshd, munged
# or slurmd started on the machine itself would serve its own network.
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
	    policy=/usr/sbin/policy-rc.d; made=""; \
	    if [ ! -e $$policy ]; then \
	      printf '#!/bin/sh\nexit 101\n' > $$policy && chmod 755 $$policy && made=1; \
	    fi; \
	    apt-get update -q >/dev/null && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null; \
	    rc=$$?; [ -z "$$made" ] || rm -f $$policy; [ $$rc = 0 ] || exit 1; \
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

# clang with libFuzzer: a program using it must link. Installed like the
# other packages when run as root on Debian; otherwise the exact command.
FUZZ_PROBE = printf '%s\n' '\#include <stddef.h>' '\#include <stdint.h>' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return d && n ? 0 : 0; }' | \
  clang -x c - -fsanitize=fuzzer -o /dev/null >/dev/null 2>&1

# Succeeds once clang with libFuzzer works; says what is missing if not.
FUZZ_DEPS_SH = if ! $(FUZZ_PROBE); then \
	  pkgs="$(FUZZ_PKGS)"; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -q >/dev/null; \
	    apt-cache show $(FUZZ_RT) >/dev/null 2>&1 && pkgs="$$pkgs $(FUZZ_RT)"; \
	    echo "installing: $$pkgs"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	      --no-install-recommends $$pkgs >/dev/null; \
	  fi; \
	  $(FUZZ_PROBE) || { \
	    echo "missing: clang with libFuzzer (clang -fsanitize=fuzzer)"; \
	    echo "install with: sudo apt-get install -y $(FUZZ_PKGS) $(FUZZ_RT)"; \
	    false; }; \
	fi

fuzz-deps:
	@$(FUZZ_DEPS_SH)

$(FUZZ_BUILD)/build.ninja: | deps fuzz-deps
	CC=clang meson setup $(FUZZ_BUILD) --buildtype=debugoptimized \
	  -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=true

# One line per harness: executions, rate, libFuzzer's cov and ft. A crash
# or a failed invariant fails the target and names the input.
fuzz: deps fuzz-deps $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD)
	FUZZ_RUNS=$(FUZZ_RUNS) FUZZ_TIME=$(FUZZ_TIME) \
	meson test -C $(FUZZ_BUILD) --suite fuzz --num-processes $(FUZZ_JOBS) \
	  --timeout-multiplier 0 --verbose $(addprefix fuzz_,$(FUZZ))

# Part of `make test`: a short run of every harness, skipped (and said so)
# where clang with libFuzzer cannot be had.
test-fuzz:
	@if { $(FUZZ_DEPS_SH); }; then \
	  $(MAKE) --no-print-directory fuzz FUZZ_RUNS=$(FUZZ_CI_RUNS) \
	    FUZZ_TIME=60 FUZZ_JOBS=2 FUZZ=; \
	else \
	  echo "test-fuzz: skipped: no clang with libFuzzer"; \
	fi

test: test-san test-tsan test-fuzz

bench: build
	@bash tests/bench/run_pingpong.sh $(BUILD)

# Refuses (naming what is wrong) without the anchors (MINIMP_ANCHORS), root
# or an idle machine; docs/performance.md says how its tables are made.
report: build
	@$(PYTHON) tests/bench/report.py run --build $(BUILD) $(if $(QUICK),--quick)

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
	$(PYTHON) tests/bench/plot_coll_csv.py docs/data/coll/coll_p16_2026-11-24.csv \
	  docs/img/allreduce_p16.svg \
	  "allreduce of floats, 16 emulated hosts, 100 Mbit/s"

format:
	clang-format -i include/*.h transport/*.[ch] runtime/*.[ch] \
	  launcher/*.c tests/*.[ch] tests/bench/*.c examples/*.c \
	  mpi/*.[ch] tests/mpi/*.[ch]

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
