package record

import (
	"runtime/debug"
	"strings"
)

// Version is frontier's release version. Raise it with every release; a build between
// releases is told apart by its VCS revision (see Release).
const Version = "0.1.0"

// Release names the build of frontier that is running, as records store it: Version, then
// after '+' the first 12 digits of the VCS revision it was built from (and ".dirty" when the
// work tree had changes), as Go's build information has them; or, for a build by
// `go install module@version`, the module's version when it is not Version. A build without
// either (a test binary) is Version alone.
func Release() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Version
	}
	return releaseOf(info)
}

// releaseOf is Release for the build information info.
func releaseOf(info *debug.BuildInfo) string {
	var rev string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += ".dirty"
		}
		return Version + "+" + rev
	}
	if v := strings.TrimPrefix(info.Main.Version, "v"); v != "" && v != "(devel)" && v != Version {
		return Version + "+" + v
	}
	return Version
}
