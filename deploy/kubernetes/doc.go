// Package kubernetes holds onceflow's Kubernetes manifests (a StatefulSet of
// the orders example, its headless Service and PodDisruptionBudget) and the
// test that decodes them strictly against the Kubernetes API types and checks
// what onceflow needs of them. It is a module of its own so that the API
// types stay out of onceflow's go.mod; `make compose-check` runs its test.
package kubernetes
