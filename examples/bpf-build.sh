#!/bin/sh
# Builds the BPF objects of an example, in the current folder, with
# Debian's clang (apt-get install clang llvm): bpf-build.sh [--check]
# PROGRAM..., each PROGRAM.c to PROGRAM.o. -ffile-prefix-map keeps the
# build directory out of the debug info, so the objects are reproducible:
# with --check it builds them again and compares them with the committed
# ones, as CI does (scripts/test runs each example's build.sh --check).
set -eu
build() {
	clang -target bpf -O2 -g -ffile-prefix-map="$PWD"=. -I/usr/include/x86_64-linux-gnu -c "$1.c" -o "$2"
}
if [ "${1:-}" = --check ]; then
	shift
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	for p; do
		build "$p" "$tmp/$p.o"
		cmp "$tmp/$p.o" "$p.o" || { echo "$PWD/$p.o differs from a build of $p.c: run build.sh there and commit it" >&2; exit 1; }
	done
	exit 0
fi
for p; do
	build "$p" "$p.o"
done
