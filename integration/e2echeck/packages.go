package e2echeck

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
)

// SamplePackage is a catalog entry for a package of files that npm serves
// (the suite's local registry): every .js and .css file, its first file by
// name the default; suite names the suite in its description and keywords.
func SamplePackage(name, suite string, files map[string][]byte) catalog.Package {
	first := ""
	for p := range files {
		if first == "" || p < first {
			first = p
		}
	}
	return catalog.Package{
		Name: name, Description: "a library the " + suite + " suite publishes", License: "MIT", Filename: first,
		Keywords: []string{suite},
		Autoupdate: catalog.Autoupdate{Source: "npm", Target: name,
			FileMap: []catalog.FileMapEntry{{BasePath: "", Files: []string{"**/*.@(js|css)"}}}},
	}
}

// WriteCatalogEntry writes p where the workers' catalog (CATALOG_DIR dir)
// has it.
func WriteCatalogEntry(dir string, p catalog.Package) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	path := catalog.FilePath(dir, p.Name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// TarballOf is npm's tarball of the files, in the order of their names.
func TarballOf(files map[string][]byte) []byte {
	var entries []registrytest.Entry
	for _, p := range slices.Sorted(maps.Keys(files)) {
		entries = append(entries, registrytest.Entry{Name: p, Body: string(files[p])})
	}
	return registrytest.NPMTarball(entries...)
}
