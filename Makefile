# Hearth - build, test, install.
#
#   make            static + shared library, hearth.pc, and the hearth CLI
#   make test       C tests (ASan + UBSan, leak-checked), the client's C
#                   files built for macOS and iOS (make test-darwin), swift test, the
#                   console in headless Chromium (make test-console) and
#                   the cluster on real nats-servers (make test-cluster)
#   make cluster    3 nats-servers (JetStream) + 3 Hearth nodes on loopback
#   make serve      run the server on ./hearth-data (arrives with the server)
#   make bench      benchmarks beside their anchors (not part of the tests)
#   make bench-server  REST PUTs beside nginx and Redis, and the SSE fan-out
#   make bench-cluster  cluster writes/s and fan-out beside their anchors
#   make fuzz       build the libFuzzer targets (clang)
#   make install PREFIX=/usr/local
#
# Run as root, `make` installs missing Debian packages itself.

PREFIX    ?= /usr/local
CC        ?= cc
BUILD     := build
# The libraries linked are listed once, in LIBRARIES (Package.swift is
# checked against it: make test-link): pkg-config modules, then the rest.
PKGS      := $(shell sed -e 's/\#.*//' LIBRARIES | awk 'NF == 3 && $$1 != "-" {print $$1}')
LINK_ONLY := $(shell sed -e 's/\#.*//' LIBRARIES | awk 'NF == 3 && $$1 == "-" {print "-l" $$2}')
APT_PKGS  := libjansson-dev libuv1-dev libssl-dev zlib1g-dev libhttp-parser-dev \
             libwslay-dev libsqlite3-dev pkg-config libnats-dev nats-server

# The version is written once, in include/hearth.h; the soname follows its
# major number (a new major is a new ABI).
version_part = $(shell sed -n 's/^\#define HEARTH_VERSION_$(1) \([0-9]*\)$$/\1/p' include/hearth.h)
VERSION   := $(call version_part,MAJOR).$(call version_part,MINOR).$(call version_part,PATCH)
SONAME    := libhearth.so.$(call version_part,MAJOR)

WARN      := -Wall -Wextra -Werror
BASE_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) -ICSources -Iinclude \
              $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS       = $(shell pkg-config --libs $(PKGS) 2>/dev/null) $(LINK_ONLY)

SRC       := $(sort $(wildcard CSources/*/*.c))
OBJ       := $(SRC:CSources/%.c=$(BUILD)/obj/%.o)
ASAN_OBJ  := $(SRC:CSources/%.c=$(BUILD)/asan/%.o)
TEST_SRC  := $(sort $(wildcard Tests/CTests/*.c))
HEADERS   := include/hearth.h $(wildcard CSources/*/*.h)

OPT_CFLAGS  = $(BASE_CFLAGS) -O2 -g -fPIC -fvisibility=hidden
ASAN_CFLAGS = $(BASE_CFLAGS) -O1 -g -fno-omit-frame-pointer \
              -fsanitize=address,undefined -fno-sanitize-recover=all

.PHONY: all lib cli deps test test-c test-layers test-link test-portable test-darwin test-fuzz test-install test-swift \
        test-e2e test-console test-console-assets test-cluster soak-failover cluster \
        bench bench-server bench-cluster bench-realtime bench-cache bench-rules bench-stall \
        bench-connections bench-fanout bench-bigdata bench-listen-hash \
        bench-triggers \
        fuzz install \
        clean serve

all: lib cli

lib: deps $(BUILD)/libhearth.a $(BUILD)/libhearth.so $(BUILD)/hearth.pc

# Installs missing system packages when root, else says what to install.
deps:
	@if ! pkg-config --exists $(PKGS) 2>/dev/null || \
	    ! [ -f /usr/include/http_parser.h ] || \
	    ! [ -f /usr/include/wslay/wslay.h ] || \
	    ! { command -v nats-server || [ -x /usr/sbin/nats-server ]; } >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "make: installing $(APT_PKGS)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq $(APT_PKGS) >/dev/null; \
	  else \
	    echo "make: missing system packages; run: sudo apt-get install $(APT_PKGS)"; \
	    exit 1; \
	  fi; \
	fi

# Each object depends on the headers it includes, as the compiler lists
# them (-MMD -MP: a .d file beside it, read back below).
$(BUILD)/obj/%.o: CSources/%.c
	@mkdir -p $(dir $@)
	$(CC) $(OPT_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/asan/%.o: CSources/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) -MMD -MP -c $< -o $@

-include $(OBJ:.o=.d) $(ASAN_OBJ:.o=.d)

$(BUILD)/libhearth.a: $(OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libhearth.so: $(OBJ)
	$(CC) -shared -Wl,-soname,$(SONAME) -o $@ $^ $(LIBS)

$(BUILD)/hearth.pc: Makefile LIBRARIES include/hearth.h
	@mkdir -p $(BUILD)
	@printf '%s\n' \
	  'prefix=$(PREFIX)' \
	  'libdir=$${prefix}/lib' \
	  'includedir=$${prefix}/include' \
	  '' \
	  'Name: hearth' \
	  'Description: Self-hostable realtime JSON database (C core)' \
	  'Version: $(VERSION)' \
	  'Requires.private: $(PKGS)' \
	  'Libs: -L$${libdir} -lhearth' \
	  'Libs.private: $(LINK_ONLY)' \
	  'Cflags: -I$${includedir}' > $@

cli: deps
	HEARTH_STRICT=1 swift build --product hearth

# The server on ./hearth-data (override: make serve ARGS="--port 8080").
serve: deps
	HEARTH_STRICT=1 swift build -c release --product hearth
	.build/release/hearth serve $(ARGS)

# ---- tests ----

$(BUILD)/ctest: $(ASAN_OBJ) $(TEST_SRC) $(wildcard Tests/CTests/*.h)
	$(CC) $(ASAN_CFLAGS) $(TEST_SRC) $(ASAN_OBJ) -o $@ $(LIBS)

SAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
           LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan.supp \
           UBSAN_OPTIONS=print_stacktrace=1

# Every #include in CSources/ goes down the order in CSources/LAYERS.
test-layers:
	scripts/check-layers.sh

# Package.swift links what LIBRARIES lists, no more, no less (a read of
# both files, under a second).
test-link:
	scripts/check-link.py

# Nothing Linux-only is called outside the platform layer, CSources/os/
# (a scan of the source, under a second).
test-portable:
	scripts/check-portable.py

# The client's C library as macOS and iOS build it (Package.swift's
# CHearth, CHearthAppleTLS and Vendor/): every file compiled for
# arm64-apple-macos13 and arm64-apple-ios16 with -Wall -Wextra -Werror
# against Darwin's libc headers, then linked into a macOS dylib, with
# clang and the Mach-O linker of the ziglang wheel (README "Apple
# platforms"; about 40 s).
ZIGVENV := $(BUILD)/zigvenv
$(ZIGVENV)/ok:
	python3 -m venv $(ZIGVENV)
	$(ZIGVENV)/bin/pip install -q ziglang
	touch $@

test-darwin: $(ZIGVENV)/ok
	scripts/check-darwin.py $(ZIGVENV)/bin/python

# The console's files are embedded as C arrays (console_assets.c, made by
# the script and committed, so that SwiftPM builds the same source).
test-console-assets:
	scripts/gen-console-assets.py --check

test-c: deps test-layers test-link test-portable test-console-assets $(BUILD)/ctest
	$(SAN_ENV) HEARTH_SHARED=../shared $(BUILD)/ctest

# Each fuzz target, built with gcc and the sanitizers, over its seeds and
# 20,000 deterministic mutations of them.
FUZZ_NAMES := $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c))

$(BUILD)/fuzz-smoke/%: fuzz/fuzz_%.c fuzz/driver.c $(ASAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) $< fuzz/driver.c $(ASAN_OBJ) -o $@ $(LIBS)

test-fuzz: deps $(FUZZ_NAMES:%=$(BUILD)/fuzz-smoke/%)
	@for t in $(FUZZ_NAMES); do \
	  FUZZ_ROUNDS=$$(case $$t in http) echo 300;; https) echo 2000;; *) echo 20000;; esac) $(SAN_ENV) \
	  $(BUILD)/fuzz-smoke/$$t fuzz/seeds/$$t/* || exit 1; \
	done

test-install: lib
	scripts/check-install.sh

# The Swift suites twice: on embedded databases, then as clients of a real
# server (HEARTH_TEST_SERVER=1, Tests/HearthTests/Support.swift).
# The client caches go under build/ (HEARTH_CACHE_DIR), set before the
# test process starts: a test may not setenv while others run.
SWIFT_TEST_ENV := HEARTH_STRICT=1 HEARTH_CACHE_DIR=$(CURDIR)/$(BUILD)/swift-cache
test-swift: deps
	$(SWIFT_TEST_ENV) swift test
	$(SWIFT_TEST_ENV) HEARTH_TEST_SERVER=1 swift test

# The real Python clients (Admin SDK, Pyrebase4) against `hearth serve`,
# the outsider's attacks on a server with rules and keys, running it in
# production (TLS, reload on SIGHUP), and database triggers (a receiver,
# and Python Cloud Functions run from their folder).
PYVENV := $(BUILD)/pyvenv
$(PYVENV)/ok:
	python3 -m venv $(PYVENV)
	$(PYVENV)/bin/pip install -q firebase-admin pyrebase4 websocket-client
	touch $@

# The Python Cloud Functions SDK and functions-framework for the triggers'
# test (Tests/e2e/test_triggers.py runs a functions folder on this venv):
# when they cannot be installed (no network), that test says so and skips.
FNVENV := $(BUILD)/functions-venv
$(FNVENV)/ok:
	python3 -m venv $(FNVENV)
	$(FNVENV)/bin/pip install -q firebase-functions functions-framework || \
	  echo "make: cannot install firebase-functions and functions-framework: the functions test will be skipped"
	touch $@

test-e2e: deps $(PYVENV)/ok $(FNVENV)/ok
	@command -v tmux >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null; \
	  else echo "make: the CLI test needs tmux: sudo apt-get install tmux"; exit 1; fi; }
	HEARTH_STRICT=1 swift build --product hearth
	HEARTH_BIN=.build/debug/hearth $(PYVENV)/bin/python Tests/e2e/test_python_clients.py
	HEARTH_BIN=.build/debug/hearth $(PYVENV)/bin/python Tests/e2e/test_security.py
	HEARTH_BIN=.build/debug/hearth $(PYVENV)/bin/python Tests/e2e/test_operator.py
	HEARTH_BIN=.build/debug/hearth $(PYVENV)/bin/python Tests/e2e/test_auth_keys.py
	HEARTH_BIN=.build/debug/hearth $(PYVENV)/bin/python Tests/e2e/test_sdk_wire.py
	HEARTH_BIN=.build/debug/hearth HEARTH_FUNCTIONS_VENV=$(FNVENV) \
	  $(PYVENV)/bin/python Tests/e2e/test_triggers.py
	HEARTH_BIN=.build/debug/hearth $(PYVENV)/bin/python Tests/e2e/test_pitr.py
	HEARTH_BIN=.build/debug/hearth $(PYVENV)/bin/python Tests/e2e/test_rules_cli.py

# The console in headless Chromium (driven over the DevTools protocol, with
# Python's standard library) against examples/serve.c built with the
# sanitizers. Screenshots go to build/console-screens/.
$(BUILD)/console-serve: examples/serve.c $(ASAN_OBJ)
	$(CC) $(ASAN_CFLAGS) $< $(ASAN_OBJ) -o $@ $(LIBS)

test-console: deps $(BUILD)/console-serve
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "make: installing chromium for the console test"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq chromium >/dev/null; \
	  else echo "make: the console test needs chromium: sudo apt-get install chromium"; exit 1; fi; }
	$(SAN_ENV) HEARTH_SERVE=$(BUILD)/console-serve python3 Tests/e2e/test_console.py


# Cluster mode (README "Cluster"): three nats-servers clustered with
# JetStream and three `hearth serve --cluster` nodes on loopback, on free
# ports; order, compare-and-set, kill -9 of the leader and of a nats-server;
# then faults under acknowledged writes through all three nodes (pauses of
# the leader, a follower and a nats-server, kill -9 during a big write, a
# node cut off from NATS, a paused node restarted; about 3 minutes). One
# scenario: python3 Tests/cluster/test_faults.py NAME (--list names them).
# Between them, point-in-time recovery with --retain (test_pitr.py: backup
# --at and log through any node, the log trimmed, restore --path; about
# 20 s) and attacks by a NATS user without the cluster secret
# (test_attacks.py: forged writes, rules and reads, all refused).
test-cluster: deps
	HEARTH_STRICT=1 swift build --product hearth
	HEARTH_BIN=.build/debug/hearth python3 Tests/cluster/test_cluster.py
	HEARTH_BIN=.build/debug/hearth python3 Tests/cluster/test_pitr.py
	HEARTH_BIN=.build/debug/hearth python3 Tests/cluster/test_attacks.py
	HEARTH_BIN=.build/debug/hearth python3 Tests/cluster/test_triggers.py
	HEARTH_BIN=.build/debug/hearth python3 Tests/cluster/test_faults.py

# The failover figures (not part of `make test`): each nats-server killed
# -9 under writes, ROUNDS times over (default 3).
soak-failover: deps
	HEARTH_STRICT=1 swift build --product hearth
	HEARTH_BIN=.build/debug/hearth python3 Tests/cluster/soak_failover.py

# The same cluster to try by hand: prints the URLs and where NATS's CA,
# user and the cluster secret are, Ctrl-C stops it all (ports from
# CLUSTER_BASE: NATS +1..3, routes +11..13, Hearth +21..23). Secure as in
# production (TLS, a NATS user, the cluster secret); CLUSTER_INSECURE=1:
# plain NATS without authorization, nodes --cluster-insecure.
CLUSTER_BASE ?= 9100
cluster: deps
	HEARTH_STRICT=1 swift build --product hearth
	HEARTH_BIN=.build/debug/hearth python3 Tests/cluster/cluster.py --base $(CLUSTER_BASE) \
	  $(if $(CLUSTER_INSECURE),--insecure)

test: test-layers test-link test-portable test-darwin test-c test-fuzz test-install test-swift test-e2e test-console \
      test-cluster

# ---- benchmarks and fuzzing (never part of `make test`) ----

# Helpers the benchmarks share (bench_common.h): bench_common.c and
# ws_wire.c, the WebSocket client's bytes the C tests use too.
WS_WIRE      := Tests/CTests/ws_wire.c Tests/CTests/ws_wire.h
BENCH_COMMON := bench/bench_common.c bench/bench_common.h $(WS_WIRE)

# Every benchmark program is built one way: the .c files among its
# prerequisites, and the static library when it is one of them.
BENCH_CC = $(CC) $(BASE_CFLAGS) -O2 -g $(filter %.c,$^) $(filter %.a,$^) -o $@ $(LIBS)

# build/bench-NAME from bench/NAME_bench.c (a '-' in NAME is a '_' in the
# file), the shared helpers and the library.
BENCH_C := tree realtime rules stall listen-hash triggers
$(BENCH_C:%=$(BUILD)/bench-%): $(BUILD)/bench-%: $(BENCH_COMMON) $(BUILD)/libhearth.a
	$(BENCH_CC)
$(foreach b,$(BENCH_C),$(eval $(BUILD)/bench-$(b): bench/$(subst -,_,$(b))_bench.c))

$(BUILD)/bench-cache: bench/cache_bench.c $(BUILD)/libhearth.a
	$(BENCH_CC)
$(BUILD)/hearth-serve: examples/serve.c $(BUILD)/libhearth.a
	$(BENCH_CC)
$(BUILD)/write-floor: bench/write_floor.c $(BENCH_COMMON) $(BUILD)/libhearth.a
	$(BENCH_CC)
$(BUILD)/swarm: bench/swarm.c $(WS_WIRE)
	$(BENCH_CC)
$(BUILD)/sse-fanout: bench/sse_fanout.c
	$(BENCH_CC)
$(BUILD)/json-load: bench/json_load.c
	$(BENCH_CC)
$(BUILD)/jetstream-raw: bench/jetstream_raw.c
	$(BENCH_CC)

# The C benchmarks that run by themselves: `make bench-NAME` builds
# build/bench-NAME and runs it.
#   bench-cache        cold start of a client from its cache on disk (issue
#                      goal: under 50 ms)
#   bench-realtime     client databases against an in-process server
#                      (about 15 s)
#   bench-rules        write throughput with a realistic rules file beside
#                      no rules (issue goal: at most 20% slower; about 30 s)
#   bench-stall        how long a 200 MB denied PUT and a 1,000,000-key PUT
#                      stall another client's small GETs (about 5 s)
#   bench-listen-hash  bytes sent to a client reconnecting to 10,000
#                      children it holds, with and without the listen's
#                      hash (issue goal: 100x fewer; a second or two)
#   bench-triggers     trigger delivery (events/s, p50/p99) beside a load
#                      generator hitting the same endpoint, and the cost to
#                      writes of 10 triggers (issue goals: 1,000 events/s,
#                      under 10 %; about 30 s)
BENCH_SOLO := cache realtime rules stall listen-hash triggers
$(BENCH_SOLO:%=bench-%): bench-%: lib $(BUILD)/bench-%
	$(BUILD)/$@

# Server RSS per idle realtime session (one listen each) beside nginx per
# idle keep-alive connection; N=sessions (default: what the open-file
# limit lets one server process hold). About 1 minute.
bench-connections: lib $(BUILD)/hearth-serve $(BUILD)/swarm
	bench/connections_bench.sh

# One write to 10,000 realtime listeners and 10,000 SSE streams beside a
# Redis PUBLISH to 10,000 subscribers, then to as many listeners as the
# open-file limit allows. About 1 minute.
bench-fanout: lib $(BUILD)/hearth-serve $(BUILD)/swarm $(BUILD)/sse-fanout \
              $(BUILD)/write-floor
	bench/fanout_bench.sh

# A 1 GB database written through the server, then a new server's start
# to first answer and RSS beside jansson loading its export file (about
# 2 minutes; SIZE=MB to change the size).
bench-bigdata: lib $(BUILD)/hearth-serve $(BUILD)/json-load
	bench/bigdata_bench.sh

# Cluster mode beside its anchors (single node --fsync always, raw
# JetStream publish-with-ack), insecure and sealed (a cluster secret)
# alternately BENCH_ROUNDS times (default 2), and its fan-out over 3 nodes
# (about 3 min).
bench-cluster: lib $(BUILD)/hearth-serve $(BUILD)/sse-fanout $(BUILD)/jetstream-raw
	python3 bench/cluster_bench.py

# REST PUTs beside nginx and Redis, and the SSE fan-out (server_bench.sh).
bench-server: lib $(BUILD)/hearth-serve $(BUILD)/sse-fanout
	bench/server_bench.sh

bench: lib $(BUILD)/bench-tree $(BUILD)/hearth-serve $(BUILD)/sse-fanout \
       $(BUILD)/bench-realtime $(BUILD)/bench-cache $(BUILD)/bench-rules \
       $(BUILD)/swarm $(BUILD)/json-load $(BUILD)/bench-listen-hash \
       $(BUILD)/write-floor
	$(BUILD)/bench-tree
	$(BUILD)/bench-realtime
	$(BUILD)/bench-cache
	$(BUILD)/bench-rules
	$(BUILD)/bench-listen-hash
	bench/server_bench.sh
	bench/connections_bench.sh
	bench/fanout_bench.sh
	bench/bigdata_bench.sh

FUZZ_CC     ?= clang
FUZZ_TARGETS := $(patsubst fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard fuzz/fuzz_*.c))

$(BUILD)/fuzz/%: fuzz/%.c $(SRC) $(HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(BASE_CFLAGS) -O1 -g -fsanitize=fuzzer,address,undefined \
	  $< $(SRC) -o $@ $(LIBS)

# Builds the coverage-guided fuzzers; run one with e.g.
#   build/fuzz/fuzz_json -max_total_time=300 fuzz/seeds/json
fuzz: deps $(FUZZ_TARGETS)

# ---- install ----

install: lib
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/hearth.h $(DESTDIR)$(PREFIX)/include/hearth.h
	install -m 644 $(BUILD)/libhearth.a $(DESTDIR)$(PREFIX)/lib/libhearth.a
	install -m 755 $(BUILD)/libhearth.so $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libhearth.so
	sed 's|^prefix=.*|prefix=$(PREFIX)|' $(BUILD)/hearth.pc \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/hearth.pc

clean:
	rm -rf $(BUILD)
