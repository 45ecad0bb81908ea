// Package router is frontier's router for a prefill/decode disaggregated deployment of vLLM:
// an OpenAI-compatible HTTP server in front of prefill and decode instances that speaks
// vLLM's disaggregation protocol, as the NixlConnector's proxies in vLLM's repository do
// (tests/v1/kv_connector/nixl_integration/toy_proxy_server.py,
// examples/online_serving/disaggregated_serving). Each completion or chat completion is
// first sent to a prefill instance with max_tokens 1, stream false and
// kv_transfer_params {"do_remote_decode": true, ...}; the kv_transfer_params of its answer
// (remote_engine_id, remote_block_ids, remote_host, remote_port, ...) go with the original
// request to a decode instance, whose answer, streamed or not, is passed through to the
// client as it arrives. Of the prefill's answer only its kv_transfer_params are kept, read as
// the answer arrives (an answer of any size takes constant memory); a client's own
// kv_transfer_params are passed to neither instance. Connections to the instances are kept
// open and reused (MaxIdleConnsPerInstance), and the router's /health asks each instance's
// within a bound (Config.HealthTimeout).
//
// Instances are picked by the fewest requests the router has in flight to each. The router
// does not move KV caches (the instances' connector does), check API keys (the instances
// do; the client's Authorization header is forwarded) or start the instances (package
// launcher does, and runs the router as `frontier router`).
package router
