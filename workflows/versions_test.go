// Package workflows_test checks what holds every workflow's versioning
// together: each workflow.GetVersion change ID in the workflow code has its
// row in docs/architecture.md's versioning table, and a recorded history
// (testdata/ of a workflow package) that takes its new branch, so the
// replay tests run the code that branch added.
package workflows_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// noNewBranchHistory are the change IDs whose new branch no recorded
// history takes yet, each with why; keep it short: record one and drop the
// line (the test fails on a line no longer needed).
var noNewBranchHistory = map[string]string{
	"fail-oversized-continue":   "runs only when a room's trimmed state is over MaxContinueBytes, which no room within the bounds reaches; TestRoomTooLargeToContinueFailsLoudly runs it in the test suite",
	"repair-incomplete-commits": "runs only for a version whose commit was interrupted; the record test has no such scenario yet",
	"skip-unselected-versions":  "runs only for a version the fileMap selects nothing of; the record test has no such scenario yet",
	"store-outage-wait":         "runs only when a store goes down mid-job; the record test's stubs have no outage yet",
}

func TestEveryGetVersionIsDocumentedAndRecorded(t *testing.T) {
	calls := getVersionCalls(t, ".")
	if len(calls) == 0 {
		t.Fatal("no workflow.GetVersion call found under workflows/: the parser is looking in the wrong place")
	}
	documented := versioningTable(t, filepath.Join("..", "docs", "architecture.md"))
	recorded := newBranchHistories(t, ".")
	for _, id := range slices.Sorted(maps.Keys(calls)) {
		where := calls[id]
		if !documented[id] {
			t.Errorf("%s: change ID %q is missing from docs/architecture.md's versioning table", where, id)
		}
		files, reason := recorded[id], noNewBranchHistory[id]
		switch {
		case len(files) == 0 && reason == "":
			t.Errorf("%s: no recorded history (workflows/*/testdata) takes %q's new branch (a Version marker with version >= 1): record one, or say why not in noNewBranchHistory", where, id)
		case len(files) > 0 && reason != "":
			t.Errorf("%q is in noNewBranchHistory, but %s takes its new branch: drop the line", id, files[0])
		}
	}
	for id := range documented {
		if _, ok := calls[id]; !ok {
			t.Errorf("docs/architecture.md's versioning table has %q, which no workflow asks for: remove its row", id)
		}
	}
	for id := range noNewBranchHistory {
		if _, ok := calls[id]; !ok {
			t.Errorf("noNewBranchHistory has %q, which no workflow asks for", id)
		}
	}
}

// getVersionCalls finds every workflow.GetVersion call in the non-test Go
// files under root, by change ID, with where the first is. An ID that is
// not a string literal is an error: nothing could check it.
func getVersionCalls(t *testing.T, root string) map[string]string {
	t.Helper()
	calls := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		workflowPkg := "" // the name the file imports the SDK's workflow package as
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "go.temporal.io/sdk/workflow" {
				workflowPkg = "workflow"
				if imp.Name != nil {
					workflowPkg = imp.Name.Name
				}
			}
		}
		if workflowPkg == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "GetVersion" {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != workflowPkg {
				return true
			}
			pos := fset.Position(call.Pos())
			where := fmt.Sprintf("%s:%d", pos.Filename, pos.Line)
			lit, ok := call.Args[1].(*ast.BasicLit)
			if len(call.Args) != 4 || !ok || lit.Kind != token.STRING {
				t.Errorf("%s: a GetVersion whose change ID is not a string literal", where)
				return true
			}
			id, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				return true
			}
			if _, seen := calls[id]; !seen {
				calls[id] = where
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return calls
}

// versioningTable reads the change IDs (in backticks, in the first
// column) of the table under the "## Versioning" heading.
func versioningTable(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ids, in := map[string]bool{}, false
	code := regexp.MustCompile("`([^`]+)`")
	for line := range strings.SplitSeq(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = strings.HasPrefix(line, "## Versioning")
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(line, "|")
			for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
				ids[m[1]] = true
			}
		}
	}
	if len(ids) == 0 {
		t.Fatalf("%s: no versioning table under a \"## Versioning\" heading", path)
	}
	return ids
}

// history is the part of a recorded history (as replaytest.WriteHistory
// writes it) this test reads: the version markers.
type history struct {
	Events []struct {
		Marker *struct {
			Name    string `json:"markerName"`
			Details map[string]struct {
				Payloads []struct {
					Data string `json:"data"` // base64 of JSON
				} `json:"payloads"`
			} `json:"details"`
		} `json:"markerRecordedEventAttributes"`
	} `json:"events"`
}

// newBranchHistories lists, by change ID, the histories under root's
// testdata folders holding a Version marker of that ID with version >= 1.
func newBranchHistories(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") || !slices.Contains(strings.Split(filepath.ToSlash(path), "/"), "testdata") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var h history
		if err := json.Unmarshal(data, &h); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, ev := range h.Events {
			if ev.Marker == nil || ev.Marker.Name != "Version" {
				continue
			}
			var id string
			var version int
			if err := decodePayload(ev.Marker.Details["change-id"].Payloads, &id); err != nil {
				return fmt.Errorf("%s: change-id: %w", path, err)
			}
			if err := decodePayload(ev.Marker.Details["version"].Payloads, &version); err != nil {
				return fmt.Errorf("%s: version of %s: %w", path, id, err)
			}
			if version >= 1 && !slices.Contains(out[id], path) {
				out[id] = append(out[id], path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func decodePayload(payloads []struct {
	Data string `json:"data"`
}, v any) error {
	if len(payloads) != 1 {
		return fmt.Errorf("%d payloads, want 1", len(payloads))
	}
	raw, err := base64.StdEncoding.DecodeString(payloads[0].Data)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}
