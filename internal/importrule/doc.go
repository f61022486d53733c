// Package importrule holds no code, only the test that enforces who may
// import whom in this module (importrule_test.go): the renderer, package
// report, is imported by the command alone, so that the domain packages
// return data and the command asks report to render it.
//
// The test reads the import lines of every Go file of the module, tests
// included, so a rule holds for tests too; a package's own files (its
// tests, its external test package) may always import it.
package importrule
