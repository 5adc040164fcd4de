// Package e2e holds the end-to-end tests of the production paths: the
// release binary in AWS mode against dynalite, s3rver and oidc-provider,
// each its own process, and in server mode (one machine, embedded storage)
// signed in through the same oidc-provider, both behind a TLS-terminating
// proxy, driven over HTTP as a browser would. Its test files carry the build tag e2e, so `go test
// ./...` leaves them out; `make e2e` (run.sh) starts the servers and runs
// them. The fault suite (faults_test.go) also needs the tag faults: `make
// faults` runs it through the same script, with toxiproxy between the
// binary and each backend.
package e2e
