// Package series measures a patch series patch by patch, the way a
// reviewer of a BPF series wants its numbers: every commit built, booted
// and compared with its parent and with the base.
//
// A series comes from a git range (BASE..TIP of a repository, checked out
// in it and left where it was) or from mail: an mbox as git format-patch or
// b4 am writes it, applied on BASE with git am --message-id in a worktree
// of its own, one patch at a time, so that a patch that does not apply is
// named and the series stops there. The committer and its date are fixed,
// so the same mbox on the same base makes the same commits.
//
// Building, measuring and judging are a bisection's (package bisect): the
// same Builder builds each commit incrementally in one build directory,
// the same state keeps the kernels by commit and the measurements by image
// hash, and Bench.CompareKernels judges each pair with compare's verdicts.
// Hence what a series does not do:
//
//   - a patch whose kernel image is byte-identical to the one it is
//     compared with boots nothing (a docs-only patch costs a build);
//   - a rerun of an interrupted series builds and boots nothing twice;
//   - a patch that does not build or boot is named with the end of its log,
//     and the next patch is compared with the last one that did, so no
//     change is lost or counted twice.
//
// Result.Outcome maps the series to compare's exit codes, and Result.View
// is what package report renders as text, Markdown, JSON, HTML, and a
// plain-text reply to the cover letter.
package series
