package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/record"
)

// hostile is a study whose every free-text field tries to run a script or leak a token, as a
// model output, an engine message or a plan string might.
func hostile(t *testing.T) *record.Study {
	t.Helper()
	rec := loadFixture(t, "quickstart.json")
	const xss = `<script>document.documentElement.setAttribute("data-pwned","1")</script><img src=x onerror="document.documentElement.setAttribute('data-pwned','2')">`
	rec.Description = "desc " + xss
	rec.Model = "org/model" + xss
	rec.EngineEnv["HF_TOKEN"] = "hf_abcdefghijklmnopqrstuvwxyz012345"
	for i := range rec.Trials {
		tr := &rec.Trials[i]
		tr.Reason += " " + xss
		tr.EngineMessage += " " + xss + " token hf_abcdefghijklmnopqrstuvwxyz012345"
		if q, ok := tr.Quality["ja-support"]; ok {
			q.Examples = []record.QualityExample{{ID: "hi", Input: "say hi " + xss, Reference: "hi", Output: xss + " | *bold* [link](x)", Score: 0.1,
				BaselineOutput: "hello " + xss}}
			tr.Quality["ja-support"] = q
		}
		if tr.Provenance != nil {
			tr.Provenance.Launch.Command = append(tr.Provenance.Launch.Command, "--api-key", "sekrit-api-key-value")
		}
	}
	return rec
}

func TestReportsEscapeAndRedact(t *testing.T) {
	t.Parallel()
	a := Analyze(hostile(t))
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer) error
		raw   []string // must not appear as they are
		shown []string // must appear: the quality examples, escaped
	}{
		{"html", func(b *bytes.Buffer) error { return WriteHTML(b, a, Options{All: true}) }, []string{"<script>document", "<img src=x"},
			[]string{"say hi &lt;script&gt;document", "hello &lt;script&gt;document", "baseline&#39;s output"}},
		{"markdown", func(b *bytes.Buffer) error { return WriteMarkdown(b, a, Options{All: true}) }, []string{"<script>", "<img src=x", "| *bold*"}, nil},
		{"text", func(b *bytes.Buffer) error { return WriteText(b, a, Options{All: true}) }, nil, nil},
		{"json", func(b *bytes.Buffer) error { return WriteJSON(b, a) }, nil, []string{`"baseline_output": "hello \u003cscript\u003edocument`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := tc.write(&buf); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, s := range []string{"hf_abcdefghijklmnopqrstuvwxyz012345", "sekrit-api-key-value"} {
				if strings.Contains(out, s) {
					t.Errorf("%s report contains the secret %q", tc.name, s)
				}
			}
			if tc.name == "markdown" {
				// Fenced code is shown as it is, never as markup: only the rest must be escaped.
				out = regexp.MustCompile("(?s)```shell\n.*?\n```").ReplaceAllString(out, "")
			}
			for _, s := range tc.raw {
				if strings.Contains(out, s) {
					t.Errorf("%s report contains %q", tc.name, s)
				}
			}
			for _, s := range tc.shown {
				if !strings.Contains(out, s) {
					t.Errorf("%s report does not contain %q", tc.name, s)
				}
			}
		})
	}
}

func TestHTMLIsSelfContained(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, Analyze(loadFixture(t, "quickstart.json")), Options{}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	// No element may load anything: no src, href, url(), @import, or script.
	for _, re := range []string{`(?i)\ssrc\s*=`, `(?i)\shref\s*=`, `(?i)url\(`, `(?i)@import`, `(?i)<script`, `(?i)<link`} {
		if m := regexp.MustCompile(re).FindString(page); m != "" {
			t.Errorf("HTML report has %q: it must load nothing", m)
		}
	}
	plots := strings.Count(page, `<figure class="plot"`)
	// One pair of objectives, three latency families, KV cache and queue.
	if plots != 6 {
		t.Errorf("HTML report has %d plots, want 6", plots)
	}
}

// chromium returns the headless browser to render with: $FRONTIER_CHROMIUM or
// /usr/bin/chromium. Without one the test is skipped, except under CI, where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("FRONTIER_CHROMIUM"), "/usr/bin/chromium"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (set FRONTIER_CHROMIUM or install Debian's chromium); CI must render the HTML report")
	}
	t.Skip("chromium not found: set FRONTIER_CHROMIUM to render the HTML report in a browser")
	return ""
}

// probe is added to the page under test only: it records script errors, then checks every
// plot was laid out with a size and drew its marks, and writes what it found on the root
// element, which --dump-dom returns.
const probe = `<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
window.addEventListener("load", function () {
  var charts = document.querySelectorAll("figure.plot svg.chart");
  var drawn = 0;
  charts.forEach(function (s) {
    var b = s.getBoundingClientRect();
    var marks = s.querySelectorAll("g.series circle, g.series path").length;
    if (b.width > 100 && b.height > 100 && marks > 0) { drawn++; }
  });
  var r = document.documentElement;
  r.setAttribute("data-charts", String(charts.length));
  r.setAttribute("data-drawn", String(drawn));
  r.setAttribute("data-errors", String(window.__errors.length));
  r.setAttribute("data-resources", String(performance.getEntriesByType("resource").length));
  r.setAttribute("data-probe", "done");
});
</script>`

// render loads page in headless Chromium and returns the DOM after load.
func render(t *testing.T, bin, page string, screenshot string) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + filepath.Join(dir, "profile"), "--virtual-time-budget=5000"}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if screenshot != "" {
		cmd := exec.CommandContext(ctx, bin, append(args, "--window-size=1280,2400", "--screenshot="+screenshot, "file://"+file)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("chromium --screenshot: %v\n%s", err, out)
		}
	}
	cmd := exec.CommandContext(ctx, bin, append(args, "--dump-dom", "file://"+file)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	return string(out)
}

func attr(dom, name string) string {
	m := regexp.MustCompile(`<html[^>]*\s` + name + `="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestHTMLRendersInChromium renders the report of the quickstart fixture and of a study full
// of script injections in a real browser: the page must raise no error, load nothing, lay out
// and draw every plot, and run none of the injected scripts.
func TestHTMLRendersInChromium(t *testing.T) {
	bin := chromium(t)
	for _, tc := range []struct {
		name string
		rec  *record.Study
	}{
		{"quickstart", loadFixture(t, "quickstart.json")},
		{"hostile", hostile(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteHTML(&buf, Analyze(tc.rec), Options{All: true}); err != nil {
				t.Fatal(err)
			}
			page := strings.Replace(buf.String(), "<head>", "<head>\n"+probe, 1)
			shot := os.Getenv("FRONTIER_REPORT_SCREENSHOT")
			if shot != "" {
				shot = fmt.Sprintf("%s-%s.png", strings.TrimSuffix(shot, ".png"), tc.name)
			}
			dom := render(t, bin, page, shot)
			if got := attr(dom, "data-probe"); got != "done" {
				t.Fatalf("the page did not finish loading in chromium (data-probe=%q)", got)
			}
			charts := strings.Count(buf.String(), `<figure class="plot"`)
			want := map[string]string{
				"data-charts":    fmt.Sprint(charts),
				"data-drawn":     fmt.Sprint(charts),
				"data-errors":    "0",
				"data-resources": "0",
				"data-pwned":     "",
			}
			for k, v := range want {
				if got := attr(dom, k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if charts < 4 {
				t.Errorf("only %d plots on the page", charts)
			}
		})
	}
}
