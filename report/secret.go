package report

import "github.com/frontier-llm/frontier/redact"

// redacted replaces a secret value wherever a report or an export would show it.
const redacted = redact.Placeholder

// isSecretName reports whether an environment variable holds a secret, by redact's rule.
func isSecretName(name string) bool { return redact.IsSecretEnv(name, nil) }

// scrub removes token-shaped secrets from free text (engine messages, reasons, outputs).
func scrub(s string) string { return redact.Text(s, nil) }

// redactArgv returns argv with the values of secret flags (--api-key, --hf-token) and any
// token-shaped argument replaced; other flags keep their values.
func redactArgv(argv []string) []string { return redact.Argv(argv, nil) }
