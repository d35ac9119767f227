package catalogs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Factory builds a Provider for the catalog called name from its
// configuration properties. It validates the properties and returns an
// ErrInvalidArgument error naming the bad key.
type Factory func(ctx context.Context, name string, props map[string]string) (Provider, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

// Register makes a backend available under a type name. It is meant to be
// called from a backend package's init and panics on a duplicate name, which
// is a programming error.
func Register(typ string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[typ]; dup {
		panic("catalogs: Register called twice for type " + typ)
	}
	registry[typ] = f
}

// Types lists the registered backend types, sorted.
func Types() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Sorted(maps.Keys(registry))
}

// Open builds the catalog called name with the backend registered as typ.
func Open(ctx context.Context, typ, name string, props map[string]string) (Provider, error) {
	registryMu.RLock()
	f, ok := registry[typ]
	registryMu.RUnlock()
	if !ok {
		return nil, Errorf(ErrInvalidArgument, "catalog %q: unknown type %q (known: %v)", name, typ, Types())
	}
	p, err := f(ctx, name, props)
	if err != nil {
		return nil, fmt.Errorf("catalog %q (%s): %w", name, typ, err)
	}
	return p, nil
}
