// Package campaign is what bisections (package bisect), patch series
// (package series) and nights (package nightly) share: a campaign measures
// many kernels against two measured endpoints and classifies each.
//
//   - Bench (bench.go) measures kernels and classifies them against the
//     endpoints with a Judge (classify.go): the endpoints' effect first
//     (SetEndpoints), then each candidate (ClassifyKernel), with
//     compare.Adaptive's looks and at most MaxBoots boots while a verdict
//     stays UNKNOWN, and the re-check of a culprit against its parent
//     (Recheck);
//   - a Measurer (measurer.go) boots the kernels: vmMeasurer through a
//     measure.Setup, or a fake in the tests that boot nothing;
//   - Store (store.go) keeps every kernel's results by image SHA-256, so a
//     kernel is measured once however often a campaign meets it, and the
//     insight documents of the re-check (InsightDiff);
//   - State (state.go) is a campaign's record on disk, which makes it
//     resumable: its steps, the kernels it built, its logs and report;
//   - Setup (setup.go) is what every campaign is made from: the bench, how
//     a commit is built (BuildCommit, a kbuild.Builder or a fleet's build
//     queue) and the re-check's boots.
//
// Its classes (Good, Bad, Skip and their exit codes) are git bisect run's,
// so a bisection over commits and one over images decide alike.
package campaign
