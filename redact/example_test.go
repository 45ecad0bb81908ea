package redact_test

import (
	"fmt"

	"github.com/frontier-llm/frontier/redact"
)

// A flag whose name contains TOKEN keeps its value; --api-key and a plan's sensitive value
// do not.
func ExampleArgv() {
	argv := []string{"vllm", "serve", "m", "--long-prefill-token-threshold", "1024", "--api-key", "abcd1234", "--x", "from-a-sensitive-variable"}
	fmt.Println(redact.Argv(argv, []string{"from-a-sensitive-variable"}))
	// Output: [vllm serve m --long-prefill-token-threshold 1024 --api-key REDACTED --x REDACTED]
}

func ExampleIsSecretEnv() {
	fmt.Println(redact.IsSecretEnv("HF_TOKEN", nil), redact.IsSecretEnv("MAX_TOKENS", nil))
	// Output: true false
}
