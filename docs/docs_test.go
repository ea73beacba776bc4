// Package docs_test holds the checks that keep the pages in docs/ true to
// the code: a folder, a workflow type, a binary or a starter's command that
// the pages do not name fails here, not in a reader's hands.
package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// folderRow is one row of docs/architecture.md's folder table: the
// folders its first column names and the text of the whole row.
type folderRow struct {
	folders []string
	text    string
}

var backticked = regexp.MustCompile("`([^`]+)`")

// folderTable reads the table under "## Folders".
func folderTable(t *testing.T) []folderRow {
	t.Helper()
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Folders\n")
	if !ok {
		t.Fatal("docs/architecture.md has no \"## Folders\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []folderRow
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		row := folderRow{text: line}
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			row.folders = append(row.folders, strings.TrimSuffix(m[1], "/"))
		}
		rows = append(rows, row)
	}
	if len(rows) < 10 {
		t.Fatalf("docs/architecture.md's folder table has %d rows: not the table this test reads", len(rows))
	}
	return rows
}

// documented says whether the table names folder: in a row of its own, or
// as `sub/` in the row of a folder it is under.
func documented(rows []folderRow, folder string) bool {
	for _, r := range rows {
		for _, f := range r.folders {
			if f == folder {
				return true
			}
			if rel, ok := strings.CutPrefix(folder, f+"/"); ok && strings.Contains(r.text, "`"+rel+"/`") {
				return true
			}
		}
	}
	return false
}

// goFolders lists the folders under root that hold Go code (tests and
// testdata aside).
func goFolders(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	err := filepath.WalkDir(filepath.Join("..", root), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir, _ := filepath.Rel("..", filepath.Dir(path))
		if dir = filepath.ToSlash(dir); !seen[dir] {
			seen[dir] = true
			out = append(out, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every folder of code under cmd/, internal/, workers/ and starters/ (the
// binaries are their folders) is in the folder table.
func TestFolderTableNamesEveryFolder(t *testing.T) {
	rows := folderTable(t)
	for _, root := range []string{"cmd", "internal", "workers", "starters"} {
		for _, f := range goFolders(t, root) {
			if !documented(rows, f) {
				t.Errorf("%s/ is not in docs/architecture.md's folder table", f)
			}
		}
	}
}

// Every workflow type a contract declares is named in the folder table's
// row of its workflows.
func TestFolderTableNamesEveryWorkflowType(t *testing.T) {
	rows := folderTable(t)
	var all strings.Builder
	for _, r := range rows {
		all.WriteString(r.text + "\n")
	}
	files, err := filepath.Glob(filepath.Join("..", "workflows", "*", "contract", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no contracts found: %v", err)
	}
	n := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(node ast.Node) bool {
			spec, ok := node.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range spec.Names {
				if !strings.HasPrefix(name.Name, "WorkflowType") || i >= len(spec.Values) {
					continue
				}
				lit, ok := spec.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				typ, _ := strconv.Unquote(lit.Value)
				n++
				if !strings.Contains(all.String(), "`"+typ+"`") {
					t.Errorf("workflow type %s (%s, %s) is not named in docs/architecture.md's folder table", typ, name.Name, file)
				}
			}
			return true
		})
	}
	if n < 5 {
		t.Fatalf("found %d workflow types: not the contracts this test reads", n)
	}
}
