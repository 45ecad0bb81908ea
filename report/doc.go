// Package report turns a stored study into decisions people act on: the Pareto front as a
// table (text, Markdown or HTML with SVG plots drawn here), the recommended configuration and
// why, what failed and why, what each knob does on its own, GPU time and provenance; the
// chosen configuration as a `vllm serve` line, a YAML file for `vllm serve --config`, a
// `docker run` line or a Kubernetes Deployment; and several studies side by side.
//
// Everything starts from a *record.Study, the study as stored. Analyze computes what the
// human renderers show; each renderer is a plain function that writes one format to an
// io.Writer. The package reads records and never touches a study database: loading a study
// is the search package's job, and choosing a file to write is the command's. Every number
// that came from frontier's performance model rather than a real engine is marked as
// simulated, and nothing that looks like a secret is ever written out.
package report
