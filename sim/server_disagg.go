package sim

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/frontier-llm/frontier/vllm"
)

// This file is the simulated vLLM's side of prefill/decode disaggregation: the NixlConnector
// that --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}' turns on.
//
// As a prefill instance (a request whose kv_transfer_params say do_remote_decode), the server
// answers as usual and then holds the prompt's KV cache for a decode instance to read,
// returning kv_transfer_params as vLLM's NixlConnector does (request_finished in
// vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py): do_remote_prefill,
// remote_engine_id, remote_request_id, remote_block_ids, remote_host and remote_port (its
// side channel, VLLM_NIXL_SIDE_CHANNEL_HOST and VLLM_NIXL_SIDE_CHANNEL_PORT, default 5600)
// and tp_size.
//
// As a decode instance (do_remote_prefill), the server reads those blocks from the prefill
// instance before it schedules the request. Where vLLM's NIXL agent reads GPU memory over
// RDMA, the simulated one asks the prefill instance's side channel, over HTTP, for the held
// blocks of that request: the prefill instance checks the engine id, the request id, the
// block ids and a digest of the prompt's tokens, hands the blocks over once and forgets them.
// A decode instance therefore cannot skip a prefill that did not happen, nor take another
// prompt's: such a request fails with HTTP 500 and the prefill instance's reason. The read
// then takes the modelled transfer time (NewTransferLink: the prompt's KV bytes over the
// SKU's fabric within a node) before the request enters the scheduler with all but the
// prompt's last token computed, which vLLM recomputes for its logits.

// nixlAbortTimeout is how long a prefill instance holds a request's blocks for a decode
// instance that never reads them (VLLM_NIXL_ABORT_REQUEST_TIMEOUT, 480 s by default).
const nixlAbortTimeout = 480 * time.Second

// defaultSideChannelPort is VLLM_NIXL_SIDE_CHANNEL_PORT's default.
const defaultSideChannelPort = 5600

// kvTransferConfig is --kv-transfer-config, as far as the simulator reads it.
type kvTransferConfig struct {
	KVConnector string `json:"kv_connector"`
	KVRole      string `json:"kv_role"`
	EngineID    string `json:"engine_id"`
}

// parseKVTransferConfig finds --kv-transfer-config among the flags the simulator does not
// model and checks it as vLLM's KVTransferConfig does; nil when it is not given.
func parseKVTransferConfig(other []string) (*kvTransferConfig, error) {
	i := slices.Index(other, "--kv-transfer-config")
	if i < 0 || i+1 >= len(other) {
		return nil, nil
	}
	var c kvTransferConfig
	if err := json.Unmarshal([]byte(other[i+1]), &c); err != nil {
		return nil, fmt.Errorf("--kv-transfer-config: %v", err)
	}
	switch {
	case c.KVConnector == "":
		return nil, nil // no connector: vLLM ignores the rest
	case c.KVRole == "":
		return nil, fmt.Errorf("ValueError: Please specify kv_role when kv_connector is set, supported roles are ['kv_producer', 'kv_consumer', 'kv_both']")
	case !slices.Contains([]string{"kv_producer", "kv_consumer", "kv_both"}, c.KVRole):
		return nil, fmt.Errorf("ValueError: Unsupported kv_role: %s. Supported roles are ['kv_producer', 'kv_consumer', 'kv_both']", c.KVRole)
	case c.KVConnector != "NixlConnector":
		return nil, fmt.Errorf("ValueError: Unsupported connector type: %s (the simulator models the NixlConnector)", c.KVConnector)
	}
	return &c, nil
}

// kvConnector is a server's simulated NixlConnector.
type kvConnector struct {
	cfg      kvTransferConfig
	engineID string
	host     string
	port     int
	link     TransferLink // per token, with this instance's TP; the read uses min(TP) links
	ownTP    int
	client   *http.Client

	mu        sync.Mutex
	held      map[string]heldKV
	nextBlock int
}

// heldKV is a prefill's KV cache held for a decode instance.
type heldKV struct {
	tokens int
	blocks []int
	digest string
	until  time.Time
}

// newKVConnector sets up the connector of --kv-transfer-config and binds its side channel,
// or returns nil when the server runs without one.
func newKVConnector(o ServeOptions, st Startup, getenv func(string) string) (*kvConnector, net.Listener, error) {
	cfg, err := parseKVTransferConfig(o.Args.Other)
	if err != nil || cfg == nil {
		return nil, nil, err
	}
	k := &kvConnector{cfg: *cfg, engineID: cfg.EngineID, held: map[string]heldKV{}, ownTP: max(st.Config.TensorParallelSize, 1),
		client: &http.Client{Timeout: 30 * time.Second}}
	if k.engineID == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		k.engineID = hex.EncodeToString(b[:])
	}
	k.host = getenv("VLLM_NIXL_SIDE_CHANNEL_HOST")
	if k.host == "" {
		k.host = "localhost"
	}
	k.port = defaultSideChannelPort
	if p := getenv("VLLM_NIXL_SIDE_CHANNEL_PORT"); p != "" {
		if k.port, err = strconv.Atoi(p); err != nil || k.port < 0 || k.port > 65535 {
			return nil, nil, fmt.Errorf("VLLM_NIXL_SIDE_CHANNEL_PORT=%q is not a port number", p)
		}
	}
	k.link = NewTransferLink(o.Arch, o.SKU, st, Disaggregation{Prefill: 1, Decode: 1, PrefillTP: 1, DecodeTP: 1}, st.Config)
	ln, err := net.Listen("tcp", net.JoinHostPort(k.host, strconv.Itoa(k.port)))
	if err != nil {
		return nil, nil, sideChannelBindError(k.host, k.port, err)
	}
	return k, ln, nil
}

// sideChannelBindError is the failure to bind the side channel as vLLM's NixlConnector
// meets it: its handshake listener binds a zmq ROUTER socket on
// tcp://VLLM_NIXL_SIDE_CHANNEL_HOST:PORT, and a port another process holds (a second
// instance on the host with the same VLLM_NIXL_SIDE_CHANNEL_PORT) ends the engine core's
// start with zmq's "Address already in use" (vLLM issue #20965).
func sideChannelBindError(host string, port int, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("zmq.error.ZMQError: Address already in use (addr='tcp://%s:%d')", host, port)
	}
	return fmt.Errorf("zmq.error.ZMQError: %v (addr='tcp://%s:%d')", err, host, port)
}

// serveSideChannel answers decode instances' reads until ctx is done.
func (k *kvConnector) serveSideChannel(ctx context.Context, ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /nixl/read", k.handleRead)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	_ = hs.Serve(ln) // ends with the server
}

// kvRead is a decode instance's read of a prefill's blocks over the side channel.
type kvRead struct {
	EngineID  string `json:"engine_id"`
	RequestID string `json:"request_id"`
	BlockIDs  []int  `json:"block_ids"`
	Digest    string `json:"digest"`
}

// kvReadAnswer is what the prefill instance hands over.
type kvReadAnswer struct {
	Tokens int    `json:"tokens"`
	TPSize int    `json:"tp_size"`
	Error  string `json:"error,omitempty"`
}

func (k *kvConnector) handleRead(w http.ResponseWriter, r *http.Request) {
	var rd kvRead
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&rd); err != nil {
		writeJSON(w, http.StatusBadRequest, kvReadAnswer{Error: "not a read request: " + err.Error()})
		return
	}
	if rd.EngineID != k.engineID {
		writeJSON(w, http.StatusNotFound, kvReadAnswer{Error: fmt.Sprintf("engine %s is not this instance (engine %s)", rd.EngineID, k.engineID)})
		return
	}
	k.mu.Lock()
	h, ok := k.held[rd.RequestID]
	if ok && time.Now().After(h.until) {
		delete(k.held, rd.RequestID)
		ok = false
	}
	switch {
	case !ok:
		k.mu.Unlock()
		writeJSON(w, http.StatusNotFound, kvReadAnswer{Error: fmt.Sprintf("no KV cache is held for request %s: it was never prefilled here, was read already, or was freed after %s", rd.RequestID, nixlAbortTimeout)})
		return
	case !slices.Equal(h.blocks, rd.BlockIDs):
		k.mu.Unlock()
		writeJSON(w, http.StatusConflict, kvReadAnswer{Error: fmt.Sprintf("request %s holds blocks %v, not %v", rd.RequestID, h.blocks, rd.BlockIDs)})
		return
	case h.digest != rd.Digest:
		k.mu.Unlock()
		writeJSON(w, http.StatusConflict, kvReadAnswer{Error: fmt.Sprintf("request %s was prefilled with another prompt", rd.RequestID)})
		return
	}
	delete(k.held, rd.RequestID) // the blocks are freed once read, as vLLM frees them
	k.mu.Unlock()
	writeJSON(w, http.StatusOK, kvReadAnswer{Tokens: h.tokens, TPSize: k.ownTP})
}

// kvParams are a request's kv_transfer_params.
type kvParams struct {
	DoRemoteDecode  bool    `json:"do_remote_decode"`
	DoRemotePrefill bool    `json:"do_remote_prefill"`
	RemoteEngineID  *string `json:"remote_engine_id"`
	RemoteRequestID *string `json:"remote_request_id"`
	RemoteBlockIDs  []int   `json:"remote_block_ids"`
	RemoteHost      *string `json:"remote_host"`
	RemotePort      *int    `json:"remote_port"`
	TPSize          int     `json:"tp_size"`
}

// kvRequest is what the connector does for one request: hold its KV cache for a decode
// instance (produce), or start it with remote tokens read from a prefill instance.
type kvRequest struct {
	produce bool
	digest  string
	tokens  int
	remote  int
	xfer    time.Duration
}

// remoteTokens is how many prompt tokens' KV the request starts with.
func (kr *kvRequest) remoteTokens() int {
	if kr == nil {
		return 0
	}
	return kr.remote
}

// promptDigest identifies a prompt's tokens.
func promptDigest(units []uint64) string {
	h := fnv.New64a()
	var b [8]byte
	for _, u := range units {
		for i := range b {
			b[i] = byte(u >> (8 * i))
		}
		h.Write(b[:])
	}
	return strconv.FormatUint(h.Sum64(), 16)
}

// kvTransferOf reads a request's kv_transfer_params. A decode request's blocks are read from
// its prefill instance here, taking the modelled transfer time, before it is scheduled.
// Without a connector the parameters are ignored, as vLLM ignores them.
func (sv *server) kvTransferOf(ctx context.Context, req *apiRequest, units []uint64) (*kvRequest, *apiError) {
	raw, ok := req.has["kv_transfer_params"]
	if sv.kv == nil || !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	var p kvParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, validation{msg: "kv_transfer_params: " + err.Error(), param: "kv_transfer_params"}.serving(sv.dialect)
	}
	digest := promptDigest(units)
	switch {
	case p.DoRemoteDecode:
		return &kvRequest{produce: true, digest: digest, tokens: len(units)}, nil
	case !p.DoRemotePrefill:
		return nil, nil
	}
	if p.RemoteEngineID == nil || p.RemoteRequestID == nil || p.RemoteHost == nil || p.RemotePort == nil || p.RemoteBlockIDs == nil {
		return nil, validation{msg: "kv_transfer_params with do_remote_prefill need remote_engine_id, remote_request_id, remote_block_ids, remote_host and remote_port, as the prefill instance returned them", param: "kv_transfer_params"}.serving(sv.dialect)
	}
	body, _ := json.Marshal(kvRead{EngineID: *p.RemoteEngineID, RequestID: *p.RemoteRequestID, BlockIDs: p.RemoteBlockIDs, Digest: digest})
	url := "http://" + net.JoinHostPort(*p.RemoteHost, strconv.Itoa(*p.RemotePort)) + "/nixl/read"
	fail := func(why string) *apiError {
		sv.lg.printf("EngineCore_DP0", "ERROR", "[nixl_connector.py] KV transfer from engine %s at %s:%d failed: %s", *p.RemoteEngineID, *p.RemoteHost, *p.RemotePort, why)
		return &apiError{status: http.StatusInternalServerError, typ: "InternalServerError",
			msg: fmt.Sprintf("KV transfer from engine %s at %s:%d failed: %s", *p.RemoteEngineID, *p.RemoteHost, *p.RemotePort, why)}
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fail(err.Error())
	}
	resp, err := sv.kv.client.Do(hreq)
	if err != nil {
		return nil, fail(err.Error())
	}
	var ans kvReadAnswer
	derr := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&ans)
	resp.Body.Close()
	switch {
	case derr != nil:
		return nil, fail("the side channel's answer: " + derr.Error())
	case resp.StatusCode != http.StatusOK:
		return nil, fail(ans.Error)
	}
	link := sv.kv.link
	link.GBs *= float64(max(min(ans.TPSize, sv.kv.ownTP), 1))
	kr := &kvRequest{digest: digest, tokens: ans.Tokens, remote: max(ans.Tokens-1, 0)}
	kr.xfer = time.Duration(link.Seconds(ans.Tokens) * float64(time.Second))
	select {
	case <-time.After(kr.xfer):
	case <-ctx.Done():
		return nil, &apiError{status: 499, typ: "Cancelled", msg: "the client went away during the KV transfer"}
	}
	return kr, nil
}

// kvResponse holds a finished prefill's KV cache for a decode instance and returns the
// kv_transfer_params that say where it is; nil for any other request.
func (sv *server) kvResponse(kr *kvRequest, requestID string) any {
	if kr == nil || !kr.produce {
		return nil
	}
	k := sv.kv
	bs := max(sv.eng.cfg.BlockSize, 1)
	n := (kr.tokens + bs - 1) / bs
	k.mu.Lock()
	now := time.Now()
	for id, h := range k.held {
		if now.After(h.until) {
			delete(k.held, id)
		}
	}
	blocks := make([]int, n)
	for i := range blocks {
		blocks[i] = k.nextBlock + i
	}
	k.nextBlock += n
	k.held[requestID] = heldKV{tokens: kr.tokens, blocks: blocks, digest: kr.digest, until: now.Add(nixlAbortTimeout)}
	k.mu.Unlock()
	return orderedMap{{"do_remote_prefill", true}, {"do_remote_decode", false}, {"remote_block_ids", blocks},
		{"remote_engine_id", k.engineID}, {"remote_request_id", requestID}, {"remote_host", k.host},
		{"remote_port", k.port}, {"tp_size", k.ownTP}}
}

// osGetenv is the environment lookup when ServeOptions.Getenv is nil.
func osGetenv(name string) string { return os.Getenv(name) }

// kvRoleDeprecated reports whether the emulated vLLM line's NixlConnector warns about
// kv_role kv_both (vllm.Version.KVRoleDeprecated).
func kvRoleDeprecated(line string) bool {
	v, err := vllm.Lookup(line)
	return err == nil && v.KVRoleDeprecated()
}
