package record

import (
	"runtime/debug"
	"testing"
)

func TestReleaseNamesTheBuild(t *testing.T) {
	t.Parallel()
	set := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"a build in a clone", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: set("vcs.revision", "ae3aa08e1f2b3c4d5e6f", "vcs.modified", "false")}, Version + "+ae3aa08e1f2b"},
		{"a build with changes", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: set("vcs.revision", "ae3aa08e1f2b3c4d5e6f", "vcs.modified", "true")}, Version + "+ae3aa08e1f2b.dirty"},
		{"go install of a pseudo-version", debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20261204010000-ae3aa08e1f2b"}}, Version + "+0.1.1-0.20261204010000-ae3aa08e1f2b"},
		{"go install of the release", debug.BuildInfo{Main: debug.Module{Version: "v" + Version}}, Version},
		{"a test binary", debug.BuildInfo{}, Version},
	} {
		if got := releaseOf(&tc.info); got != tc.want {
			t.Errorf("%s: release = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := Release(); len(got) < len(Version) || got[:len(Version)] != Version {
		t.Errorf("Release() = %q, want it to start with %q", got, Version)
	}
}
