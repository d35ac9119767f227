package refindex

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// store is a fake metadata store: lists name manifests, manifests name
// files; reads are counted.
type store struct {
	mu    sync.Mutex
	lists map[string][]string
	files map[string][]string
	reads map[string]int
	fail  string
}

func (s *store) root(list string) Child {
	return Child{Key: list, Load: func(context.Context) (Node, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.reads[list]++
		if list == s.fail {
			return Node{}, errors.New("boom")
		}
		var n Node
		for _, m := range s.lists[list] {
			n.Children = append(n.Children, Child{Key: m, Load: func(context.Context) (Node, error) {
				s.mu.Lock()
				defer s.mu.Unlock()
				s.reads[m]++
				if m == s.fail {
					return Node{}, errors.New("boom")
				}
				return Node{Files: s.files[m]}, nil
			}})
		}
		return n, nil
	}}
}

func (s *store) roots(lists ...string) []Child {
	out := make([]Child, len(lists))
	for i, l := range lists {
		out[i] = s.root(l)
	}
	return out
}

func newStore() *store {
	return &store{
		lists: map[string][]string{"L1": {"m1"}, "L2": {"m1", "m2"}, "L3": {"m2", "m3"}},
		files: map[string][]string{"m1": {"a", "b"}, "m2": {"c"}, "m3": {"a", "d"}},
		reads: map[string]int{},
	}
}

func wantHas(t *testing.T, x *Index, has string, not string) {
	t.Helper()
	for _, f := range []byte(has) {
		if !x.Has(string(f)) {
			t.Errorf("file %c: not referenced, want referenced", f)
		}
	}
	for _, f := range []byte(not) {
		if x.Has(string(f)) {
			t.Errorf("file %c: referenced, want not", f)
		}
	}
}

// TestUpdate: each node is read once however many roots reach it and
// however many updates follow; a node no root reaches is dropped (its
// files unreferenced, unless another node holds them) and read again
// when a root reaches it again; the byte count returns to zero.
func TestUpdate(t *testing.T) {
	ctx := context.Background()
	s := newStore()
	x := NewIndex()
	if err := x.Update(ctx, s.roots("L1", "L2")); err != nil {
		t.Fatal(err)
	}
	wantHas(t, x, "abc", "d")
	if err := x.Update(ctx, s.roots("L1", "L2", "L3")); err != nil {
		t.Fatal(err)
	}
	wantHas(t, x, "abcd", "")
	for k, n := range s.reads {
		if n != 1 {
			t.Errorf("%s read %d times, want once", k, n)
		}
	}
	// L1 and L2 expire: m1 goes, a stays (m3 holds it), b goes.
	if err := x.Update(ctx, s.roots("L3")); err != nil {
		t.Fatal(err)
	}
	wantHas(t, x, "acd", "b")
	if err := x.Update(ctx, s.roots("L1", "L3")); err != nil {
		t.Fatal(err)
	}
	wantHas(t, x, "abcd", "")
	if s.reads["m1"] != 2 || s.reads["m2"] != 1 {
		t.Errorf("reads %v: m1 dropped and read again, m2 held throughout", s.reads)
	}
	if err := x.Update(ctx, nil); err != nil {
		t.Fatal(err)
	}
	wantHas(t, x, "", "abcd")
	if x.Bytes() != 0 || len(x.nodes) != 0 {
		t.Errorf("empty index holds %d bytes, %d nodes", x.Bytes(), len(x.nodes))
	}
}

// TestUpdateError: a failed read leaves the index as it was, and the
// next update reads what it could not.
func TestUpdateError(t *testing.T) {
	ctx := context.Background()
	s := newStore()
	x := NewIndex()
	if err := x.Update(ctx, s.roots("L1")); err != nil {
		t.Fatal(err)
	}
	bytes := x.Bytes()
	s.fail = "m3"
	if err := x.Update(ctx, s.roots("L2", "L3")); err == nil {
		t.Fatal("Update with an unreadable manifest succeeded")
	}
	wantHas(t, x, "ab", "cd")
	if x.Bytes() != bytes || len(x.roots) != 1 {
		t.Errorf("after a failed update: %d bytes (was %d), roots %v", x.Bytes(), bytes, x.roots)
	}
	s.fail = ""
	if err := x.Update(ctx, s.roots("L2", "L3")); err != nil {
		t.Fatal(err)
	}
	wantHas(t, x, "abcd", "")
	if err := x.Update(ctx, nil); err != nil || x.Bytes() != 0 {
		t.Errorf("emptied: %v, %d bytes", err, x.Bytes())
	}
}

// TestCacheBudget: past the budget the least recently used table is
// dropped (its next use starts empty); a budget of 0 keeps nothing.
func TestCacheBudget(t *testing.T) {
	ctx := context.Background()
	s := newStore()
	use := func(c *Cache[*Index], table string) (loads int) {
		err := c.With(table, func(x *Index) error {
			before := x.Loads
			err := x.Update(ctx, s.roots("L2"))
			loads = x.Loads - before
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return loads
	}
	one := NewIndex()
	if err := one.Update(ctx, s.roots("L2")); err != nil {
		t.Fatal(err)
	}
	c := NewCache(one.Bytes()*2, NewIndex)
	for _, tb := range []string{"t1", "t2", "t1"} {
		use(c, tb)
	}
	if n := use(c, "t3"); n != 3 {
		t.Fatalf("t3 first use: %d loads, want 3", n)
	}
	if n := use(c, "t1"); n != 0 {
		t.Errorf("t1, recently used: %d loads, want 0 (kept)", n)
	}
	if n := use(c, "t2"); n != 3 {
		t.Errorf("t2, least recently used: %d loads, want 3 (dropped)", n)
	}
	z := NewCache(0, NewIndex)
	use(z, "t1")
	if n := use(z, "t1"); n != 3 {
		t.Errorf("budget 0: %d loads, want 3", n)
	}
}

// TestCacheConcurrent (with -race): tables checked at once, and one table
// from many goroutines, each seeing every file of its roots.
func TestCacheConcurrent(t *testing.T) {
	ctx := context.Background()
	s := newStore()
	c := NewCache(1<<20, NewIndex)
	steps := []struct {
		roots []string
		want  string
	}{{[]string{"L1"}, "ab"}, {[]string{"L1", "L2"}, "abc"}, {[]string{"L3"}, "acd"}}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				step := steps[(g+i)%len(steps)]
				roots, want := step.roots, step.want
				err := c.With(fmt.Sprint("t", g%4), func(x *Index) error {
					if err := x.Update(ctx, s.roots(roots...)); err != nil {
						return err
					}
					for _, f := range []byte(want) {
						if !x.Has(string(f)) {
							return fmt.Errorf("roots %v: %c not referenced", roots, f)
						}
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
