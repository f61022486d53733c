#!/bin/sh
# Builds the example BPF objects of its directory, one per .c file, with
# Debian's clang (apt-get install clang llvm); other examples' build.sh
# link to it. -ffile-prefix-map keeps the build directory out of the debug
# info, so the objects are reproducible: CI builds them again and compares
# them with the committed ones (--check).
set -eu
cd "$(dirname "$0")"
build() {
	clang -target bpf -O2 -g -ffile-prefix-map="$PWD"=. -I/usr/include/x86_64-linux-gnu -c "$1.c" -o "$2"
}
if [ "${1:-}" = --check ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	for c in *.c; do
		p=${c%.c}
		build "$p" "$tmp/$p.o"
		cmp "$tmp/$p.o" "$p.o" || { echo "$p.o differs from a build of $p.c: run $0 and commit it" >&2; exit 1; }
	done
	exit 0
fi
for c in *.c; do
	build "${c%.c}" "${c%.c}.o"
done
