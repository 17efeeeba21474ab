//go:build tools

// Package kueue pins Kueue's manager command for the test control plane: go build reads
// its version, and every dependency's, from go.mod (Kueue's own requirements, no replace).
package kueue

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
