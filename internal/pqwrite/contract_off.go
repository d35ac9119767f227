//go:build !alloccheck

package pqwrite

import "github.com/apache/arrow-go/v18/arrow/memory"

// AllocCheck tells that this build checks every allocation of the
// gateway's allocators against arrow-go's contract (contract.go): only
// with the alloccheck tag.
const AllocCheck = false

func checked(a memory.Allocator) memory.Allocator { return a }
