# gpu-admission — build, test, run.
#
#   make deps                     install the Debian packages it builds and tests with (root or
#                                 sudo; BENCH=1 adds make bench's) and, with no Go new enough on
#                                 the machine, the pinned Go toolchain into ~/.cache/gpu-admission
#                                 (.ci/go); make run and make test install what they miss too,
#                                 so that they work on a fresh machine
#   make                          build bin/gpu-admission (stops and names any missing package)
#   make check                    the edit loop (40-80 s): lint, unit, golden, the CLI end-to-end script
#   make test                     every suite, a real Kubernetes control plane included; ends with
#                                 "N passed, N failed". The first time on a machine it builds that
#                                 control plane from source (20-70 min on 2 cores, about 10 GB of
#                                 disk); then 20-30 min of tests (README.md, "Two commands")
#   make SANITIZE=address,undefined test
#   make run                      local TLS webhook on https://127.0.0.1:8443 (embedded policy;
#                                 ADDR=127.0.0.1:9443 for another address)
#   make install                  binary, man page and shell completions under PREFIX (DESTDIR too)
#   make bench | fuzz | lint | clean
#
# Variables: CC, O (optimisation, default -O2), SANITIZE, VALGRIND=1 (tests under valgrind),
# DEVELOPER=1 (warnings are errors; make check, make test and CI set it),
# PREFIX (default /usr/local) and DESTDIR for install, ADDR for run. The build records
# CC, O, DEVELOPER, CFLAGS and LDFLAGS (build/flags.stamp): changing one rebuilds everything.

CC       ?= cc
O        ?= -O2
PKGS     := libmicrohttpd jansson yaml-0.1 openssl gnutls libcurl
# The release version is the file VERSION (the chart's appVersion follows it, and
# test/e2e/cli.sh checks they agree); the revision is the git commit built.
VERSION  := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
REVISION := $(shell git describe --always --dirty --abbrev=7 --exclude='*' 2>/dev/null || echo unknown)
PREFIX   ?= /usr/local
DESTDIR  ?=
ADDR     ?= 127.0.0.1:8443

WARN     := -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
            -Wformat=2 -Wvla -Wpointer-arith -Wcast-qual -Wundef -Wno-unused-parameter \
            -Wno-format-truncation
# -Wno-format-truncation: messages go into fixed buffers and are cut on purpose
# (reporting an error never allocates); snprintf bounds every write.
# -Werror only for developers: a newer compiler's new warning must not break a user's
# build, while make check, make test and CI (DEVELOPER=1) still fail on any warning.
ifneq ($(filter check test,$(MAKECMDGOALS)),)
DEVELOPER ?= 1
endif
ifeq ($(DEVELOPER),1)
WARN     += -Werror
endif
# Passed on to the makes the tests run (make install in test/e2e/cli.sh), so that they build
# with the same flags and rebuild nothing (command-line variables travel in MAKEFLAGS).
ifneq ($(DEVELOPER),)
export DEVELOPER
endif
CFLAGS   ?=
CFLAGS   += -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(O) -g $(WARN) \
            -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIE \
            -DGPU_ADMISSION_VERSION='"$(VERSION)"' -DGPU_ADMISSION_REVISION='"$(REVISION)"' -Ipkg
LDFLAGS  ?=
LDFLAGS  += -pie -Wl,-z,relro,-z,now
ifneq ($(SANITIZE),)
CFLAGS   += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=$(SANITIZE)
# Sanitizer builds live apart (objects and binary) so they never mix with normal ones.
BUILD    ?= build/san
BIN      := $(BUILD)/bin/gpu-admission
else
BUILD    ?= build
BIN      := bin/gpu-admission
endif

DEPS_OK  := build/.deps-ok

PKG_SRC  := $(wildcard pkg/*/*.c)
PKG_OBJ  := $(PKG_SRC:%.c=$(BUILD)/%.o)
# The default policy is a YAML file of its own, compiled in as bytes (below).
DEFAULT_CONFIG   := pkg/policy/default-config.yaml
DEFAULT_CONFIG_C := $(BUILD)/gen/default_config.c
PKG_OBJ  += $(BUILD)/gen/default_config.o
CMD_SRC  := $(wildcard cmd/gpu-admission/*.c)
CMD_OBJ  := $(CMD_SRC:%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/libgpuadmission.a

UNIT_SRC := $(wildcard test/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:test/unit/%.c=$(BUILD)/test/%)
TOOL_SRC := $(wildcard test/tools/*.c)
TOOL_BIN := $(TOOL_SRC:test/tools/%.c=$(BUILD)/test/%)

all: $(BIN)

# Asks, never installs: a missing package stops the build with its name and
# `make deps` (the one target that installs)... except for the README's two commands,
# `make run` and `make test`, which must work on a fresh Debian 12 machine as they
# are: for them the same script installs what is missing (and does nothing when
# nothing is; run calls it itself, as its builds are sub-makes).
DEPS_CHECK := $(if $(filter test,$(MAKECMDGOALS)),,--check)
$(DEPS_OK): .ci/deps
	@mkdir -p $(@D)
	@sh .ci/deps $(DEPS_CHECK) build
	@touch $@

deps:
	@sh .ci/deps test
	@sh .ci/go >/dev/null
	@$(if $(filter 1,$(BENCH)),sh .ci/deps bench)

# pkg-config is asked only after the dependency check has run.
pkgcflags = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
pkglibs   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread

$(BUILD)/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(pkgcflags) -MMD -MP -c $< -o $@

# pkg/policy/default-config.yaml as a C array of its bytes and a NUL (policy/config_int.h):
# print-default-config prints it byte for byte, and it is edited as the YAML it is. od and
# awk write the array because xxd -i is not on a fresh Debian and C11 has no #embed.
$(DEFAULT_CONFIG_C): $(DEFAULT_CONFIG)
	@mkdir -p $(@D)
	@od -An -v -tx1 $(DEFAULT_CONFIG) >$@.od
	@{ echo '/* Generated by the Makefile from $(DEFAULT_CONFIG): edit that file. */'; \
	  echo '#include "policy/config_int.h"'; echo; \
	  echo 'const unsigned char config_default_text[] = {'; \
	  awk '{ s = ""; for (i = 1; i <= NF; i++) s = s "0x" $$i ","; print "\t" s }' $@.od; \
	  printf '\t0x00\n};\n'; \
	  echo 'const size_t config_default_len = sizeof config_default_text - 1;'; } >$@.tmp
	@rm -f $@.od
	@mv $@.tmp $@
$(BUILD)/gen/default_config.o: $(DEFAULT_CONFIG_C) | $(DEPS_OK)
	$(CC) $(CFLAGS) $(pkgcflags) -MMD -MP -c $< -o $@

# The version is compiled into cmd_version.o alone; the stamp changes only when
# VERSION or the revision does, so a commit rebuilds that file and nothing else.
# RUN_QUERY=1 (make run's "is anything to build?") asks about the stamp as it stands, once
# make run has refreshed it: with FORCE, make -q would always answer "out of date".
VERSION_STAMP := $(BUILD)/version.stamp
$(VERSION_STAMP): $(if $(RUN_QUERY),,FORCE)
	@mkdir -p $(@D)
	@echo '$(VERSION) $(REVISION)' | cmp -s - $@ 2>/dev/null || echo '$(VERSION) $(REVISION)' >$@
$(BUILD)/cmd/gpu-admission/cmd_version.o: $(VERSION_STAMP)
.PHONY: FORCE
FORCE:

# The flags every object and link is made with (CC, O, DEVELOPER's -Werror, CFLAGS, LDFLAGS;
# SANITIZE builds apart, in build/san), but for the version, which the stamp above keeps to
# cmd_version.o: changing any of them rebuilds everything, as a changed header would, so
# make DEVELOPER=1 after make compiles every file again with -Werror.
BUILD_FLAGS := $(CC) $(filter-out -DGPU_ADMISSION_VERSION=% -DGPU_ADMISSION_REVISION=%,$(CFLAGS)) $(LDFLAGS)
FLAGS_STAMP := $(BUILD)/flags.stamp
$(FLAGS_STAMP): $(if $(RUN_QUERY),,FORCE)
	@mkdir -p $(@D)
	@printf '%s\n' '$(subst ','\'',$(BUILD_FLAGS))' | cmp -s - $@ 2>/dev/null || \
	  printf '%s\n' '$(subst ','\'',$(BUILD_FLAGS))' >$@
$(PKG_OBJ) $(CMD_OBJ) $(BIN): $(FLAGS_STAMP)

$(LIB): $(PKG_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(CMD_OBJ) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $(CMD_OBJ) $(LIB) $(LDFLAGS) $(pkglibs)

$(BUILD)/test/%: test/unit/%.c $(LIB) test/unit/check.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(pkgcflags) -Itest/unit -o $@ $(filter %.c,$^) $(LIB) $(LDFLAGS) $(pkglibs)

# The unit tests' shared pieces, linked into the tests that use them: one fake API server, one report fixture.
FAKE_API_TESTS := test_kubeclient test_report_watch test_report_publish
$(FAKE_API_TESTS:%=$(BUILD)/test/%): test/unit/fake_api.c test/unit/fake_api.h
REPORT_FIXTURE_TESTS := test_report test_report_publish
$(REPORT_FIXTURE_TESTS:%=$(BUILD)/test/%): test/unit/report_fixture.c test/unit/report_fixture.h

# The scanner's portable C (no SSE2), as machines other than x86-64 run it: test_scan again, over it.
# scan.c holds every SSE2 path; scan_keys.c and scan_compare.c have none and come from the library.
UNIT_BIN += $(BUILD)/test/test_scan_portable
$(BUILD)/test/test_scan_portable: test/unit/test_scan.c pkg/text/scan.c $(LIB) test/unit/check.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DSCAN_PORTABLE $(pkgcflags) -Itest/unit -o $@ test/unit/test_scan.c pkg/text/scan.c $(LIB) $(LDFLAGS) $(pkglibs)

# test_policy_fields records every member lookup the policy makes (see the test).
$(BUILD)/test/test_policy_fields: LDFLAGS += -Wl,--wrap=json_object_get -Wl,--wrap=json_object_iter
# test_strbuf fails each realloc in turn, and counts what is freed (see the test).
$(BUILD)/test/test_strbuf: LDFLAGS += -Wl,--wrap=realloc -Wl,--wrap=free

$(BUILD)/test/%: test/tools/%.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(pkgcflags) -Itest/unit -o $@ $(filter %.c,$^) $(LIB) $(LDFLAGS) $(pkglibs)
# watch_metrics runs the watch against the unit tests' fake API server.
$(BUILD)/test/watch_metrics: test/unit/fake_api.c test/unit/fake_api.h

test-deps:
	@sh .ci/deps $(DEPS_CHECK) test

# The Go the cluster suite builds its control plane with (.ci/go): the machine's when new
# enough, else the pinned toolchain, downloaded from the Go module proxy into the user's
# cache (make test fetches it as make deps does; only when its SUITES include cluster).
# make test-cluster and the cluster benchmarks only ask (test/cluster/build.sh).
go-deps: test-deps
	@case " $${SUITES:-cluster} " in *" cluster "*) sh .ci/go $(DEPS_CHECK) >/dev/null ;; esac

test: $(BIN) $(UNIT_BIN) $(TOOL_BIN) test-deps go-deps
	@$(MAKE) --no-print-directory fuzz-build >/dev/null
	@BUILD=$(BUILD) BIN=$(BIN) VALGRIND=$(VALGRIND) sh test/run

# The edit loop: lint, the C suites, the golden cases and the CLI's end-to-end script.
check: $(BIN) $(UNIT_BIN) $(TOOL_BIN) test-deps
	@BUILD=$(BUILD) BIN=$(BIN) VALGRIND=$(VALGRIND) SUITES="lint unit golden e2e/cli" sh test/run

# make run: the build stays quiet (its log is shown only when it fails); the server
# binds before test/run-local prints how to reach it.
run:
	@sh .ci/deps run
	@mkdir -p $(BUILD)
	@$(MAKE) --no-print-directory -s $(VERSION_STAMP) 2>/dev/null || true
	@$(MAKE) --no-print-directory -q $(BIN) RUN_QUERY=1 2>/dev/null || echo "make run: building $(BIN) ..."
	@$(MAKE) --no-print-directory -s $(BIN) >$(BUILD)/run-build.log 2>&1 || { cat $(BUILD)/run-build.log; exit 1; }
	@ADDR='$(ADDR)' sh test/run-local $(BIN)

# Generated from the help texts of the binary itself (see cmd/gpu-admission/cli_help.c).
GEN := $(BUILD)/gen
$(GEN)/gpu-admission.1: $(BIN)
	@mkdir -p $(@D)
	$(BIN) help --man >$@.tmp && mv $@.tmp $@
$(GEN)/gpu-admission.bash: $(BIN)
	@mkdir -p $(@D)
	$(BIN) completion bash >$@.tmp && mv $@.tmp $@
$(GEN)/_gpu-admission: $(BIN)
	@mkdir -p $(@D)
	$(BIN) completion zsh >$@.tmp && mv $@.tmp $@

install: $(BIN) $(GEN)/gpu-admission.1 $(GEN)/gpu-admission.bash $(GEN)/_gpu-admission
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/gpu-admission
	install -m 0644 $(GEN)/gpu-admission.1 $(DESTDIR)$(PREFIX)/share/man/man1/gpu-admission.1
	install -m 0644 $(GEN)/gpu-admission.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/gpu-admission
	install -m 0644 $(GEN)/_gpu-admission $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_gpu-admission

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/gpu-admission $(DESTDIR)$(PREFIX)/share/man/man1/gpu-admission.1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/gpu-admission \
	  $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_gpu-admission

lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance \
	  --std=c11 --inline-suppr --library=.ci/cppcheck.cfg -Ipkg pkg cmd

clean:
	rm -rf build bin

.PHONY: all deps check test test-deps go-deps run install uninstall lint clean

# ---- Packaging: chart, plain manifests, container image ----
# manifests:  regenerate manifests/gpu-admission.yaml from charts/gpu-admission
#             (make test fails when they differ)
# image:      build the image with podman (makes the local debian:bookworm-slim
#             base from the Debian mirror first if missing; see test/image/)
# image-test: slow; build the image and run it for real (version, check-config,
#             serve over TLS through a published port, uid 65532, read-only root)
manifests:
	@sh test/helm/manifests.sh >manifests/gpu-admission.yaml.tmp
	@mv manifests/gpu-admission.yaml.tmp manifests/gpu-admission.yaml
	@echo "manifests/gpu-admission.yaml regenerated"

image:
	@sh test/image/build.sh

image-test:
	@sh test/image/test.sh

.PHONY: manifests image image-test

# ---- The real control plane (test/cluster/README.md) ----
# test-cluster:  etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kubectl
#                built from pinned Go modules (cached per machine), the chart installed with
#                helm and every guarantee checked on them; make test runs it too
# bench-cluster: pods per second, client latency, kube-apiserver's webhook latency and CPU per
#                pod, gpu-admission beside no webhook, Go webhooks, the in-process
#                policies and Kyverno, one and 8 clients (figures only; test/bench/README.md)
test-cluster: $(BIN) test-deps
	@BIN=$(BIN) sh test/cluster/run

# soak-cluster:  the day-2 scenario (test/cluster/scenarios/80-day2.sh) long: every
#                disruption inside 65 s of load at 50 requests/s, and 3,000 requests
#                in each mode of the rollout path, about 13 minutes of load in all
#                (make test runs it bounded: 40 s a window, 1,000 a mode)
soak-cluster: $(BIN) test-deps
	@BIN=$(BIN) CLUSTER_MINORS=$${CLUSTER_MINORS:-1.34} CLUSTER_SCENARIOS=80-day2 VERBOSE=1 \
	  DAY2_WINDOW_S=$${DAY2_WINDOW_S:-65} DAY2_COUNT=$${DAY2_COUNT:-3000} sh test/cluster/run

bench-cluster: $(BIN) test-deps
	@BIN=$(BIN) sh test/bench/cluster

# bench-watch-cluster: `gpu-admission watch` listing and watching BENCH_NODES (5,000) nodes and
# BENCH_PODS (150,000) pods from kube-apiserver, and `serve --claim-lookups` syncing
# BENCH_CLAIMS (50,000) ResourceClaims (about 12 minutes)
bench-watch-cluster: $(BIN) test-deps
	@BIN=$(BIN) sh test/bench/watch-cluster

.PHONY: test-cluster soak-cluster bench-cluster bench-watch-cluster

# ---- Benchmarks, all in test/bench/: figures, never assertions (test/bench/run.sh) ----
$(BUILD)/bench/%: test/bench/%.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -D_GNU_SOURCE $(pkgcflags) -o $@ $< $(LIB) $(LDFLAGS) $(pkglibs)

bench: $(BIN) $(BUILD)/bench/bench_review $(BUILD)/bench/loadgen $(BUILD)/test/gen_manifests \
       $(BUILD)/test/gen_snapshot $(BUILD)/test/gen_review $(BUILD)/bench/bench_model $(BUILD)/test/gen_events \
       $(BUILD)/bench/fake_apiserver test-deps
	@sh .ci/deps --check bench
	@BUILD=$(BUILD) BIN=$(BIN) sh test/bench/run.sh

# Cost report benchmark alone: 5,000 nodes / 150,000 pods (a 1.9 GB generated snapshot, kept in build/bench).
bench-report: $(BIN) $(BUILD)/test/gen_snapshot test-deps
	@BUILD=$(BUILD) BIN=$(BIN) sh test/bench/report.sh

# The report model fed the watch events of 3,000 nodes / 150,000 pods (streams kept in build/bench).
bench-model: $(BUILD)/bench/bench_model $(BUILD)/test/gen_snapshot $(BUILD)/test/gen_events test-deps
	@BUILD=$(BUILD) sh test/bench/model.sh

# `gpu-admission watch` against a fake API server serving the same cluster: lists, then ~200,000 watch events.
bench-watch: $(BIN) $(BUILD)/bench/fake_apiserver $(BUILD)/test/gen_snapshot $(BUILD)/test/gen_events test-deps
	@BUILD=$(BUILD) BIN=$(BIN) sh test/bench/watch.sh

.PHONY: bench bench-report bench-model bench-watch

# Audit benchmark: `audit` over 10,000 generated pod templates, timed (reported, never asserted).
bench-audit: $(BIN) $(BUILD)/test/gen_manifests
	@BUILD=$(BUILD) BIN=$(BIN) sh test/bench/audit.sh
.PHONY: bench-audit

# ---- Fuzzing (libFuzzer, clang) ----
# fuzz:  build every test/fuzz/fuzz_*.c target and run each for FUZZ_SECONDS,
#        seeded from test/fuzz/seeds.sh (golden requests, configs, manifests);
#        crashes land in build/fuzz/crashes/<target>/. make test runs a short
#        smoke pass (test/e2e/fuzz.sh).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS   := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O1 -g -Ipkg \
                -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_OBJ     := $(PKG_SRC:%.c=build/fuzz/obj/%.o) build/fuzz/obj/gen/default_config.o
FUZZ_BIN     := $(patsubst test/fuzz/%.c,build/fuzz/%,$(wildcard test/fuzz/fuzz_*.c))

build/fuzz/obj/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(pkgcflags) -MMD -MP -c $< -o $@
build/fuzz/obj/gen/default_config.o: $(DEFAULT_CONFIG_C) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(pkgcflags) -MMD -MP -c $< -o $@

build/fuzz/fuzz_%: test/fuzz/fuzz_%.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer $(pkgcflags) -MMD -MP -o $@ $< $(FUZZ_OBJ) $(pkglibs)

.SECONDARY: $(FUZZ_OBJ)
fuzz-build: test-deps $(FUZZ_BIN)

fuzz: fuzz-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) sh test/fuzz/run.sh $(FUZZ_BIN)

.PHONY: fuzz fuzz-build
-include $(PKG_OBJ:.o=.d) $(CMD_OBJ:.o=.d) $(FUZZ_OBJ:.o=.d) $(FUZZ_BIN:=.d)

