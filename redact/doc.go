// Package redact decides what is a secret and keeps secrets out of everything frontier
// shows or stores: provenance, engine logs, reports, exports and plan printouts.
//
// It goes by meaning, not by substring. An environment variable is a secret when its name
// says so (HF_TOKEN, *_TOKEN, *_API_KEY, *_SECRET, *_PASSWORD, *_CREDENTIALS, ...) or when
// the plan lists it in secret_env. A command-line flag's value is a secret only when the flag
// is a known secret flag (--api-key, --hf-token, ...) or the value itself is one the plan
// marks as secret (a sensitive variable, a secret_env value). So the value of
// --long-prefill-token-threshold or --max-num-batched-tokens is never hidden, while
// --api-key's always is.
//
// The package uses the standard library only, so every other package can depend on it. It
// does not know where secrets come from: callers hand it the names and values the plan and
// the environment declare.
package redact
