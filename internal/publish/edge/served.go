package edge

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeflow/edgeflow/internal/publish/metadata"
)

// A published file's response headers are the same for every request, so
// they are built once, when the file is first served, and kept with what
// serving it needs (servedFile): a request for a hot file then looks up
// its package document, its servedFile and its body, and assigns header
// values that are already built. The values are shared by every response
// and never modified: net/http copies them when the headers are written,
// and the handlers replace a header's slice (Set), never an element of it.

// servedKey names a published file as requests do.
type servedKey struct{ name, version, path string }

// servedFile is what serving one published file needs, built from its
// version document, which never changes once published.
type servedFile struct {
	file         metadata.File
	publishedAt  time.Time // the version's
	lastModified time.Time // publishedAt to the second, or zero
	// header values shared by all its representations (nil: not sent)
	contentType, lastModifiedHeader []string
	reps                            [encodingCount]servedRepresentation
	// fast is the fast path's heads of its answers, built on first use.
	fast atomic.Pointer[fastHeaders]
}

// servedRepresentation is one stored encoding of a served file.
type servedRepresentation struct {
	key           fileCacheKey
	tag           string   // the strong ETag
	etag          []string // {tag}
	size          int64
	contentLength []string // of the whole representation
}

// encodingCount is the number of encodings (the size of per-encoding arrays).
const encodingCount = 3

func newServedFile(ver *metadata.Version, file metadata.File) *servedFile {
	sf := &servedFile{file: file, publishedAt: ver.PublishedAt, contentType: contentTypeHeader(file)}
	if !ver.PublishedAt.IsZero() {
		sf.lastModified = ver.PublishedAt.UTC().Truncate(time.Second)
		sf.lastModifiedHeader = []string{sf.lastModified.Format(http.TimeFormat)}
	}
	object := file.Key(ver.Name, ver.Version)
	for _, enc := range []encoding{encIdentity, encBrotli, encGzip} {
		tag := entityTag(ver, file, enc)
		size := enc.size(file)
		sf.reps[enc] = servedRepresentation{key: fileCacheKey{object: object, enc: enc}, tag: tag, etag: []string{tag},
			size: size, contentLength: []string{strconv.FormatInt(size, 10)}}
	}
	return sf
}

// cost estimates the memory of a servedFile and its cache entry.
func (sf *servedFile) cost(k servedKey) int64 {
	n := 512 + len(k.name) + len(k.version) + len(k.path) + len(sf.file.Path) + len(sf.file.SRI) + len(sf.file.ContentType) +
		len(sf.file.MinifiedFrom) + len(sf.file.StoredAt) + len(sf.reps[encIdentity].key.object)
	return int64(n)
}

// servedCacheBudget bounds the memory of the servedFiles kept.
const servedCacheBudget = 16 << 20

// Header values every file response shares.
var (
	immutableCacheControlHeader = []string{immutableCacheControl}
	varyAcceptEncodingHeader    = []string{"Accept-Encoding"}
	acceptRangesHeader          = []string{"bytes"}
	contentEncodingHeaders      = [encodingCount][]string{encBrotli: {encBrotli.token()}, encGzip: {encGzip.token()}}
	sourceHeaders               = map[string][]string{"cache": {"cache"}, "primary": {"primary"}, "mirror": {"mirror"}}
	wildcardHeader              = []string{"*"}
	crossOriginHeader           = []string{"cross-origin"}
	nosniffHeader               = []string{"nosniff"}
)

// contentTypes memoizes contentTypeOf's header value by the version
// document's type: a catalog has few, so the map stays small; past
// maxContentTypes, values are built per file.
var contentTypes = struct {
	sync.RWMutex
	m map[string][]string
}{m: map[string][]string{}}

const maxContentTypes = 1024

func contentTypeHeader(f metadata.File) []string {
	contentTypes.RLock()
	v, ok := contentTypes.m[f.ContentType]
	contentTypes.RUnlock()
	if ok {
		return v
	}
	v = []string{contentTypeOf(f)}
	contentTypes.Lock()
	if len(contentTypes.m) < maxContentTypes {
		contentTypes.m[f.ContentType] = v
	}
	contentTypes.Unlock()
	return v
}
