package cli

import (
	"fmt"
	"runtime/debug"
)

// Version is this binary's module version and the commit it was built
// from, as Go records them (runtime/debug.ReadBuildInfo): "v1.2.0, commit
// 3f2a…" or, for a build of a work tree, "(devel), commit 3f2a… (modified)".
// A build without VCS information (-buildvcs=false, or a source tree
// without .git, as the container build's) says "commit unknown".
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (built without module support)"
	}
	return versionOf(info)
}

func versionOf(info *debug.BuildInfo) string {
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	commit, modified, at := "unknown", false, ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		case "vcs.time":
			at = s.Value
		}
	}
	out := fmt.Sprintf("%s, commit %s", version, commit)
	if modified {
		out += " (modified)"
	}
	if at != "" {
		out += " of " + at
	}
	return out + ", " + info.GoVersion
}
