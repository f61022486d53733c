#!/bin/sh
# Builds the example BPF object (../bpf-build.sh); --check compares a new
# build with the committed object.
set -eu
cd "$(dirname "$0")"
exec ../bpf-build.sh ${1:+"$1"} movsx
