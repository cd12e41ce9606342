#!/usr/bin/env bash
# Fuzzes every reader for SECONDS each (default 60) with AddressSanitizer; exits 1 at
# the first target that crashes, leaks past its limits or allocates over 64 MB at once.
# .ci/run runs it for 20 s a target on every submission.
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
regressions=../crates/trace/tests/data/fuzz-regressions
for t in cpuset proc_interrupts proc_task cmdline_mountinfo dat print_fmt ringbuf ftrace_text fgraph_text perf_text ctf; do
  mkdir -p "corpus/$t"
  # New finds go to corpus/ (the first directory, not committed); the committed seeds and
  # the regressions of the trace readers are replayed first. Any single allocation over
  # 64 MB is a failure, as a crash is. libFuzzer reads no more than max_len bytes of a
  # seed: the dat seeds include a whole three-buffer trace-cmd file (157 kB).
  extra=()
  case $t in dat | ringbuf | ftrace_text | fgraph_text | perf_text) extra=("$regressions") ;; esac
  len=4096
  [ "$t" = dat ] && len=262144
  if ! RUSTC_BOOTSTRAP=1 cargo fuzz run -s address "$t" "corpus/$t" "seeds/$t" "${extra[@]}" -- \
    -max_total_time="$secs" -max_len="$len" -malloc_limit_mb=64 -rss_limit_mb=2048 \
    >"corpus/$t.log" 2>&1; then
    tail -40 "corpus/$t.log"
    echo "fuzz: $t failed; the input is in fuzz/artifacts/$t/"
    exit 1
  fi
  echo "fuzz: $t: $(grep -E '^Done' "corpus/$t.log" | tail -1)"
done
