#!/bin/sh
# Builds the example BPF objects (../bpf-build.sh); --check compares a new
# build with the committed objects.
set -eu
cd "$(dirname "$0")"
exec ../bpf-build.sh ${1:+"$1"} xdp_lpm broken
