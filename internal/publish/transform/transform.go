// Package transform does the per-file CPU work of a publish: integrity hashes,
// content types, minified twins of scripts and stylesheets, and brotli/gzip
// representations. Everything here is deterministic — the same input and
// Options give the same bytes on every machine — so outputs can be reused
// across versions whenever Fingerprint matches.
package transform

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
)

// Options selects which minified twins are generated, and the library's
// size limit: a larger file is stored as is.
type Options struct {
	MinifyJS, MinifyCSS bool
	// MaxFileSize is the library's limit; 0 means DefaultMaxFileSize.
	MaxFileSize int64 `json:",omitempty"`
}

// Output is one file to publish: an original or a generated minified twin.
type Output struct {
	Path        string
	Data        []byte
	SRI         string
	ContentType string
	// Brotli and Gzip are nil when the type is not Compressible or the
	// file is stored as is; Levels are what made them (zero without).
	Brotli, Gzip []byte
	Levels       Levels
	// MinifiedFrom is the source path of a generated twin, "" for originals.
	MinifiedFrom string
}

// processRevision versions this package's own rules: content-type and
// compressible tables, minifier options, license-comment handling. Bump it
// whenever one of them changes what is published.
const processRevision = 2

// Modules whose code determines output bytes, with the versions go.mod
// requires; used when the binary carries no build information.
var outputModules = []struct{ key, path, fallbackVersion string }{
	{"minify", "github.com/tdewolff/minify/v2", "v2.24.25"},
	{"parse", "github.com/tdewolff/parse/v2", "v2.8.20"},
	{"brotli", "github.com/andybalholm/brotli", "v1.3.0"},
	{"compress", "github.com/klauspost/compress", "v1.20.4"},
}

// PanicError is a panic while processing one file, recovered.
type PanicError struct {
	Path, Value, Stack string
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("processing %s panicked: %s", e.Path, e.Value)
}

// Fingerprint names the tool versions and settings that determine output
// bytes, e.g. "process=2;minify=v2.24.25;parse=v2.8.20;brotli=v1.3.0;
// compress=v1.20.4;levels=11/9<=4Mi,9/9<=32Mi,5/6<=256Mi,3/5;brwin=fit10-22;
// max=536870912;js=es2009;css=3". Outputs of an earlier version are reused
// only when its fingerprint is equal.
func Fingerprint(opts Options) string {
	versions := moduleVersions()
	var b strings.Builder
	fmt.Fprintf(&b, "process=%d", processRevision)
	for _, m := range outputModules {
		fmt.Fprintf(&b, ";%s=%s", m.key, versions[m.path])
	}
	fmt.Fprintf(&b, ";levels=%s;brwin=fit%d-%d;max=%d", levelTable(), brotliMinWindowBits, brotliMaxWindowBits, opts.maxFileSize())
	b.WriteString(";js=")
	if opts.MinifyJS {
		b.WriteString("es" + strconv.Itoa(jsOutputVersion))
	} else {
		b.WriteString("0")
	}
	b.WriteString(";css=")
	if opts.MinifyCSS {
		b.WriteString(strconv.Itoa(cssOutputVersion))
	} else {
		b.WriteString("0")
	}
	return b.String()
}

// moduleVersions returns the linked version of each output module, falling
// back to the go.mod versions when build information is unavailable.
func moduleVersions() map[string]string {
	versions := make(map[string]string, len(outputModules))
	for _, m := range outputModules {
		versions[m.path] = m.fallbackVersion
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return versions
	}
	for _, dep := range info.Deps {
		if _, wanted := versions[dep.Path]; !wanted {
			continue
		}
		version := dep.Version
		if dep.Replace != nil {
			// A local directory replacement has no version and its code is
			// unknown: name it so it never matches a released fingerprint.
			version = dep.Replace.Version
			if version == "" {
				version = "replaced"
			}
		}
		if version != "" {
			versions[dep.Path] = version
		}
	}
	return versions
}

// File prepares one source file for publishing. The first Output is
// the original, exactly as given. A minified twin follows when MinifiedPath
// names one, opts enables minifying that type, the file is within
// MaxMinifySize and the library's limit, and the package does not ship a
// file at the twin's path itself (shipped may be nil: nothing shipped). A
// failed minify is reported in warnings and the original is still published;
// err is returned only when compression fails. Compression levels step
// down with size (PlanFor); a file over the library's limit is stored as is.
func File(path string, data []byte, opts Options, shipped func(path string) bool) (outs []Output, warnings []string, err error) {
	// A minifier or compressor that panics on some input fails this file,
	// never the process that runs it.
	defer func() {
		if v := recover(); v != nil {
			outs, warnings = nil, nil
			err = &PanicError{Path: path, Value: fmt.Sprint(v), Stack: string(debug.Stack())}
		}
	}()
	plan := opts.PlanFor(path, int64(len(data)))
	original, err := newOutput(path, data, "", plan.Levels)
	if err != nil {
		return nil, nil, err
	}
	outs = append(outs, original)

	twin, ok := MinifiedPath(path)
	if !ok || !plan.MayMinify || !minifyEnabled(path, opts) || (shipped != nil && shipped(twin)) {
		return outs, nil, nil
	}
	minified, err := Minify(path, data)
	if err != nil {
		return outs, []string{fmt.Sprintf("%s: not minified, original published only: %v", path, err)}, nil
	}
	twinOut, err := newOutput(twin, minified, path, opts.PlanFor(twin, int64(len(minified))).Levels)
	if err != nil {
		return nil, nil, err
	}
	return append(outs, twinOut), nil, nil
}

func minifyEnabled(path string, opts Options) bool {
	switch extension(path) {
	case "js", "mjs":
		return opts.MinifyJS
	case "css":
		return opts.MinifyCSS
	}
	return false
}

// newOutput describes one output and compresses it at levels (zero: stored
// as is).
func newOutput(path string, data []byte, minifiedFrom string, levels Levels) (Output, error) {
	out := Output{
		Path:         path,
		Data:         data,
		SRI:          SRI(data),
		ContentType:  ContentType(path),
		MinifiedFrom: minifiedFrom,
		Levels:       levels,
	}
	if levels == (Levels{}) {
		return out, nil
	}
	var err error
	if out.Brotli, err = BrotliAt(data, levels.Brotli); err != nil {
		return Output{}, fmt.Errorf("compress %s: %w", path, err)
	}
	if out.Gzip, err = GzipAt(data, levels.Gzip); err != nil {
		return Output{}, fmt.Errorf("compress %s: %w", path, err)
	}
	return out, nil
}
