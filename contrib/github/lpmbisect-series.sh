#!/bin/sh
# Runs lpmbisect series on a pull request's commits, writes its markdown
# report to the job's step summary and its per-patch annotations (--format
# github, resumed from the series' state: no boot) to the log, where the
# runner turns them into annotations. A GitHub Actions runner sets
# GITHUB_BASE_REF (the target branch), GITHUB_SHA (the commit under test)
# and GITHUB_STEP_SUMMARY (the summary file); LPMBISECT_SERIES_ARGS adds
# flags (e.g. "--accel icount --build-command ./build.sh"). The exit code
# is lpmbisect's: 0 no patch regresses, 1 one does, 3 inconclusive.
set -u
: "${GITHUB_BASE_REF:?not a pull request (GITHUB_BASE_REF is empty)}"
: "${GITHUB_SHA:?GITHUB_SHA is empty}"
: "${GITHUB_STEP_SUMMARY:?GITHUB_STEP_SUMMARY is empty}"
base=$(git merge-base "origin/$GITHUB_BASE_REF" "$GITHUB_SHA") || {
	echo "::error title=lpmbisect::no merge base of origin/$GITHUB_BASE_REF and $GITHUB_SHA (fetch with fetch-depth: 0)"
	exit 2
}
report=$(mktemp)
trap 'rm -f "$report"' EXIT
# shellcheck disable=SC2086 # LPMBISECT_SERIES_ARGS is a list of flags
lpmbisect series --repo . --format markdown ${LPMBISECT_SERIES_ARGS:-} "$base..$GITHUB_SHA" >"$report"
code=$?
case $code in
0 | 1 | 3)
	# shellcheck disable=SC2086
	lpmbisect series --repo . --format github ${LPMBISECT_SERIES_ARGS:-} "$base..$GITHUB_SHA"
	;;
esac
{
	echo "## lpmbisect series $base..$GITHUB_SHA"
	echo
	cat "$report"
} >>"$GITHUB_STEP_SUMMARY"
case $code in
0) ;;
1) echo "::error title=lpmbisect::a patch regresses against its parent (see the step summary)" ;;
3) echo "::warning title=lpmbisect::inconclusive: a patch stayed UNKNOWN or did not build or boot (see the step summary)" ;;
*) echo "::error title=lpmbisect::lpmbisect series failed with exit code $code" ;;
esac
exit "$code"
