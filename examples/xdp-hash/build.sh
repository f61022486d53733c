#!/bin/sh
# Builds the example BPF object with Debian's clang (apt-get install clang
# llvm), as examples/xdp-lpm/build.sh does: -ffile-prefix-map keeps the
# build directory out of the debug info, so the object is reproducible and
# CI builds it again and compares it with the committed one (--check).
set -eu
cd "$(dirname "$0")"
build() {
	clang -target bpf -O2 -g -ffile-prefix-map="$PWD"=. -I/usr/include/x86_64-linux-gnu -c "$1.c" -o "$2"
}
if [ "${1:-}" = --check ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	build xdp_hash "$tmp/xdp_hash.o"
	cmp "$tmp/xdp_hash.o" xdp_hash.o || { echo "xdp_hash.o differs from a build of xdp_hash.c: run $0 and commit it" >&2; exit 1; }
	exit 0
fi
build xdp_hash xdp_hash.o
