package report

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReportReadsTheRecordOnly: the report renders a record.Study and nothing else, so a
// report can be made where the study ran on another machine, with no plan parser, study
// database, sampler, launcher or GPU library linked in. The go tool lists what the package
// links.
func TestReportReadsTheRecordOnly(t *testing.T) {
	t.Parallel()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/hashicorp/hcl", "github.com/c-bata/goptuna", "github.com/NVIDIA/go-nvml",
			"github.com/frontier-llm/frontier/plan", "github.com/frontier-llm/frontier/launcher", "github.com/frontier-llm/frontier/search",
			"github.com/frontier-llm/frontier/hw/nvml", "github.com/mattn/go-sqlite3", "gorm.io", "github.com/jackc/pgx"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("report links %s", dep)
			}
		}
	}
}
