package launcher

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

var (
	kvTokensRE    = regexp.MustCompile(`GPU KV cache size: ([\d,]+) tokens`)
	concurrencyRE = regexp.MustCompile(`Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x`)
	// cacheConfigRE matches vLLM's cache_config_info gauge; label order varies.
	cacheConfigRE = regexp.MustCompile(`^vllm:cache_config_info\{([^}]*)\}`)
	labelRE       = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// ParseCapacityLog reads the KV-cache capacity from vLLM's startup log lines
// ("GPU KV cache size: N tokens", "Maximum concurrency for N tokens per request: Xx"). With
// data parallelism there is one line per engine; the sizes are added up. ok is false when the
// log has neither line.
func ParseCapacityLog(log string) (c Capacity, ok bool) {
	for _, m := range kvTokensRE.FindAllStringSubmatch(log, -1) {
		n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		if err == nil {
			c.KVCacheTokens += n
			ok = true
		}
	}
	for _, m := range concurrencyRE.FindAllStringSubmatch(log, -1) {
		x, err := strconv.ParseFloat(m[2], 64)
		if err == nil {
			c.MaxConcurrency += x
			ok = true
		}
	}
	return c, ok
}

// ParseCacheConfigInfo reads the KV-cache capacity from the Prometheus text of vLLM's
// /metrics: vllm:cache_config_info{num_gpu_blocks="N",block_size="B"} gives N×B tokens, and
// the maximum concurrency is that over maxModelLen (when maxModelLen > 0). ok is false when
// the gauge is missing.
func ParseCacheConfigInfo(metrics string, maxModelLen int) (c Capacity, ok bool) {
	for _, line := range strings.Split(metrics, "\n") {
		m := cacheConfigRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		var blocks, size int
		for _, l := range labelRE.FindAllStringSubmatch(m[1], -1) {
			switch l[1] {
			case "num_gpu_blocks":
				blocks, _ = strconv.Atoi(l[2])
			case "block_size":
				size, _ = strconv.Atoi(l[2])
			}
		}
		if blocks <= 0 || size <= 0 || blocks > 1<<40 || size > 1<<20 {
			continue // absent or absurd
		}
		c.KVCacheTokens += blocks * size
		ok = true
	}
	if ok && maxModelLen > 0 {
		c.MaxConcurrency = float64(c.KVCacheTokens) / float64(maxModelLen)
	}
	return c, ok
}

// scrapeCapacity reads the capacity from baseURL/metrics.
func scrapeCapacity(ctx context.Context, client *http.Client, baseURL string, maxModelLen int) (Capacity, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/metrics", nil)
	if err != nil {
		return Capacity{}, false
	}
	resp, err := client.Do(req)
	if err != nil {
		return Capacity{}, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Capacity{}, false
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return Capacity{}, false
	}
	return ParseCacheConfigInfo(string(b), maxModelLen)
}
