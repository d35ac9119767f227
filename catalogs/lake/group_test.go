package lake

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type gm struct {
	Queued
	n     int
	err   error
	round int // the round that answered it
}

// TestGroupsRounds: appends queued behind a running round go in one round
// within the budget, an overwrite goes alone after the appends before it,
// and a caller that leaves while queued is dropped, never run.
func TestGroupsRounds(t *testing.T) {
	var g Groups[*gm]
	release, started := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var rounds [][]int
	r := Round[*gm]{
		Run: func(_ context.Context, ms []*gm) {
			if ms[0].n == 0 {
				close(started)
				<-release // hold the first round while the others queue
			}
			mu.Lock()
			var ns []int
			for _, m := range ms {
				ns = append(ns, m.n)
				m.round = len(rounds)
			}
			rounds = append(rounds, ns)
			mu.Unlock()
			for _, m := range ms {
				m.Answered()
			}
		},
		Budget: func() func(*gm) bool {
			k := 0
			return func(*gm) bool { k++; return k <= 2 } // two members a round
		},
		Drop: func(m *gm, err error) { m.err = err; m.Answered() },
	}
	ctx := context.Background()
	submit := func(m *gm, c context.Context) chan struct{} {
		done := make(chan struct{})
		go func() { g.Submit(c, "t", m, r); close(done) }()
		return done
	}
	first := &gm{Queued: NewQueued(ctx, false), n: 0}
	d0 := submit(first, ctx)
	<-started
	left, leave := context.WithCancel(ctx)
	ms := []*gm{
		{Queued: NewQueued(ctx, false), n: 1},
		{Queued: NewQueued(left, false), n: 2}, // its caller leaves
		{Queued: NewQueued(ctx, false), n: 3},
		{Queued: NewQueued(ctx, false), n: 4},
		{Queued: NewQueued(ctx, true), n: 5}, // an overwrite
		{Queued: NewQueued(ctx, false), n: 6},
	}
	var dones []chan struct{}
	for i, m := range ms {
		c := ctx
		if i == 1 {
			c = left
		}
		dones = append(dones, submit(m, c))
		for g.Pending("t") != i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	leave()
	<-dones[1]
	if !errors.Is(ms[1].err, context.Canceled) {
		t.Fatalf("the member whose caller left: err %v, want context.Canceled", ms[1].err)
	}
	close(release)
	<-d0
	for _, d := range dones {
		<-d
	}
	want := [][]int{{0}, {1, 3}, {4}, {5}, {6}}
	if len(rounds) != len(want) {
		t.Fatalf("rounds %v, want %v", rounds, want)
	}
	for i := range want {
		if len(rounds[i]) != len(want[i]) {
			t.Fatalf("rounds %v, want %v", rounds, want)
		}
		for j := range want[i] {
			if rounds[i][j] != want[i][j] {
				t.Fatalf("rounds %v, want %v", rounds, want)
			}
		}
	}
	g.Wait()
	if g.Pending("t") != 0 {
		t.Fatal("the queue outlived its members")
	}
}
