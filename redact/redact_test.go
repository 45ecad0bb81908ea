package redact

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIsSecretEnvGoesByMeaning(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"HF_TOKEN", true},
		{"HUGGING_FACE_HUB_TOKEN", true},
		{"hf_token", true},
		{"OPENAI_API_KEY", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"aws_access_key_id", true},
		{"DB_PASSWORD", true},
		{"MY_CLIENT_SECRET", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", true},
		{"SERVICE_AUTH", true},
		{"TOKEN", true},
		{"MAX_TOKENS", false},
		{"TOKENIZERS_PARALLELISM", false},
		{"LONG_PREFILL_TOKEN_THRESHOLD", false},
		{"HF_HUB_OFFLINE", false},
		{"CUDA_VISIBLE_DEVICES", false},
		{"KEY_CACHE_DIR", false},
		{"AUTHOR", false},
	} {
		if got := IsSecretEnv(tt.name, nil); got != tt.want {
			t.Errorf("IsSecretEnv(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if !IsSecretEnv("PLAIN", []string{"PLAIN"}) {
		t.Error("a name listed in extra is not a secret")
	}
}

func TestIsSecretFlagOnlyForKnownFlags(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		flag string
		want bool
	}{
		{"--api-key", true},
		{"--hf-token", true},
		{"--hf-token=abc", true},
		{"api_key", true},
		{"--API-KEY", true},
		{"--long-prefill-token-threshold", false},
		{"--max-num-batched-tokens", false},
		{"--tokenizer", false},
		{"--tokenizer-mode", false},
		{"--kv-cache-dtype", false},
		{"--ssl-keyfile", false},
		{"--enable-auto-tool-choice", false},
	} {
		if got := IsSecretFlag(tt.flag); got != tt.want {
			t.Errorf("IsSecretFlag(%q) = %v, want %v", tt.flag, got, tt.want)
		}
	}
}

func TestEnvHidesSecretValuesOnly(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"HF_TOKEN":       "hf_abc",
		"OPENAI_API_KEY": "sk-1",
		"CUSTOM":         "c-value",
		"HF_HUB_OFFLINE": "1",
		"MAX_TOKENS":     "512",
	}
	want := map[string]string{
		"HF_TOKEN":       Placeholder,
		"OPENAI_API_KEY": Placeholder,
		"CUSTOM":         Placeholder,
		"HF_HUB_OFFLINE": "1",
		"MAX_TOKENS":     "512",
	}
	if diff := cmp.Diff(want, Env(env, []string{"CUSTOM"})); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
	if Env(nil, nil) != nil {
		t.Error("Env(nil) is not nil")
	}
}

func TestArgvKeepsOrdinaryFlagValues(t *testing.T) {
	t.Parallel()
	argv := []string{"vllm", "serve", "m",
		"--long-prefill-token-threshold", "1024",
		"--max-num-batched-tokens=8192",
		"--api-key", "key-1234",
		"--hf-token=hf-abcdef",
		"--served-model-name", "c-value",
		"--chat-template=/t/c-value.jinja",
		"--note", "hf_abcdefghijklmnopqrstu",
	}
	want := []string{"vllm", "serve", "m",
		"--long-prefill-token-threshold", "1024",
		"--max-num-batched-tokens=8192",
		"--api-key", Placeholder,
		"--hf-token=" + Placeholder,
		"--served-model-name", Placeholder,
		"--chat-template=" + Placeholder,
		"--note", Placeholder,
	}
	got := Argv(argv, []string{"c-value", "on"})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Argv (-want +got):\n%s", diff)
	}
	if argv[4] != "1024" || argv[7] != "key-1234" {
		t.Error("Argv changed its input")
	}
}

func TestTextReplacesKnownValuesAndTokenShapes(t *testing.T) {
	t.Parallel()
	in := "non-default args: {'max_model_len': 1024, 'api_key': 'sk-abcd-extra'} token=sk-abcd " +
		"Authorization: Bearer abcdefghijklmnopqrstuvwxyz on ghp_abcdefghijklmnopqrstuvwxyz"
	want := "non-default args: {'max_model_len': 1024, 'api_key': 'REDACTED'} token=REDACTED " +
		"Authorization: REDACTED on REDACTED"
	if diff := cmp.Diff(want, Text(in, []string{"sk-abcd", "sk-abcd-extra", "on"})); diff != "" {
		t.Errorf("Text (-want +got):\n%s", diff)
	}
}

func TestURLHidesPasswords(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"postgres://u:pw@db:5432/frontier?sslmode=disable", "postgres://u:REDACTED@db:5432/frontier?sslmode=disable"},
		{"mysql://u@db/frontier", "mysql://u@db/frontier"},
		{"postgres://db/frontier?password=pw&sslmode=require", "postgres://db/frontier?password=REDACTED&sslmode=require"},
		{"frontier.db", "frontier.db"},
	} {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestValuesOfOneLaunch(t *testing.T) {
	t.Parallel()
	got := Values(
		[]string{"vllm", "serve", "m", "--api-key", "key-from-flag", "--hf-token=tok-from-flag", "--long-prefill-token-threshold", "1024"},
		map[string]string{"MY_AUTH": "auth-value", "CUDA_VISIBLE_DEVICES": "0"},
		[]string{"HF_TOKEN=hf-from-env", "OPENAI_API_KEY=sk-from-env", "PATH=/usr/bin", "SHORT_TOKEN=ab"},
		[]string{"MY_AUTH"},
		[]string{"sensitive-var"})
	want := []string{"sensitive-var", "hf-from-env", "sk-from-env", "auth-value", "key-from-flag", "tok-from-flag"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Values (-want +got):\n%s", diff)
	}
}

func TestWriterReplacesSecretsSplitAcrossWrites(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", writerLineMax+10) + "my_secret_value" + strings.Repeat("y", 10)
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"one line", []string{"token my_secret_value here\n"}, "token REDACTED here\n"},
		{"split inside the secret", []string{"a my_sec", "ret_value b\n"}, "a REDACTED b\n"},
		{"longest secret first", []string{"key-abcd-extra and key-abcd\n"}, "REDACTED and REDACTED\n"},
		{"short values are left alone", []string{"on and on\n"}, "on and on\n"},
		{"token shapes without a known value", []string{"hf_abcdefghijklmnopqrstu\n"}, "REDACTED\n"},
		{"unfinished last line", []string{"end my_secret_value"}, "end REDACTED"},
		{"line longer than the buffer", []string{long[:writerLineMax+12], long[writerLineMax+12:] + "\n"},
			strings.Repeat("x", writerLineMax+10) + "REDACTED" + strings.Repeat("y", 10) + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			w := NewWriter(&b, []string{"key-abcd", "my_secret_value", "key-abcd-extra", "on"})
			for _, s := range tc.writes {
				if _, err := w.Write([]byte(s)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}
