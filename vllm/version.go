package vllm

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Current is the newest release line this package models (main of 2026-08-14). A newer
// vLLM is modelled by it, with a warning (Lookup).
const Current = "0.28"

// Kind is how argparse takes a flag.
type Kind int

const (
	// Store takes a value: --x V or --x=V.
	Store Kind = iota
	// StoreTrue is a bare switch (action="store_true"): --x, and no --no-x form.
	StoreTrue
	// BooleanOptional is argparse.BooleanOptionalAction: --x and --no-x, no value.
	BooleanOptional
)

func (k Kind) String() string {
	switch k {
	case StoreTrue:
		return "store_true"
	case BooleanOptional:
		return "BooleanOptionalAction"
	}
	return "store"
}

// Type is how argparse converts a flag's value.
type Type int

const (
	// String is taken as it is.
	String Type = iota
	// Int is Python's int(): a plain whole number.
	Int
	// HumanInt is vLLM's human_readable_int: 8192, 8k (10^3), 8K (2^10), 25.6k.
	HumanInt
	// HumanIntOrAuto is HumanInt that also takes "auto" and -1 (the largest length that
	// fits in memory), as --max-model-len does since v0.14.
	HumanIntOrAuto
	// Float is Python's float().
	Float
	// JSON is a JSON object; dotted sub-keys (--compilation-config.mode=3) also work.
	JSON
)

func (t Type) String() string {
	switch t {
	case Int:
		return "int"
	case HumanInt:
		return "human_readable_int"
	case HumanIntOrAuto:
		return "human_readable_int_or_auto"
	case Float:
		return "float"
	case JSON:
		return "loads"
	}
	return "str"
}

// Flag is one `vllm serve` option of one version.
type Flag struct {
	Name    string   // "--max-num-seqs"
	Knob    string   // the snake_case option name: "max_num_seqs"
	Short   []string // short forms: "-tp"
	Kind    Kind
	Type    Type
	Nargs   string   // "" (one value), "+" (one or more) or "?" (optional value)
	Choices []string // allowed values, as written on the command line; nil: any
	// Valid are the values the engine takes for a flag whose argparse takes any string and
	// whose config refuses the rest at startup (--quantization's methods); nil: not listed.
	Valid []string
	// Default is the value when the flag is not given: int64, float64, string or bool; nil
	// when it is unset or resolved at startup (see Version.Default for those).
	Default any
	// Since is the first release line with the flag: "" for one older than every table, a
	// line older than the oldest table (v0.13) for one that an older vLLM lacks.
	Since string
}

// spec is one row of the flag table.
type spec struct {
	name        string
	short       []string
	kind        Kind
	typ         Type
	nargs       string
	choices     []string
	valid       []string // see Flag.Valid
	def         any
	since       string
	until       string
	replacement string // for a removed flag: the flag to use instead
	renamed     bool   // the replacement is the same option under a new name
	note        string // why it went, for the error
}

// Version is one vLLM release line.
type Version struct {
	// Name is the line, "0.13" or "0.22".
	Name string
	// Exact reports whether the line's table was read from vLLM's source at Commit; the
	// lines in between are derived from dated changes (see the package doc).
	Exact bool
	// Commit is the upstream commit the table was read at, for exact lines.
	Commit string
	// Asked is the version string Lookup was given ("0.33.0"); Name is the line modelling it.
	Asked string
	// Warning says, when not empty, that Asked is not a modelled line and which line stands
	// in for it: "0.33.0 is newer than frontier's newest table, v0.28 (2026-08-14); ...".
	Warning string
	// host is set by WithHost: the flags are the installed vLLM's own, from its help.
	host  bool
	flags map[string]Flag   // by --name
	alias map[string]string // short form -> --name
	gone  map[string]spec   // removed before this line, by --name
	later map[string]spec   // added after this line, by --name
}

// lines are the modelled release lines, oldest first.
var lines = []struct {
	name   string
	exact  bool
	commit string
	date   string // of the commit, for exact lines
}{
	{"0.13", true, "9187de9fac94", "2025-12-19"},
	{"0.14", false, "", ""}, {"0.15", false, "", ""}, {"0.16", false, "", ""}, {"0.17", false, "", ""},
	{"0.18", false, "", ""}, {"0.19", false, "", ""}, {"0.20", false, "", ""}, {"0.21", false, "", ""},
	{"0.22", true, "9aaf83ef502f", "2026-05-19"},
	{"0.23", false, "", ""}, {"0.24", false, "", ""}, {"0.25", false, "", ""}, {"0.26", false, "", ""},
	{"0.27", false, "", ""},
	{"0.28", true, "6adad0876", "2026-08-14"},
}

// Versions returns the modelled release lines, oldest first ("0.13" ... Current).
func Versions() []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.name
	}
	return out
}

// Lookup returns the model of a vLLM version: "0.13", "v0.13.0", "0.22.1", "0.22.0rc1" and
// "0.13.0+cu128" all name their release line. Any well-formed version is usable: one newer
// than the newest modelled line (Current) is modelled by that line, one older than the oldest
// or between lines by the nearest older line (the oldest for a version before it), and the
// Version's Warning says so. Only a string that is not MAJOR.MINOR[.PATCH] is an error.
func Lookup(version string) (*Version, error) {
	line, err := lineOf(version)
	if err != nil {
		return nil, err
	}
	pick, warning := -1, ""
	for i, l := range lines {
		if l.name == line {
			pick = i
			break
		}
		if !before(line, l.name) {
			pick = i // the nearest older line so far
		}
	}
	shown := strings.TrimSpace(version)
	newest := lines[len(lines)-1]
	switch {
	case pick == len(lines)-1 && line != newest.name:
		warning = fmt.Sprintf("vLLM %s is newer than frontier's newest table, v%s (%s); it is taken as v%s, and on a host the installed vLLM's own help decides which flags it takes",
			shown, newest.name, newest.date, newest.name)
	case pick < 0:
		pick = 0
		warning = fmt.Sprintf("vLLM %s is older than frontier's oldest table, v%s (%s); it is taken as v%s, and on a host the installed vLLM's own help decides which flags it takes",
			shown, lines[0].name, lines[0].date, lines[0].name)
	case lines[pick].name != line:
		warning = fmt.Sprintf("vLLM %s is not a line frontier has a table of; it is taken as the nearest older line, v%s", shown, lines[pick].name)
	}
	v := *tables[pick]() // a copy; its flag maps are read-only and shared
	v.Asked, v.Warning = shown, warning
	return &v, nil
}

// tables are the lines' flag tables, each built from flagTable once, on its first Lookup:
// derived data that no one changes after (WithHost builds maps of its own), so that the
// offline estimator, which looks a line up for every configuration, does not rebuild it.
var tables = func() []func() *Version {
	out := make([]func() *Version, len(lines))
	for i, l := range lines {
		out[i] = sync.OnceValue(func() *Version { return build(l.name, l.exact, l.commit) })
	}
	return out
}()

// Newest returns the newest modelled line and the date of the source its table was read from.
func Newest() (line, date string) {
	l := lines[len(lines)-1]
	return l.name, l.date
}

// lineOf reduces a version string to its "major.minor" line.
func lineOf(version string) (string, error) {
	s := strings.TrimSpace(version)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "V")
	if i := strings.IndexAny(s, "+-"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return "", fmt.Errorf("vLLM version %q: want MAJOR.MINOR[.PATCH], e.g. 0.22 or v0.13.0", version)
	}
	if len(parts[0]) > 6 || len(parts[1]) > 6 {
		return "", fmt.Errorf("vLLM version %q: want MAJOR.MINOR[.PATCH], e.g. 0.22 or v0.13.0", version)
	}
	major, err1 := strconv.Atoi(parts[0])
	// A pre-release suffix such as "0rc1" or "0.dev5" stays in the patch part.
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || major < 0 || minor < 0 || strings.HasPrefix(parts[1], "+") || strings.HasPrefix(parts[0], "+") {
		return "", fmt.Errorf("vLLM version %q: want MAJOR.MINOR[.PATCH], e.g. 0.22 or v0.13.0", version)
	}
	return fmt.Sprintf("%d.%d", major, minor), nil
}

// before reports whether line a is older than line b ("" is older than everything).
func before(a, b string) bool {
	if a == "" {
		return b != ""
	}
	if b == "" {
		return false
	}
	am, an := split(a)
	bm, bn := split(b)
	return am < bm || am == bm && an < bn
}

// split reads "major.minor"; a part too large for an int counts as the largest.
func split(line string) (int, int) {
	m, n, _ := strings.Cut(line, ".")
	return atoiSat(m), atoiSat(n)
}

func atoiSat(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil && len(s) > 0 {
		return math.MaxInt
	}
	return n
}

// build assembles one line's flags from the table.
func build(name string, exact bool, commit string) *Version {
	v := &Version{Name: name, Exact: exact, Commit: commit, flags: map[string]Flag{},
		alias: map[string]string{}, gone: map[string]spec{}, later: map[string]spec{}}
	for _, s := range flagTable {
		switch {
		case before(name, s.since):
			if _, ok := v.later[s.name]; !ok {
				v.later[s.name] = s
			}
		case s.until != "" && !before(name, s.until):
			v.gone[s.name] = s
		default:
			v.flags[s.name] = Flag{Name: s.name, Knob: knobOf(s.name), Short: s.short, Kind: s.kind, Type: s.typ,
				Nargs: s.nargs, Choices: s.choices, Valid: s.valid, Default: s.def, Since: s.since}
			for _, a := range s.short {
				v.alias[a] = s.name
			}
		}
	}
	// A flag that changed shape has an entry that ended and one that began: it is not gone.
	for n := range v.flags {
		delete(v.gone, n)
		delete(v.later, n)
	}
	return v
}

func knobOf(name string) string {
	return strings.ReplaceAll(strings.TrimLeft(name, "-"), "-", "_")
}

// canonical turns "--max_num_seqs", "max-num-seqs", "max_num_seqs" or "-tp" into the
// flag's --name as this version spells it (short forms resolved).
func (v *Version) canonical(name string) string {
	name = strings.TrimSpace(name)
	if long, ok := v.alias[name]; ok {
		return long
	}
	return "--" + strings.ReplaceAll(strings.TrimLeft(name, "-"), "_", "-")
}

// String returns "vLLM v0.22".
func (v *Version) String() string { return "vLLM v" + v.Name }

// Flags returns the version's flags, sorted by name.
func (v *Version) Flags() []Flag {
	out := make([]Flag, 0, len(v.flags))
	for _, f := range v.flags {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Flag returns a flag by its --kebab-name, its snake_case knob name or a short form.
func (v *Version) Flag(name string) (Flag, bool) {
	f, ok := v.flags[v.canonical(name)]
	return f, ok
}

// FlagError says why a version does not take a flag.
type FlagError struct {
	Flag    string // as asked, in --kebab form
	Version string // the line asked about
	// Removed is the line that dropped the flag; Added the line that introduced it (for a
	// flag asked of an older line). Both empty: the version never had it.
	Removed, Added string
	// Renamed is the flag's new name, when it was renamed.
	Renamed string
	// Suggest is the flag to use instead (a replacement or the nearest spelling).
	Suggest string
	Note    string
}

func (e *FlagError) Error() string {
	var b strings.Builder
	switch {
	case e.Renamed != "":
		fmt.Fprintf(&b, "%s was renamed to %s in v%s", e.Flag, e.Renamed, e.Removed)
	case e.Removed != "":
		fmt.Fprintf(&b, "%s was removed in v%s", e.Flag, e.Removed)
		if e.Suggest != "" {
			fmt.Fprintf(&b, "; did you mean %s?", e.Suggest)
		}
	case e.Added != "":
		fmt.Fprintf(&b, "%s is not in vLLM %s: it was added in v%s", e.Flag, vname(e.Version), e.Added)
	default:
		fmt.Fprintf(&b, "vLLM %s has no flag %s", vname(e.Version), e.Flag)
		if e.Suggest != "" {
			fmt.Fprintf(&b, "; did you mean %s?", e.Suggest)
		}
	}
	if e.Note != "" {
		b.WriteString(" (" + e.Note + ")")
	}
	return b.String()
}

// vname is "v0.22" for a line and "0.33.0" for a host's version as it reported it.
func vname(version string) string {
	if strings.Count(version, ".") == 1 && !strings.HasPrefix(version, "v") {
		return "v" + version
	}
	return version
}

// Check returns nil when the version has the flag (by --kebab-name, snake_case knob name,
// short form, or --no-x for a BooleanOptionalAction flag), and otherwise a *FlagError whose
// text says "removed in vX.Y", "renamed to --y in vX.Y", "added in vX.Y" or "did you mean
// --z" as fits.
func (v *Version) Check(name string) error {
	err := v.check(name)
	if fe, ok := err.(*FlagError); ok && v.host && v.Asked != "" {
		fe.Version = v.Asked
	}
	return err
}

func (v *Version) check(name string) error {
	n := v.canonical(name)
	if f, ok := v.flags[n]; ok {
		// A flag that first shipped in a release older than the oldest table: the oldest
		// table stands in for an older vLLM, which still lacks it.
		if f.Since != "" && v.Asked != "" {
			if asked, err := lineOf(v.Asked); err == nil && before(asked, f.Since) {
				return &FlagError{Flag: n, Version: asked, Added: f.Since}
			}
		}
		return nil
	}
	if base, ok := strings.CutPrefix(n, "--no-"); ok {
		if f, ok := v.flags["--"+base]; ok {
			if f.Kind == BooleanOptional {
				return nil
			}
			return &FlagError{Flag: n, Version: v.Name, Suggest: "",
				Note: fmt.Sprintf("%s is a store_true switch: leave it out for false", f.Name)}
		}
	}
	if s, ok := v.gone[n]; ok {
		e := &FlagError{Flag: n, Version: v.Name, Removed: s.until, Note: s.note}
		if s.replacement != "" {
			if s.renamed {
				e.Renamed = s.replacement
			} else {
				e.Suggest = s.replacement
			}
		}
		return e
	}
	if s, ok := v.later[n]; ok {
		return &FlagError{Flag: n, Version: v.Name, Added: s.since}
	}
	return &FlagError{Flag: n, Version: v.Name, Suggest: v.nearest(n)}
}

// nearest returns the version's flag closest in spelling to name, when one is close.
func (v *Version) nearest(name string) string {
	if near := v.Nearest(name, 1); len(near) > 0 {
		return near[0].Name
	}
	return ""
}

// BoolArgs returns the arguments that set a boolean option: --x for true; for false, --no-x
// for a BooleanOptionalAction flag and nothing for a store_true switch (false is its
// default, and vLLM refuses --no-x for it). A flag the version does not know follows the
// plan rule (--no-x for false); Check says whether the version takes it.
func (v *Version) BoolArgs(name string, val bool) []string {
	n := v.canonical(name)
	if val {
		return []string{n}
	}
	if f, ok := v.flags[n]; ok && f.Kind == StoreTrue {
		return nil
	}
	return []string{"--no-" + strings.TrimPrefix(n, "--")}
}

// GPUClass is how vLLM's batch defaults see a GPU (EngineArgs.get_batch_defaults).
type GPUClass int

const (
	// GPUUnknown is a GPU the caller could not classify: no batch defaults.
	GPUUnknown GPUClass = iota
	// GPUSmall has less than 70 GiB of memory, or is an A100: 2048 tokens, 256 sequences.
	GPUSmall
	// GPULarge has at least 70 GiB and is not an A100 (H100, H200, MI300X): 8192 tokens,
	// 1024 sequences.
	GPULarge
	// GPUHuge has at least 160 GiB and is not an A100 (B200, MI325X): from v0.28 (#51726)
	// the API server defaults to 16384 batched tokens; before, it is a GPULarge.
	GPUHuge
)

// ClassifyGPU classifies a GPU by its name (as the driver reports it, or a catalog name)
// and total memory, the way vLLM does: at least 70 GiB and "a100" not in the name is large,
// at least 160 GiB huge.
func ClassifyGPU(name string, memoryGiB float64) GPUClass {
	if memoryGiB <= 0 {
		return GPUUnknown
	}
	a100 := strings.Contains(strings.ToLower(name), "a100")
	switch {
	case memoryGiB >= 160 && !a100:
		return GPUHuge
	case memoryGiB >= 70 && !a100:
		return GPULarge
	}
	return GPUSmall
}

// UsageContext is who builds the engine: the batch defaults differ.
type UsageContext int

const (
	// APIServer is `vllm serve` (UsageContext.OPENAI_API_SERVER).
	APIServer UsageContext = iota
	// LLMClass is the offline vllm.LLM class.
	LLMClass
)

// BatchDefaults returns max_num_batched_tokens and max_num_seqs as vLLM sets them when
// neither flag is given, before they are capped by max_model_len: by GPU class and usage
// context, doubled by --performance-mode throughput on lines that have it. ok is false for
// an unknown GPU class or performance mode.
func (v *Version) BatchDefaults(gpu GPUClass, usage UsageContext, performanceMode string) (tokens, seqs int, ok bool) {
	if gpu == GPUHuge {
		if usage == APIServer && !before(v.Name, "0.28") {
			tokens, seqs = 16384, 1024
			return v.performanceScaled(tokens, seqs, performanceMode)
		}
		gpu = GPULarge
	}
	switch {
	case gpu == GPULarge && usage == APIServer:
		tokens, seqs = 8192, 1024
	case gpu == GPULarge:
		tokens, seqs = 16384, 1024
	case gpu == GPUSmall && usage == APIServer:
		tokens, seqs = 2048, 256
	case gpu == GPUSmall:
		tokens, seqs = 8192, 256
	default:
		return 0, 0, false
	}
	return v.performanceScaled(tokens, seqs, performanceMode)
}

// performanceScaled applies --performance-mode to the batch defaults.
func (v *Version) performanceScaled(tokens, seqs int, performanceMode string) (int, int, bool) {
	switch performanceMode {
	case "", "balanced", "interactivity":
	case "throughput":
		if _, has := v.flags["--performance-mode"]; !has {
			return 0, 0, false
		}
		tokens, seqs = 2*tokens, 2*seqs
	default:
		return 0, 0, false
	}
	return tokens, seqs, true
}

// Default returns the value vLLM uses for an option when no flag sets it, for `vllm serve`
// on a GPU of the given class: int64, float64, string or bool. "quantization" is "none"
// (the checkpoint's own); enable_chunked_prefill and enable_prefix_caching are true (their
// value for generative decoder models); async_scheduling is true from v0.14 (on unless
// something conflicts); max_num_seqs and max_num_batched_tokens come from BatchDefaults in
// the balanced mode. It reports false for options whose default depends on the model
// (max_model_len), that have none, or that the version does not have.
func (v *Version) Default(knob string, gpu GPUClass) (any, bool) {
	n := v.canonical(knob)
	f, ok := v.flags[n]
	if !ok {
		return nil, false
	}
	switch f.Knob {
	case "max_num_batched_tokens", "max_num_seqs":
		tokens, seqs, ok := v.BatchDefaults(gpu, APIServer, "")
		if !ok {
			return nil, false
		}
		if f.Knob == "max_num_seqs" {
			return int64(seqs), true
		}
		return int64(tokens), true
	case "enable_chunked_prefill", "enable_prefix_caching":
		return true, true
	case "block_size":
		return int64(16), true // the CUDA platform's choice for non-MLA attention
	case "enable_lora", "disable_hybrid_kv_cache_manager":
		return false, true
	}
	if f.Default == nil {
		return nil, false
	}
	return f.Default, true
}

// DefaultGPUMemoryUtilization is the default of --gpu-memory-utilization: 0.9 up to v0.20,
// 0.92 from v0.21.
func (v *Version) DefaultGPUMemoryUtilization() float64 {
	if f, ok := v.flags["--gpu-memory-utilization"]; ok {
		if d, ok := f.Default.(float64); ok {
			return d
		}
	}
	return 0.9
}

// LongPrefillThresholdBounded reports whether --long-prefill-token-threshold must lie between
// 0 and max_model_len (v0.28 and later); before, any value was taken.
func (v *Version) LongPrefillThresholdBounded() bool {
	return !before(v.Name, "0.28")
}

// GraphsInMemoryBudget reports whether CUDA-graph memory is profiled and counted inside the
// gpu_memory_utilization budget (v0.21 and later); before, graphs were captured after the
// KV cache was sized, outside the budget.
func (v *Version) GraphsInMemoryBudget() bool {
	return !before(v.Name, "0.21")
}

// AsyncSchedulingDefault reports whether async scheduling is on when no flag sets it.
func (v *Version) AsyncSchedulingDefault() bool {
	return !before(v.Name, "0.14")
}

// HasFlag reports whether the version has the flag; a shorthand for Check(name) == nil.
func (v *Version) HasFlag(name string) bool { return v.Check(name) == nil }

// choiceOK reports whether val is one of the flag's choices.
func (f Flag) choiceOK(val string) bool { return f.Choices == nil || slices.Contains(f.Choices, val) }
