package report

import (
	"regexp"
	"strings"

	"github.com/frontier-llm/frontier/launcher"
)

// redacted replaces a secret value wherever a report or an export would show it.
const redacted = "REDACTED"

// isSecretName reports whether an environment variable or flag name looks like it holds a
// secret, by the launcher's rule.
func isSecretName(name string) bool { return launcher.IsSecretName(name, nil) }

// secretValue matches token formats that must never be shown, whatever name they came under:
// Hugging Face, OpenAI-style and GitHub tokens, and bearer credentials.
var secretValue = regexp.MustCompile(`\b(hf_[A-Za-z0-9]{16,}|sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|(?i:bearer)\s+[A-Za-z0-9._~+/-]{16,}=*)`)

// scrub removes token-shaped secrets from free text (engine messages, reasons, outputs).
func scrub(s string) string {
	return secretValue.ReplaceAllString(s, redacted)
}

// redactArgv returns argv with the values of secret-looking flags replaced: both
// "--api-key X" and "--hf-token=X" forms, and any token-shaped argument.
func redactArgv(argv []string) []string {
	out := make([]string, len(argv))
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		switch {
		case strings.HasPrefix(a, "-") && strings.Contains(a, "="):
			name, _, _ := strings.Cut(a, "=")
			if isSecretName(name) {
				a = name + "=" + redacted
			}
			out[i] = scrub(a)
		case strings.HasPrefix(a, "-") && isSecretName(a) && i+1 < len(argv):
			out[i] = a
			i++
			out[i] = redacted
		default:
			out[i] = scrub(a)
		}
	}
	return out
}
