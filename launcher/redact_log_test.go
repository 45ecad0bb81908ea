package launcher

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRedactWriterReplacesSecretsSplitAcrossWrites(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", redactLineMax+10) + "hf_secret_value" + strings.Repeat("y", 10)
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"one line", []string{"token hf_secret_value here\n"}, "token REDACTED here\n"},
		{"split inside the secret", []string{"a hf_sec", "ret_value b\n"}, "a REDACTED b\n"},
		{"longest secret first", []string{"sk-abcd-extra and sk-abcd\n"}, "REDACTED and REDACTED\n"},
		{"unfinished last line", []string{"end hf_secret_value"}, "end REDACTED"},
		{"line longer than the buffer", []string{long[:redactLineMax+12], long[redactLineMax+12:] + "\n"},
			strings.Repeat("x", redactLineMax+10) + "REDACTED" + strings.Repeat("y", 10) + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			w := newRedactWriter(&b, redactable([]string{"sk-abcd", "hf_secret_value", "sk-abcd-extra", "on"}))
			for _, s := range tc.writes {
				if _, err := w.Write([]byte(s)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSecretValues(t *testing.T) {
	t.Parallel()
	got := SecretValues(
		[]string{"vllm", "serve", "m", "--api-key", "key-from-flag", "--hf-token=tok-from-flag", "--port", "8000"},
		map[string]string{"MY_AUTH": "auth-value", "CUDA_VISIBLE_DEVICES": "0"},
		[]string{"HF_TOKEN=hf-from-env", "OPENAI_API_KEY=sk-from-env", "PATH=/usr/bin", "SHORT_TOKEN=ab"},
		[]string{"MY_AUTH"})
	want := []string{"hf-from-env", "sk-from-env", "auth-value", "key-from-flag", "tok-from-flag"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SecretValues (-want +got):\n%s", diff)
	}
}

func TestProcessLogKeepsSecretsOut(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "engine.log")
	// An engine that echoes its flags and environment, as vLLM's "non-default args" does.
	p, err := StartProcess(context.Background(), ProcessConfig{
		Argv:    []string{"/bin/sh", "-c", `echo "non-default args: {'api_key': '$1'}"; printf 'token %s' "$HF_TOKEN"`, "sh", "key-from-flag"},
		Env:     []string{"HF_TOKEN=hf-from-env"},
		LogPath: log,
		Redact:  []string{"key-from-flag", "hf-from-env"},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "non-default args: {'api_key': 'REDACTED'}\ntoken REDACTED"
	if diff := cmp.Diff(want, string(raw)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if tail := p.LogTail(1 << 10); tail != want {
		t.Errorf("LogTail = %q; want %q", tail, want)
	}
}

func TestIsSecretNameGoesByWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		want bool
	}{
		{"HF_TOKEN", true},
		{"HUGGING_FACE_HUB_TOKEN", true},
		{"OPENAI_API_KEY", true},
		{"--api-key", true},
		{"--hf-token", true},
		{"MYAPIKEY", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"DB_PASSWORD", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", true},
		{"SERVICE_AUTH", true},
		{"--max-num-batched-tokens", false},
		{"max_num_batched_tokens", false},
		{"--tokenizer", false},
		{"--max-model-len", false},
		{"CUDA_VISIBLE_DEVICES", false},
		{"--kv-cache-dtype", false},
	}
	for _, tt := range tests {
		if got := IsSecretName(tt.name, nil); got != tt.want {
			t.Errorf("IsSecretName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if !IsSecretName("PLAIN", []string{"PLAIN"}) {
		t.Error("a name listed in extra is not a secret")
	}
}
