#!/usr/bin/env bash
# One line saying where a benchmark's figures were taken: the CPU model and the flags the
# engine's fast paths care about, cores, kernel, and the load average when it is printed.
# The benchmark scripts print it before and after their runs, beside their tables; quote it with
# the figures (BENCHMARKS.md names the machine of each table).
set -u
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
[ -n "$model" ] || model=$(uname -m)
flags=$(sed -n 's/^flags[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
have=
for f in sse4_2 avx2 avx512f bmi2 aes sha_ni; do
  case " $flags " in *" $f "*) have="$have $f" ;; esac
done
echo "machine: $model, $(nproc) cores, flags:${have:- none of note}; kernel $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
