package launcher

import (
	"slices"
	"sort"
	"strings"
)

// Redacted replaces the value of a secret in provenance and log headers.
const Redacted = "REDACTED"

// secretWords are the parts of a name that mark it as a secret.
var secretWords = [...]string{"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}

// IsSecretName reports whether an environment variable or flag name holds a secret: it
// contains TOKEN, KEY, SECRET, PASSWORD, PASSWD or CREDENTIAL (in any case), or is listed in
// extra.
func IsSecretName(name string, extra []string) bool {
	if slices.Contains(extra, name) {
		return true
	}
	up := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// RedactEnv returns a copy of env with the values of secret names replaced by Redacted.
func RedactEnv(env map[string]string, extra []string) map[string]string {
	if len(env) == 0 {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if IsSecretName(k, extra) {
			v = Redacted
		}
		out[k] = v
	}
	return out
}

// RedactArgv returns a copy of argv where the value of every secret flag (e.g. --api-key X or
// --hf-token=X) is replaced by Redacted, and so is any argument equal to the value of a
// secret in env.
func RedactArgv(argv []string, env map[string]string, extra []string) []string {
	secrets := make([]string, 0, len(env))
	for k, v := range env {
		if v != "" && IsSecretName(k, extra) {
			secrets = append(secrets, v)
		}
	}
	out := slices.Clone(argv)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if slices.Contains(secrets, a) {
			out[i] = Redacted
			continue
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !IsSecretName(name, nil) {
			continue
		}
		if hasValue {
			out[i] = a[:strings.Index(a, "=")+1] + Redacted
		} else if i+1 < len(out) && !strings.HasPrefix(out[i+1], "-") {
			out[i+1] = Redacted
			i++
		}
	}
	return out
}

// envList turns base plus overrides into an exec environment: base entries whose key is
// overridden are dropped, and the overrides are appended in sorted order.
func envList(base []string, overrides map[string]string) []string {
	out := make([]string, 0, len(base)+len(overrides))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := overrides[k]; ok {
			continue
		}
		out = append(out, kv)
	}
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+overrides[k])
	}
	return out
}
