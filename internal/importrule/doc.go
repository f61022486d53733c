// Package importrule holds no code, only the tests that enforce who may
// import whom in this module (importrule_test.go):
//
//   - the package map (layers): every package has its layer in the flow,
//     and a package's non-test files import only packages of lower layers,
//     so there is no cycle, no stage reaches up the flow and siblings (fleet
//     and bisect, report and ab) stay apart; a package the map does not
//     place fails the test until it is placed there and in
//     docs/architecture.md;
//   - the renderer, package report, is imported by the command alone, so
//     that the domain packages return data and the command asks report to
//     render it. This rule reads tests too; a package's own files (its
//     tests, its external test package) may always import it.
package importrule
