package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"

	"google.golang.org/grpc/credentials/insecure"
)

// TestPeersResolve: a peer given by IP is used as it is; a host name
// stands for every address it resolves to; duplicates are dropped; a name
// that does not resolve is reported, naming it, and the others are kept.
func TestPeersResolve(t *testing.T) {
	p := newPeers([]string{"10.0.0.9:32010", "gw.headless:32010", "gone:1", "10.0.0.9:32010", "[::1]:7"}, 0, insecure.NewCredentials(), 1<<20,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	p.lookup = func(_ context.Context, host string) ([]string, error) {
		switch host {
		case "gw.headless":
			return []string{"10.0.0.2", "10.0.0.1", "10.0.0.9"}, nil
		}
		return nil, errors.New("no such host")
	}
	addrs, errs := p.resolve(context.Background())
	want := []string{"10.0.0.1:32010", "10.0.0.2:32010", "10.0.0.9:32010", "[::1]:7"}
	if !slices.Equal(addrs, want) {
		t.Errorf("addresses %q, want %q", addrs, want)
	}
	if len(errs) != 1 || !containsAll(errs[0].Error(), "gone:1", "no such host") {
		t.Errorf("errors %v, want one naming gone:1", errs)
	}
	if p.timeout != DefaultPeerTimeout {
		t.Errorf("timeout %s, want the default %s", p.timeout, DefaultPeerTimeout)
	}
}
