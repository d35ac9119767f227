//go:build race

package pqwrite

// raceBuild: the race detector slows the kernels about tenfold, so the
// 16 MiB round runs in the plain build only (make test-go).
const raceBuild = true
