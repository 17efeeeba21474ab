//go:build tools

// Package kyverno pins Kyverno's admission controller command for the test control plane:
// go build reads its version, and every dependency's, from go.mod (Kyverno's own
// requirements, and the one replace its own go.mod makes: k8s.io/pod-security-admission
// => github.com/kyverno/pod-security-admission, which a dependency's replace does not carry).
package kyverno

import (
	_ "github.com/kyverno/kyverno/cmd/kyverno"
)
