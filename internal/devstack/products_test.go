package devstack

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The products' contracts agree with each other, and every task queue has a
// worker main that `make build` builds to bin/<queue>.
func TestProducts(t *testing.T) {
	attrs, err := SearchAttributes()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Package", "Version", "MigrationJob", "Room"} {
		if attrs[name] != "Keyword" {
			t.Errorf("search attribute %s: %q, want Keyword", name, attrs[name])
		}
	}
	queues := TaskQueues()
	if !slices.Contains(queues, "publish") || !slices.Contains(queues, "compress") {
		t.Errorf("task queues %v", queues)
	}
	seen := map[string]bool{}
	for _, q := range queues {
		if seen[q] {
			t.Errorf("task queue %s is declared twice", q)
		}
		seen[q] = true
		if _, err := isMain("../../workers/" + q); err != nil {
			t.Errorf("task queue %s: %v", q, err)
		}
	}
}

func isMain(dir string) (bool, error) {
	src, err := os.ReadFile(filepath.Join(dir, "main.go"))
	if err != nil {
		return false, fmt.Errorf("no worker main: %w", err)
	}
	if !strings.Contains(string(src), "\npackage main\n") {
		return false, fmt.Errorf("%s/main.go is not package main", dir)
	}
	return true, nil
}
