package transform

import (
	"fmt"
	"path"
	"strings"
)

// fileType is what the pipeline needs to know about one file extension.
type fileType struct {
	contentType string
	// compressible is true when brotli/gzip representations are worth storing;
	// formats that are already compressed gain nothing and only cost CPU.
	compressible bool
}

const (
	textUTF8        = "text/plain; charset=utf-8"
	javascriptUTF8  = "application/javascript; charset=utf-8"
	jsonUTF8        = "application/json; charset=utf-8"
	octetStreamType = "application/octet-stream"
)

// fileTypes is a fixed table rather than the OS mime database so that every
// worker, on every machine, records the same Content-Type for the same file.
// Changing it changes published metadata, so bump processRevision with it.
var fileTypes = map[string]fileType{
	// Scripts.
	"js":  {javascriptUTF8, true},
	"mjs": {javascriptUTF8, true},
	"cjs": {javascriptUTF8, true},
	// Sources shipped for reading, not executing. Served as plain text so that
	// browsers display them; ".ts" would otherwise be taken for MPEG-TS video.
	"ts":     {textUTF8, true},
	"mts":    {textUTF8, true},
	"cts":    {textUTF8, true},
	"tsx":    {textUTF8, true},
	"jsx":    {textUTF8, true},
	"coffee": {textUTF8, true},
	"vue":    {textUTF8, true},
	"svelte": {textUTF8, true},
	"scss":   {textUTF8, true},
	"sass":   {textUTF8, true},
	"less":   {textUTF8, true},
	"styl":   {textUTF8, true},

	// Styles, data and documents.
	"css":         {"text/css; charset=utf-8", true},
	"map":         {jsonUTF8, true},
	"json":        {jsonUTF8, true},
	"jsonld":      {"application/ld+json; charset=utf-8", true},
	"webmanifest": {"application/manifest+json; charset=utf-8", true},
	"svg":         {"image/svg+xml; charset=utf-8", true},
	"html":        {"text/html; charset=utf-8", true},
	"htm":         {"text/html; charset=utf-8", true},
	"xhtml":       {"application/xhtml+xml; charset=utf-8", true},
	"xml":         {"application/xml; charset=utf-8", true},
	"txt":         {textUTF8, true},
	"md":          {"text/markdown; charset=utf-8", true},
	"markdown":    {"text/markdown; charset=utf-8", true},
	"csv":         {"text/csv; charset=utf-8", true},
	"yaml":        {"application/yaml; charset=utf-8", true},
	"yml":         {"application/yaml; charset=utf-8", true},

	// Binary formats that still compress well.
	"wasm": {"application/wasm", true},
	"eot":  {"application/vnd.ms-fontobject", true},
	"ttf":  {"font/ttf", true},
	"otf":  {"font/otf", true},
	"ico":  {"image/x-icon", true},
	"bmp":  {"image/bmp", true},

	// Already compressed.
	"woff":  {"font/woff", false},
	"woff2": {"font/woff2", false},
	"png":   {"image/png", false},
	"apng":  {"image/apng", false},
	"jpg":   {"image/jpeg", false},
	"jpeg":  {"image/jpeg", false},
	"gif":   {"image/gif", false},
	"webp":  {"image/webp", false},
	"avif":  {"image/avif", false},
	"zip":   {"application/zip", false},
	"gz":    {"application/gzip", false},
	"tgz":   {"application/gzip", false},
	"br":    {octetStreamType, false},
	"zst":   {"application/zstd", false},
	"bz2":   {"application/x-bzip2", false},
	"xz":    {"application/x-xz", false},
	"pdf":   {"application/pdf", false},
	"mp3":   {"audio/mpeg", false},
	"m4a":   {"audio/mp4", false},
	"aac":   {"audio/aac", false},
	"ogg":   {"audio/ogg", false},
	"oga":   {"audio/ogg", false},
	"flac":  {"audio/flac", false},
	"wav":   {"audio/wav", false},
	"mp4":   {"video/mp4", false},
	"webm":  {"video/webm", false},
	"ogv":   {"video/ogg", false},
}

// extension returns the lower-cased extension of p without the dot ("" if none).
func extension(p string) string {
	return strings.ToLower(strings.TrimPrefix(path.Ext(p), "."))
}

// ContentType returns the MIME type to serve p with; text types carry
// "; charset=utf-8". Unknown extensions are application/octet-stream.
func ContentType(p string) string {
	if t, ok := fileTypes[extension(p)]; ok {
		return t.contentType
	}
	return octetStreamType
}

// Compressible reports whether brotli and gzip representations of p should be
// stored. Unknown extensions are not compressed: they may well be archives.
func Compressible(p string) bool {
	return fileTypes[extension(p)].compressible
}

// minifiableExtensions are the types Minify handles and MinifiedPath twins.
var minifiableExtensions = map[string]bool{"js": true, "mjs": true, "css": true}

// MinifiedPath returns the path of the minified twin of a .js, .mjs or .css
// file ("a/b.js" → "a/b.min.js"). It reports false for other types and for
// files already named as minified ("x.min.js", and the "x-min.js" variant some
// packages use), which would otherwise get a pointless "x.min.min.js".
func MinifiedPath(p string) (string, bool) {
	if !minifiableExtensions[extension(p)] {
		return "", false
	}
	ext := path.Ext(p) // original case, so the twin sits beside its source
	stem := strings.TrimSuffix(p, ext)
	name := strings.ToLower(path.Base(stem))
	if stem == "" || strings.HasSuffix(stem, "/") || strings.HasSuffix(name, ".min") || strings.HasSuffix(name, "-min") {
		return "", false
	}
	return stem + ".min" + ext, true
}

// Class names everything about a path that, besides its content, decides
// what File stores: content type, whether it is compressed, which
// minifier makes its twin. Outputs are reused only between paths of one class
// (an empty a.css and an empty b.js share content, not outputs).
func Class(p string) string {
	minifier := "none"
	if _, ok := MinifiedPath(p); ok {
		minifier = extension(p)
		if minifier == "mjs" {
			minifier = "js"
		}
	}
	return fmt.Sprintf("%s; compress=%t; minify=%s", ContentType(p), Compressible(p), minifier)
}

// WantsTwin says whether a generated minified twin of p, of size bytes, is
// wanted: p is a script or stylesheet whose type opts minifies, within
// the minifier's bound and the library's limit (PlanFor), and the release
// does not ship the twin's path itself (shipped holds every path it ships).
func (opts Options) WantsTwin(p string, size int64, shipped map[string]bool) bool {
	twin, ok := MinifiedPath(p)
	if !ok || shipped[twin] || !opts.PlanFor(p, size).MayMinify {
		return false
	}
	if extension(p) == "css" {
		return opts.MinifyCSS
	}
	return opts.MinifyJS
}
