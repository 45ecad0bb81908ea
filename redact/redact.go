package redact

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Placeholder replaces a secret value wherever it would be shown or stored.
const Placeholder = "REDACTED"

// MinValueLen is the shortest value Values and Text treat as a secret to search for in free
// text: shorter ones ("1", "on") would garble a log if every occurrence were replaced.
const MinValueLen = 4

// secretEnvSuffixes are the endings, in words, of environment variable names that hold
// secrets. A name matches when its last words are one of these (HF_TOKEN, OPENAI_API_KEY,
// AWS_SECRET_ACCESS_KEY) or when it is one of them whole (TOKEN, PASSWORD).
var secretEnvSuffixes = [][]string{
	{"TOKEN"},
	{"SECRET"},
	{"PASSWORD"},
	{"PASSWD"},
	{"CREDENTIAL"},
	{"CREDENTIALS"},
	{"APIKEY"},
	{"API", "KEY"},
	{"SECRET", "KEY"},
	{"ACCESS", "KEY"},
	{"ACCESS", "KEY", "ID"},
	{"PRIVATE", "KEY"},
	{"AUTH"},
	{"AUTH", "HEADER"},
}

// secretFlags are the command-line flags, without dashes, whose value is always a secret:
// vLLM's --api-key and --hf-token, and the generic spellings other OpenAI-compatible servers
// use for the same things.
var secretFlags = []string{
	"api-key",
	"hf-token",
	"token",
	"auth-token",
	"access-token",
	"password",
	"secret",
	"ssl-keyfile-password",
}

// words splits a name into upper-case words at anything but letters and digits.
func words(name string) []string {
	return strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
}

// IsSecretEnv reports whether the environment variable name holds a secret: its name ends,
// in words, with TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL(S), API_KEY, APIKEY,
// SECRET_KEY, ACCESS_KEY(_ID), PRIVATE_KEY or AUTH, in any case; or it is listed in extra
// (the plan's secret_env). So HF_TOKEN, OPENAI_API_KEY and DB_PASSWORD are secrets, and
// MAX_TOKENS, TOKENIZERS_PARALLELISM and HF_HUB_OFFLINE are not.
func IsSecretEnv(name string, extra []string) bool {
	if slices.Contains(extra, name) {
		return true
	}
	w := words(name)
	for _, suffix := range secretEnvSuffixes {
		if len(w) >= len(suffix) && slices.Equal(w[len(w)-len(suffix):], suffix) {
			return true
		}
	}
	return false
}

// IsSecretFlag reports whether a command-line flag always takes a secret value: --api-key,
// --hf-token, --token, --password and the like. The flag may be given with or without its
// dashes, with underscores for hyphens, and with an "=value" tail. A flag whose name merely
// contains a secret word, such as --long-prefill-token-threshold, is not a secret flag.
func IsSecretFlag(flag string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(flag, "-"), "=")
	name = strings.ToLower(strings.ReplaceAll(name, "_", "-"))
	return slices.Contains(secretFlags, name)
}

// Env returns a copy of env with the values of secret variables (IsSecretEnv with extra)
// replaced by Placeholder; nil for an empty env.
func Env(env map[string]string, extra []string) map[string]string {
	if len(env) == 0 {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if IsSecretEnv(k, extra) {
			v = Placeholder
		}
		out[k] = v
	}
	return out
}

// Argv returns a copy of argv where the value of every secret flag ("--api-key X" and
// "--hf-token=X") is Placeholder, and so is every argument, or "--flag=value" value, that
// contains one of the known secret values (those of at least MinValueLen bytes) or a
// token-shaped string (see Text). Other flags keep their values.
func Argv(argv []string, values []string) []string {
	values = searchable(values)
	out := slices.Clone(argv)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if strings.HasPrefix(a, "-") && IsSecretFlag(a) {
			if j := strings.IndexByte(a, '='); j >= 0 {
				out[i] = a[:j+1] + Placeholder
			} else if i+1 < len(out) && !strings.HasPrefix(out[i+1], "-") {
				out[i+1] = Placeholder
				i++
			}
			continue
		}
		if r := text(a, values); r != a {
			if name, _, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
				out[i] = name + "=" + Placeholder
			} else {
				out[i] = Placeholder
			}
		}
	}
	return out
}

// tokenShaped matches token formats that must never be shown, whatever name they came under:
// Hugging Face, OpenAI-style and GitHub tokens, and bearer credentials.
var tokenShaped = regexp.MustCompile(`\b(hf_[A-Za-z0-9]{16,}|sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|(?i:bearer)\s+[A-Za-z0-9._~+/-]{16,}=*)`)

// Text returns s with every occurrence of a known secret value (those of at least
// MinValueLen bytes, longest first) and every token-shaped string (Hugging Face hf_...,
// OpenAI-style sk-..., GitHub gh?_... tokens, "Bearer ..." credentials) replaced by
// Placeholder. It is for free text: engine messages, failure reasons, model outputs.
func Text(s string, values []string) string {
	return text(s, searchable(values))
}

func text(s string, values []string) string {
	if len(values) > 0 {
		s = replacer(values).Replace(s)
	}
	return tokenShaped.ReplaceAllString(s, Placeholder)
}

// searchable keeps the values long enough to search for, without duplicates, longest first,
// so that a secret that contains another is replaced whole.
func searchable(values []string) []string {
	var out []string
	for _, v := range values {
		if len(v) >= MinValueLen && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

func replacer(values []string) *strings.Replacer {
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, Placeholder)
	}
	return strings.NewReplacer(pairs...)
}

// URL returns raw with the password of its user information replaced by Placeholder, and
// the values of query parameters that IsSecretEnv or IsSecretFlag calls secrets (password,
// sslpassword, api_key, token) replaced too. A string that does not parse as a URL is
// returned with Text's redaction only.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return Text(raw, nil)
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Placeholder)
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		changed := false
		for k, vs := range q {
			if IsSecretEnv(k, nil) || IsSecretFlag(k) || strings.EqualFold(k, "sslpassword") {
				for i := range vs {
					vs[i] = Placeholder
				}
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// Values returns the secret values one launch can see, for Text and NewWriter: the values
// of secret variables in environ ("NAME=value" entries) and in env, the values of secret
// flags in argv, and the values the plan declares secret (sensitive variables), each once
// and at least MinValueLen bytes long.
func Values(argv []string, env map[string]string, environ []string, extra []string, declared []string) []string {
	var out []string
	add := func(v string) {
		if len(v) >= MinValueLen && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, v := range declared {
		add(v)
	}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && IsSecretEnv(k, extra) {
			add(v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if IsSecretEnv(k, extra) {
			add(env[k])
		}
	}
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") || !IsSecretFlag(a) {
			continue
		}
		if _, v, ok := strings.Cut(a, "="); ok {
			add(v)
		} else if i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
			add(argv[i+1])
			i++
		}
	}
	return out
}
