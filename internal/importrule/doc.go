// Package importrule holds no code, only the plan of the module's house
// and the tests that hold the code and docs/architecture.md to it:
//
//   - house (house_test.go) is the plan, written once: the rooms (the top
//     folders, one layer of the flow each), bottom first, what each may
//     import, and each room's packages in layers;
//   - TestPlan: every package is placed; a package's non-test files
//     import only from the rooms its room may import and, within its room,
//     only packages of lower layers, so there is no cycle, no stage reaches
//     up the flow and siblings (fleet and bisect) stay apart; the test
//     harnesses (testbed/) are imported by tests alone; the renderer
//     (present/report) by the command and the server alone, tests
//     included;
//   - TestHouse draws the house from the imports, and fails on an arrow
//     that runs back up (go test ./internal/importrule -run TestHouse -v);
//   - TestArchitectureDoc holds the map, the table and the layers of
//     docs/architecture.md to the plan; -update rewrites them.
package importrule
