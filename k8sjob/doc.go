// Package k8sjob writes the Kubernetes manifests of a study run across a GPU cluster: an
// Indexed Job whose pods each run `frontier apply` on the plan against one shared study
// database (PostgreSQL), the ConfigMap holding the plan and every file it reads, a service
// account with no API access, and, when no database is given, a PostgreSQL StatefulSet with
// its Service and claim. The manifests are meant for `kubectl apply --server-side -f`.
//
// Every object is named after the study with a hash of its name and database (Name), every
// pod meets PodSecurity "restricted", and a worker's requests are bounded by what one node
// holds. Every string written into a manifest is quoted for YAML (a double-quoted scalar with
// escapes for every character YAML cannot hold raw) and, in a container's command, args and
// env values, escaped for Kubernetes' $(VAR) expansion ($ written as $$); comments never
// hold a control character. It leaves to the caller loading the plan, and to the cluster
// creating the Secrets the comments at the top name (the study's own database password
// among them, made once): no value of a secret the plan or the environment holds is
// written, in any escape.
package k8sjob
