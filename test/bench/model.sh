#!/bin/sh
# The report model's benchmark (issue 25): a watch event stream of a 3,000-node / 150,000-pod
# cluster (gen_snapshot's List turned into events by gen_events: every object ADDED, then a
# MODIFIED, DELETED + ADDED or MODIFIED per pod) applied one event at a time. Reports events/s
# on one core, RSS, memory per node and per pod; never asserts (goal: <= 256 MB, >= 10,000
# events/s).
#
#   sh test/bench/model.sh [NODES PODS]     (or: make bench-model; make bench runs it)
# Environment: BUILD (for build/test/gen_snapshot, gen_events, build/bench/bench_model).
# The streams are kept in $BUILD/bench/ and made again only when a generator changes.
# Last line: one JSON object with the figures, for test/bench/run.sh.
set -eu
BUILD=${BUILD:-build}
NODES=${1:-3000}
PODS=${2:-150000}
. test/bench/streams.lib
bench_streams "$NODES" "$PODS"
"$BUILD/bench/bench_model" test/bench/report-policy.yaml "$events"
