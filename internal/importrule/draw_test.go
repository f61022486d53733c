package importrule

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated parts of docs/architecture.md from the house")

// TestHouse draws the house from the code's imports (non-test files): the
// rooms on their floors, every arrow between two rooms with the number of
// package imports it stands for, and the arrows that run back up (to a
// room not below the importer), each of which fails the test. Read it
// with
//
//	go test ./internal/importrule -run TestHouse -v
func TestHouse(t *testing.T) {
	root, module, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := moduleFiles(root, module)
	if err != nil {
		t.Fatal(err)
	}
	drawing, up := drawHouse(house, files)
	t.Log("the house, drawn from the imports of non-test files:\n" + drawing)
	for _, a := range up {
		t.Errorf("an arrow runs back up: %s", a)
	}
}

func TestDrawHouseFindsArrowsUp(t *testing.T) {
	plan := []room{
		{folder: "wire", layers: [][]pkg{{{"wire", "", nil}}}},
		{folder: "host", imports: []string{"wire"}, layers: [][]pkg{{{"host/a", "", nil}, {"host/b", "", nil}}}},
		{folder: "flow", imports: []string{"host"}, layers: [][]pkg{{{"flow/c", "", nil}}}},
	}
	files := []goFile{
		{rel: "host/a/a.go", pkg: "host/a", imports: []string{"wire", "host/b"}},
		{rel: "host/a/b.go", pkg: "host/a", imports: []string{"wire"}},
		{rel: "host/b/b.go", pkg: "host/b", imports: []string{"wire", "flow/c"}},
		{rel: "host/b/b_test.go", pkg: "host/b", test: true, imports: []string{"flow/c"}},
		{rel: "flow/c/c.go", pkg: "flow/c", imports: []string{"host/a"}},
	}
	drawing, up := drawHouse(plan, files)
	wantDrawing := `floor 3  flow/ (1 package)
floor 2  host/ (2 packages)
floor 1  wire/ (1 package)
arrows between rooms (package imports):
  flow/ -> host/ 1
  host/ -> flow/ 1
  host/ -> wire/ 2
arrows that run back up: host/ -> flow/
`
	if drawing != wantDrawing {
		t.Errorf("drawHouse() drew\n%s\nwant\n%s", drawing, wantDrawing)
	}
	if want := []string{"host/ -> flow/ (host/b imports flow/c)"}; !slices.Equal(up, want) {
		t.Errorf("drawHouse() arrows up = %q; want %q", up, want)
	}
}

// drawHouse draws the rooms of plan, top floor first, and the arrows
// between them that the non-test files make; up lists the arrows that
// run back up, with the imports that make them.
func drawHouse(plan []room, files []goFile) (drawing string, up []string) {
	floor := floors(plan)
	var b strings.Builder
	for f := slices.Max(floor); f >= 1; f-- {
		var rooms []string
		for i, r := range plan {
			if floor[i] != f {
				continue
			}
			n := 0
			for _, ps := range r.layers {
				n += len(ps)
			}
			s := fmt.Sprintf("%s/ (%d %s", r.folder, n, plural(n, "package"))
			if r.testsOnly {
				s += ", for tests only"
			}
			rooms = append(rooms, s+")")
		}
		fmt.Fprintf(&b, "floor %d  %s\n", f, strings.Join(rooms, ", "))
	}
	arrows := map[[2]int]int{}
	seen := map[[2]string]bool{}
	var upAt [][2]int
	for _, f := range files {
		from := roomOf(plan, f.pkg)
		for _, imp := range f.imports {
			to := roomOf(plan, imp)
			if f.test || from < 0 || to < 0 || from == to || seen[[2]string{f.pkg, imp}] {
				continue
			}
			seen[[2]string{f.pkg, imp}] = true
			arrows[[2]int{from, to}]++
			if floor[to] >= floor[from] {
				if !slices.Contains(upAt, [2]int{from, to}) {
					upAt = append(upAt, [2]int{from, to})
				}
				up = append(up, fmt.Sprintf("%s/ -> %s/ (%s imports %s)", plan[from].folder, plan[to].folder, f.pkg, imp))
			}
		}
	}
	b.WriteString("arrows between rooms (package imports):\n")
	keys := make([][2]int, 0, len(arrows))
	for k := range arrows {
		keys = append(keys, k)
	}
	name := func(k [2]int) string { return plan[k[0]].folder + "/ -> " + plan[k[1]].folder + "/" }
	slices.SortFunc(keys, func(a, c [2]int) int { return strings.Compare(name(a), name(c)) })
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s %d\n", name(k), arrows[k])
	}
	var ups []string
	for _, k := range upAt {
		ups = append(ups, name(k))
	}
	slices.Sort(ups)
	if len(ups) == 0 {
		ups = []string{"none"}
	}
	fmt.Fprintf(&b, "arrows that run back up: %s\n", strings.Join(ups, ", "))
	slices.Sort(up)
	return b.String(), up
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// TestArchitectureDoc holds the generated parts of docs/architecture.md
// (the map of the rooms, the table of who may import whom, the layers in
// the rooms) to the house; -update rewrites them:
//
//	go test ./internal/importrule -run TestArchitectureDoc -update
func TestArchitectureDoc(t *testing.T) {
	root, _, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "docs", "architecture.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(doc)
	for _, part := range docParts(house) {
		got, err = replacePart(got, part.name, part.text)
		if err != nil {
			t.Fatal(err)
		}
	}
	if got == string(doc) {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/architecture.md does not show the house of internal/importrule: run go test ./internal/importrule -run TestArchitectureDoc -update")
}

func TestReplacePart(t *testing.T) {
	doc := "a\n<!-- begin house:map -->\nold\n<!-- end house:map -->\nb\n"
	got, err := replacePart(doc, "map", "new\n")
	if want := "a\n<!-- begin house:map -->\nnew\n<!-- end house:map -->\nb\n"; err != nil || got != want {
		t.Errorf("replacePart() = %q, %v; want %q", got, err, want)
	}
	if _, err := replacePart(doc, "table", "x\n"); err == nil {
		t.Error("replacePart() of a part the doc lacks: no error")
	}
}

// replacePart replaces the text between the markers of the part name.
func replacePart(doc, name, text string) (string, error) {
	begin, end := "<!-- begin house:"+name+" -->\n", "<!-- end house:"+name+" -->"
	before, rest, ok := strings.Cut(doc, begin)
	if !ok {
		return "", fmt.Errorf("docs/architecture.md has no %q", strings.TrimSpace(begin))
	}
	_, after, ok := strings.Cut(rest, end)
	if !ok {
		return "", fmt.Errorf("docs/architecture.md has no %q", end)
	}
	return before + begin + text + end + after, nil
}

// docPart is a generated part of docs/architecture.md.
type docPart struct{ name, text string }

// docParts renders the house as the doc shows it: the map of the rooms,
// bottom first; the table of who may import whom; the layers of the rooms
// that have more than one.
func docParts(plan []room) []docPart {
	floor := floors(plan)
	var m strings.Builder
	m.WriteString("```\n")
	for i, r := range plan {
		fmt.Fprintf(&m, "%-10s floor %d: %s\n", r.folder+"/", floor[i], r.holds)
	}
	m.WriteString("```\n")

	var t strings.Builder
	t.WriteString("| floor | room | may import | packages and what they own |\n|---|---|---|---|\n")
	for i, r := range plan {
		var all []string
		for _, ps := range r.layers {
			for _, p := range ps {
				owns := p.owns
				if p.onlyImportedBy != nil {
					owns += fmt.Sprintf("; imported only by `%s`", strings.Join(p.onlyImportedBy, "` and `"))
				}
				all = append(all, fmt.Sprintf("`%s` (%s)", p.path, owns))
			}
		}
		may := mayImport(plan, i)
		if r.testsOnly {
			may += "; imported by tests only"
		}
		fmt.Fprintf(&t, "| %d | `%s/` | %s | %s |\n", floor[i], r.folder, may, strings.Join(all, ", "))
	}

	var l strings.Builder
	for _, r := range plan {
		if len(r.layers) < 2 {
			continue
		}
		var ls []string
		for i, ps := range r.layers {
			var names []string
			for _, p := range ps {
				names = append(names, "`"+p.path+"`")
			}
			ls = append(ls, fmt.Sprintf("%d %s", i+1, strings.Join(names, ", ")))
		}
		fmt.Fprintf(&l, "- `%s/`: %s\n", r.folder, strings.Join(ls, "; "))
	}
	return []docPart{{"map", m.String()}, {"table", t.String()}, {"layers", l.String()}}
}

// mayImport says which rooms the room i of plan may import: every room
// below it, every one but a few, or the few.
func mayImport(plan []room, i int) string {
	if len(plan[i].imports) == 0 {
		return "nothing of ours"
	}
	var but []string
	for _, below := range plan[:i] {
		if !slices.Contains(plan[i].imports, below.folder) {
			but = append(but, "`"+below.folder+"/`")
		}
	}
	switch {
	case len(but) == 0:
		return "every room below"
	case len(but) <= 2 && len(but) < len(plan[i].imports):
		return "every room below but " + strings.Join(but, " and ")
	}
	var names []string
	for _, f := range plan[i].imports {
		names = append(names, "`"+f+"/`")
	}
	return strings.Join(names, ", ")
}
