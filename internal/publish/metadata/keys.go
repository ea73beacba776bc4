package metadata

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// The bucket layout of Publish, in one place: every object key the pipeline
// writes and the edge reads.
//
//	Files, Mirror   <name>/<version>/<path>             published files
//	                <name>/<version>/<path>.br, .gz     their precompressed twins
//	Meta, MirrorMeta packages/<name>.json               package documents
//	                versions/<name>/<version>.json      version documents
//	                index/libraries.json                the search index
//	Meta            reuse/<name>.json                   what earlier versions processed
//	                registry/<name>.json                the last listing and its ETag
//	                rejected/<name>/<version>.json      versions that can never publish
//	Incoming        tarballs/<name>/<name>-<version>.tgz  original release archives
//	                staging/<name>/<version>/...        one run's plan, batches, results

// Precompressed representations are stored beside the original with these suffixes.
const (
	BrotliSuffix = ".br"
	GzipSuffix   = ".gz"
)

// FileKey is the object key of a published file (in Files and Mirror).
func FileKey(name, version, path string) string {
	return name + "/" + version + "/" + strings.TrimPrefix(path, "/")
}

// PackageKey is the Meta (and MirrorMeta) key of a package document.
func PackageKey(name string) string { return "packages/" + name + ".json" }

// VersionKey is the Meta (and MirrorMeta) key of a version document.
func VersionKey(name, version string) string { return "versions/" + name + "/" + version + ".json" }

// SearchShards is how many documents the search index is split into, by a
// hash of the library name: a commit rewrites one shard (about 1/64 of the
// catalog), never a whole-catalog document.
const SearchShards = 64

// SearchShardOf is the shard that holds library name.
func SearchShardOf(name string) int {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32() % SearchShards)
}

// SearchShardKey is the Meta (and MirrorMeta) key of search index shard i.
func SearchShardKey(i int) string { return fmt.Sprintf("index/shards/%02d.json", i) }

// SearchIndexKey is the Meta (and MirrorMeta) key of the search index as
// one document (all libraries, compact), as written before the index was
// sharded: the edge still reads it, under the shards, which win.
const SearchIndexKey = "index/libraries.json"

// TarballKey is the Incoming key where the original release archive is kept.
func TarballKey(name, version string) string {
	return "tarballs/" + name + "/" + name + "-" + version + ".tgz"
}

// StagingPrefix is the Incoming prefix of one run's staging data (plan, batches, results).
func StagingPrefix(name, version string) string { return "staging/" + name + "/" + version + "/" }

// PlanKey is the Incoming key of a version's plan.
func PlanKey(name, version string) string { return StagingPrefix(name, version) + "plan.json" }

// BatchKey is the Incoming key of a staged batch; zero-padded, so a listing
// is in batch order.
func BatchKey(name, version string, batch int) string {
	return StagingPrefix(name, version) + fmt.Sprintf("batch-%05d.tar", batch)
}

// ResultKey is the Incoming key of a processed batch's results.
func ResultKey(name, version string, batch int) string {
	return StagingPrefix(name, version) + fmt.Sprintf("result-%05d.json", batch)
}

// PanicKey is the Incoming key recording that processing a batch panicked
// once: a second panic of the same batch fails the version for good.
func PanicKey(name, version string, batch int) string {
	return StagingPrefix(name, version) + fmt.Sprintf("panic-%05d.json", batch)
}

// ImportWindowKey is the Meta key of the import window a package's first
// import decided (versions.Window).
func ImportWindowKey(name string) string { return "windows/" + name + ".json" }

// ReuseIndexKey is the Meta key of a package's reuse index.
func ReuseIndexKey(name string) string { return "reuse/" + name + ".json" }

// RegistryCacheKey is the Meta key of a package's last registry listing.
func RegistryCacheKey(name string) string { return "registry/" + name + ".json" }

// RejectedKey is the Meta key of the marker of a version that can never
// publish as the catalog stands; update checks skip it until it is deleted.
func RejectedKey(name, version string) string { return RejectedPrefix(name) + version + ".json" }

// RejectedPrefix is the Meta prefix of a package's rejection markers.
func RejectedPrefix(name string) string { return "rejected/" + name + "/" }
