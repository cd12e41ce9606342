#!/usr/bin/env bash
# Fuzzes every reader for SECONDS each (default 60) with AddressSanitizer.
#   cargo install cargo-fuzz && fuzz/run.sh 300
# cargo-fuzz needs nightly features; RUSTC_BOOTSTRAP=1 enables them on the
# stable toolchain, which is all this machine can install. Seeds come from the
# fixture tree and the trace test data (seeds/); a crash or slow input lands in
# artifacts/TARGET/. Once fixed, a trace-reader input belongs in
# crates/trace/tests/data/fuzz-regressions/ (dat-*: the dat target; perf-*: the
# perf_text target; any other name: a ringbuf page), where the fuzz_regressions_stay_fixed
# tests of crates/trace/tests/dat/robust.rs and perf_text.rs run it as the fuzzer
# does; a host-reader input becomes a case in crates/host/tests/malformed.rs.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
for t in cpuset proc_interrupts proc_task cmdline_mountinfo dat ringbuf ftrace_text fgraph_text perf_text; do
  mkdir -p "corpus/$t"
  # libFuzzer reads no more than max_len bytes of a seed: the dat seeds include a
  # whole three-buffer trace-cmd file (seeds/dat/multi-buffer.v7.dat, 157 kB).
  len=4096
  [ "$t" = dat ] && len=262144
  RUSTC_BOOTSTRAP=1 cargo fuzz run -s address "$t" "corpus/$t" "seeds/$t" -- \
    -max_total_time="$secs" -max_len="$len"
done
