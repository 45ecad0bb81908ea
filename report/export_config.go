package report

import (
	"regexp"
	"strings"

	"github.com/frontier-llm/frontier/vllm"
)

// configEntry is one key of a file for `vllm serve --config`, its value written as YAML.
type configEntry struct {
	key, value string
}

// plainNumber is a number YAML reads as the number argparse would: digits, an optional
// fraction and exponent.
var plainNumber = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// configEntries turns `vllm serve` arguments into the keys of a --config file, in order, and
// the arguments the file cannot hold, which stay on the command line: vLLM's
// load_config_file turns a key into --key VALUE, true into --key, a list into --key V1 V2,
// and drops false, so a --no-x flag, a flag line does not know, a short or dotted form and
// an optional value stay on the command line. Every key is a flag of line, by its own name.
// A flag given twice keeps its last value, as argparse does.
func configEntries(line *vllm.Version, args []string) ([]configEntry, []string) {
	var entries []configEntry
	var cli []string
	set := func(key, value string) {
		for i := range entries {
			if entries[i].key == key {
				entries[i].value = value
				return
			}
		}
		entries = append(entries, configEntry{key, value})
	}
	for i := 0; i < len(args); i++ {
		raw := args[i]
		name, val, hasVal := strings.Cut(raw, "=")
		f, known := vllm.Flag{}, false
		if line != nil && strings.HasPrefix(name, "--") && !strings.Contains(name, ".") {
			f, known = line.Flag(name)
		}
		values := func() []string { // the values that follow a flag without "="
			j := i + 1
			for j < len(args) && (!strings.HasPrefix(args[j], "-") || plainNumber.MatchString(args[j])) {
				j++
			}
			out := args[i+1 : j]
			i = j - 1
			return out
		}
		if !known || f.Nargs == "?" {
			cli = append(cli, raw)
			if !hasVal {
				cli = append(cli, values()...)
			}
			continue
		}
		key := strings.TrimPrefix(f.Name, "--")
		switch {
		case f.Kind != vllm.Store:
			set(key, "true")
		case f.Nargs == "+":
			vs := []string{val}
			if !hasVal {
				vs = values()
			}
			switch len(vs) {
			case 0:
				cli = append(cli, raw)
			case 1: // --key V, as a list of one would be
				set(key, configValue(f, vs[0]))
			default:
				quoted := make([]string, len(vs))
				for k, v := range vs {
					quoted[k] = configValue(f, v)
				}
				set(key, "["+strings.Join(quoted, ", ")+"]")
			}
		default:
			if !hasVal {
				if i+1 >= len(args) {
					cli = append(cli, raw)
					continue
				}
				i++
				val = args[i]
			}
			set(key, configValue(f, val))
		}
	}
	return entries, cli
}

// configValue is a flag's value in YAML: a number as it is where the flag takes a number,
// everything else (JSON for a JSON flag included: vLLM passes it on as the string) a quoted
// string.
func configValue(f vllm.Flag, val string) string {
	switch f.Type {
	case vllm.Int, vllm.HumanInt, vllm.HumanIntOrAuto, vllm.Float:
		if plainNumber.MatchString(val) {
			return val
		}
	}
	return yamlString(val)
}
