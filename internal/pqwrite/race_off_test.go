//go:build !race

package pqwrite

const raceBuild = false
