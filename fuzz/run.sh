#!/usr/bin/env bash
# Fuzzes every reader for SECONDS each (default 60) with AddressSanitizer.
#   cargo install cargo-fuzz && fuzz/run.sh 300
# cargo-fuzz needs nightly features; RUSTC_BOOTSTRAP=1 enables them on the
# stable toolchain, which is all this machine can install. Seeds come from the
# fixture tree (seeds/); a crash lands in artifacts/TARGET/ and belongs, once
# fixed, in crates/host/tests/fuzz_regressions.rs.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
for t in cpuset proc_interrupts proc_task cmdline_mountinfo dat ringbuf ftrace_text fgraph_text perf_text; do
  mkdir -p "corpus/$t"
  RUSTC_BOOTSTRAP=1 cargo fuzz run -s address "$t" "corpus/$t" "seeds/$t" -- \
    -max_total_time="$secs" -max_len=4096
done
