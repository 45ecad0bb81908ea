package launcher

import (
	"bytes"
	"io"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Redacted replaces the value of a secret in provenance and log headers.
const Redacted = "REDACTED"

// secretWords are the words of a name that mark it as a secret.
var secretWords = [...]string{"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS", "AUTH"}

// IsSecretName reports whether an environment variable or flag name holds a secret: one of
// its words (split at anything but letters and digits, in any case) is, or ends with, TOKEN,
// KEY, SECRET, PASSWORD, PASSWD, CREDENTIAL(S) or AUTH, or the name is listed in extra. So
// HF_TOKEN, OPENAI_API_KEY, --api-key and MYAPIKEY are secrets, while
// --max-num-batched-tokens and --tokenizer, whose words only contain TOKEN, are not.
func IsSecretName(name string, extra []string) bool {
	if slices.Contains(extra, name) {
		return true
	}
	words := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		for _, s := range secretWords {
			if strings.HasSuffix(w, s) {
				return true
			}
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

// minSecretLen is the shortest value SecretValues reports: shorter ones ("1", "on") would
// garble a log if every occurrence were replaced.
const minSecretLen = 4

// SecretValues returns the secret values of one launch: the values of secret variables in
// environ ("KEY=value") and env, and the values of secret flags in argv (--api-key X,
// --hf-token=X). They are what ProcessConfig.Redact keeps out of the log.
func SecretValues(argv []string, env map[string]string, environ []string, extra []string) []string {
	var out []string
	add := func(v string) {
		if len(v) >= minSecretLen && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && IsSecretName(k, extra) {
			add(v)
		}
	}
	for k, v := range env {
		if IsSecretName(k, extra) {
			add(v)
		}
	}
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !IsSecretName(name, nil) {
			continue
		}
		if hasValue {
			add(v)
		} else if i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
			add(argv[i+1])
			i++
		}
	}
	return out
}

// redactable keeps the values long enough to redact, longest first, so that a secret that
// contains another is replaced whole.
func redactable(secrets []string) []string {
	var out []string
	for _, s := range secrets {
		if len(s) >= minSecretLen && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// redactWriter writes whole lines to w with every secret replaced by Redacted; Flush writes
// what is left of an unfinished line. A line longer than 64 KiB is written in pieces that
// keep the last len(longest secret)-1 bytes back, so a secret is never split unseen.
type redactWriter struct {
	w       io.Writer
	secrets []string
	r       *strings.Replacer
	buf     []byte
}

func newRedactWriter(w io.Writer, secrets []string) *redactWriter {
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, Redacted)
	}
	return &redactWriter{w: w, secrets: secrets, r: strings.NewReplacer(pairs...)}
}

const redactLineMax = 64 << 10

func (rw *redactWriter) Write(p []byte) (int, error) {
	rw.buf = append(rw.buf, p...)
	if i := bytes.LastIndexByte(rw.buf, '\n'); i >= 0 {
		if err := rw.emit(i + 1); err != nil {
			return 0, err
		}
	}
	if len(rw.buf) > redactLineMax {
		keep := 0
		if len(rw.secrets) > 0 {
			keep = len(rw.secrets[0]) - 1
		}
		// Replace what is complete; a secret may straddle the cut only within keep bytes.
		line := rw.r.Replace(string(rw.buf))
		if _, err := io.WriteString(rw.w, line[:len(line)-keep]); err != nil {
			return 0, err
		}
		rw.buf = append(rw.buf[:0], line[len(line)-keep:]...)
	}
	return len(p), nil
}

func (rw *redactWriter) emit(n int) error {
	_, err := io.WriteString(rw.w, rw.r.Replace(string(rw.buf[:n])))
	rw.buf = append(rw.buf[:0], rw.buf[n:]...)
	return err
}

// Flush writes the rest of an unfinished line.
func (rw *redactWriter) Flush() error {
	if len(rw.buf) == 0 {
		return nil
	}
	return rw.emit(len(rw.buf))
}
