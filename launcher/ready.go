package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Errors WaitReady wraps, for the adapters to classify.
var (
	// ErrStartupTimeout means the engine did not become ready within its startup timeout.
	ErrStartupTimeout = errors.New("engine not ready within the startup timeout")
	// ErrExitedEarly means the engine's process exited before it became ready.
	ErrExitedEarly = errors.New("engine exited before it was ready")
	// ErrFatal, wrapped in a probe's error, tells WaitReady to give up at once: the engine
	// has logged a failure it will not recover from, though its process may still run.
	ErrFatal = errors.New("engine reported a fatal error")
	// ErrUnauthorized, wrapped with ErrFatal, means the engine refused the readiness probe's
	// API key, or its absence, with 401 or 403: it will not accept the workload's either.
	ErrUnauthorized = errors.New("the engine refused the API key")
)

// ProbeFunc reports whether an engine is ready: nil when it is, an error saying why not
// otherwise. It is called repeatedly and must return promptly.
type ProbeFunc func(ctx context.Context) error

// pollInterval is how often WaitReady probes an engine.
const pollInterval = 200 * time.Millisecond

// WaitReady probes the engine until probe succeeds, the process exits, timeout passes or ctx
// ends, whichever comes first. It returns nil when ready; otherwise an error wrapping
// ErrExitedEarly, ErrStartupTimeout or ctx's error, with the last probe error for context,
// or the probe's own error when it wraps ErrFatal. It does not stop the process.
func WaitReady(ctx context.Context, p *Process, timeout time.Duration, probe ProbeFunc) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	ready := make(chan struct{})
	fatal := make(chan struct{})
	var lastErr error // written only by the prober; read after it has returned
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(pollInterval)
		defer tick.Stop()
		for {
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			err := probe(pctx)
			pcancel()
			if err == nil {
				close(ready)
				return
			}
			if ctx.Err() != nil {
				return
			}
			lastErr = err
			if errors.Is(err, ErrFatal) {
				close(fatal)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()

	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	var err error
	select {
	case <-ready:
		return nil
	case <-p.Exited():
		err = ErrExitedEarly
	case <-fatal:
		<-done
		return lastErr
	case <-timer:
		err = fmt.Errorf("%w (%s)", ErrStartupTimeout, timeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	cancel()
	<-done
	select {
	case <-ready: // became ready in the same instant as the timeout fired
		if errors.Is(err, ErrStartupTimeout) {
			return nil
		}
	default:
	}
	if lastErr != nil {
		return fmt.Errorf("%w; last probe: %v", err, lastErr)
	}
	return err
}

// OpenAIProbe returns a probe for an OpenAI-compatible server at baseURL: ready when
// GET /health answers 200 and GET /v1/models lists model. A nil client means a client with
// no redirects to other hosts and no proxy.
func OpenAIProbe(client *http.Client, baseURL, model string) ProbeFunc {
	return openAIProbe(client, baseURL, model, "")
}

// openAIProbe is OpenAIProbe sending key, when not empty, as a bearer token. A 401 or 403
// ends the wait at once (ErrFatal and ErrUnauthorized).
func openAIProbe(client *http.Client, baseURL, model, key string) ProbeFunc {
	if client == nil {
		client = LoopbackClient()
	}
	return func(ctx context.Context) error {
		if err := getOK(ctx, client, baseURL+"/health", "", nil); err != nil {
			return err
		}
		var models struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := getOK(ctx, client, baseURL+"/v1/models", key, &models); err != nil {
			var ue *unauthorizedError
			if errors.As(err, &ue) {
				sent := "without an API key"
				if key != "" {
					sent = "with the key of the engine's --api-key or VLLM_API_KEY"
				}
				return fmt.Errorf("%w: %w: GET /v1/models answered %s %s; give the engine its key by --api-key or VLLM_API_KEY in the engine block, and frontier sends it",
					ErrFatal, ErrUnauthorized, ue.status, sent)
			}
			return err
		}
		ids := make([]string, 0, len(models.Data))
		for _, m := range models.Data {
			if m.ID == model {
				return nil
			}
			ids = append(ids, m.ID)
		}
		return fmt.Errorf("/v1/models lists %q, not %q", ids, model)
	}
}

// LoopbackClient is an HTTP client for engines on 127.0.0.1: no proxy from the environment.
func LoopbackClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
	}
}

// unauthorizedError is a 401 or 403 answer.
type unauthorizedError struct{ status string }

func (e *unauthorizedError) Error() string { return e.status }

// getOK GETs url, with key as a bearer token when not empty, and wants 200; it decodes a JSON
// body into v when v is not nil. A 401 or 403 is an *unauthorizedError.
func getOK(ctx context.Context, client *http.Client, url, key string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return &unauthorizedError{resp.Status}
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if v == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<22)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. Another process may
// take it before the engine binds it; the adapters classify that as FailPortTaken.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	return port, nil
}
