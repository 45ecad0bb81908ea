package sim

// ModelVersion names the numbers of frontier's performance and answer models: the
// fingerprint (the first 12 hex digits of a SHA-256) of what they give on a fixed set of
// cases (dense and mixture-of-experts models, several GPUs, quantised weights and KV cache,
// tensor parallelism, a CPU tier of the KV cache; throughput, latencies and KV cache capacity
// from Estimate, answers and edit rates from the answer model), as
// TestModelVersionIsTheFingerprintOfTheModelsNumbers
// in modelversion_test.go computes it.
//
// Every simulated trial records it (record.Provenance.SimModel), a simulated quality baseline
// is stored under it, and a simulated study is not resumed by a frontier whose ModelVersion
// differs from the one its trials were measured with: their numbers would not be comparable.
//
// When a change to the model (a formula, a constant, a GPU's specs, how a workload is drawn)
// changes its numbers, that test fails and prints the new fingerprint: set ModelVersion to
// it in the same change.
const ModelVersion = "f2b3ce2e6fbd"
