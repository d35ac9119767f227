// Package integration holds the end-to-end tests: a real gateway on
// loopback, driven by real clients (the ADBC Flight SQL driver, the
// arrow-go Flight SQL client), with what it wrote read back by an
// independent reader (iceberg-go's own catalog and scan on the same
// catalog). Python and Java clients live in integration/python and the
// Maven projects beside it.
package integration
