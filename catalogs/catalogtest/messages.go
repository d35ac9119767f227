package catalogtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// The checks of the distributed-commit capabilities (docs/commit-messages.md):
// receipts and payloads come back from another process, so they are data
// from a client. A backend must refuse what is not its own, for another
// table, or damaged, with ErrInvalidArgument, and never panic; it must tell
// a committed file from a staged one before an abort deletes it.

// garbageReceipts are receipt metadata no backend wrote.
var garbageReceipts = []string{"", "null", "{}", "[]", `"x"`, "0", `{"format": 1}`, "\xff\xfe\x00", `{"files": [{"path": "/etc/passwd"}]}`}

// call runs f, failing t (rather than the test binary) when it panics:
// no input may panic a backend.
func call(t *testing.T, what string, f func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}

// testReceiptChecker: receipts the backend wrote for a table pass its
// check for that table; for another table, damaged, not its own, naming a
// file twice, or discarded, they are ErrInvalidArgument naming the table.
func (s suite) testReceiptChecker(t *testing.T) {
	in, id := s.setup(t, "receipts")
	rc, ok := in.Provider.(catalogs.ReceiptChecker)
	skipUnless(t, ok, "catalogs.ReceiptChecker")
	other := createTable(t, in, "receipts_other")
	ctx := context.Background()
	r := write(t, in, id, 0, 20)
	if err := call(t, "CheckReceipts", func() error { return rc.CheckReceipts(ctx, id, []catalogs.WriteReceipt{r}) }); err != nil {
		t.Fatalf("CheckReceipts of receipts the backend wrote for the table: %v", err)
	}
	err := call(t, "CheckReceipts", func() error { return rc.CheckReceipts(ctx, other, []catalogs.WriteReceipt{r}) })
	wantKind(t, "CheckReceipts of another table's receipts", err, catalogs.ErrInvalidArgument, other.Name)
	for _, g := range garbageReceipts {
		bad := catalogs.WriteReceipt{Metadata: []byte(g), RowCount: 1}
		err := call(t, "CheckReceipts", func() error { return rc.CheckReceipts(ctx, id, []catalogs.WriteReceipt{r, bad}) })
		wantKind(t, fmt.Sprintf("CheckReceipts of metadata %q", g), err, catalogs.ErrInvalidArgument, id.Name)
	}
	// A file named twice would be committed once and its rows counted twice.
	err = call(t, "CheckReceipts", func() error { return rc.CheckReceipts(ctx, id, []catalogs.WriteReceipt{r, r}) })
	wantKind(t, "CheckReceipts of one receipt twice", err, catalogs.ErrInvalidArgument, id.Name)
	half := catalogs.WriteReceipt{Metadata: r.Metadata[:len(r.Metadata)/2], RowCount: r.RowCount}
	err = call(t, "CheckReceipts", func() error { return rc.CheckReceipts(ctx, id, []catalogs.WriteReceipt{half}) })
	wantKind(t, "CheckReceipts of a truncated receipt", err, catalogs.ErrInvalidArgument, id.Name)
	// Discarded (an AbortMessages): what they named is gone, and a commit
	// of them would reference nothing, or break the table.
	d, ok := in.Provider.(catalogs.Discarder)
	if !ok {
		return
	}
	gone := write(t, in, id, 100, 5)
	if err := d.Discard(ctx, id, []catalogs.WriteReceipt{gone}); err != nil {
		t.Fatalf("Discard: %v", err)
	}
	err = call(t, "CheckReceipts", func() error { return rc.CheckReceipts(ctx, id, []catalogs.WriteReceipt{gone}) })
	wantKind(t, "CheckReceipts of discarded receipts", err, catalogs.ErrInvalidArgument, id.Name)
}

// testCheckUnreferenced (ReceiptChecker.CheckUnreferenced): staged
// receipts are unreferenced; once committed they are referenced
// (ErrFailedPrecondition), alone or among staged ones, and stay so when
// an overwrite has replaced their data (an older snapshot still holds
// their files).
func (s suite) testCheckUnreferenced(t *testing.T) {
	in, id := s.setup(t, "refs")
	rc, ok := in.Provider.(catalogs.ReceiptChecker)
	skipUnless(t, ok, "catalogs.ReceiptChecker")
	ctx := context.Background()
	check := func(rs ...catalogs.WriteReceipt) error {
		return call(t, "CheckUnreferenced", func() error { return rc.CheckUnreferenced(ctx, id, rs) })
	}
	r1 := write(t, in, id, 0, 20)
	if err := check(r1); err != nil {
		t.Fatalf("CheckUnreferenced of staged receipts: %v", err)
	}
	if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{r1}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	wantKind(t, "CheckUnreferenced of committed receipts", check(r1), catalogs.ErrFailedPrecondition, id.Name)
	r2 := write(t, in, id, 100, 5)
	if err := check(r2); err != nil {
		t.Errorf("CheckUnreferenced of receipts staged after a commit: %v", err)
	}
	wantKind(t, "CheckUnreferenced of staged and committed receipts", check(r2, r1), catalogs.ErrFailedPrecondition, id.Name)
	for _, g := range garbageReceipts {
		err := check(catalogs.WriteReceipt{Metadata: []byte(g)})
		wantKind(t, fmt.Sprintf("CheckUnreferenced of metadata %q", g), err, catalogs.ErrInvalidArgument, id.Name)
	}
	ow, ok := in.Provider.(catalogs.Overwriter)
	if !ok {
		return
	}
	if _, err := ow.CommitOverwrite(ctx, id, "refs-overwrite", []catalogs.WriteReceipt{r2}); err != nil {
		t.Fatalf("CommitOverwrite: %v", err)
	}
	wantKind(t, "CheckUnreferenced of receipts an overwrite replaced", check(r1), catalogs.ErrFailedPrecondition, id.Name)
	wantKind(t, "CheckUnreferenced of receipts an overwrite committed", check(r2), catalogs.ErrFailedPrecondition, id.Name)
}

// testPayloadCodec: a payload of a table's receipts decodes, for that
// table, into receipts that pass its ReceiptChecker and commit every row.
// Decoded for another table it is refused, by DecodePayload or by
// CheckReceipts: a payload never makes one table publish another's data.
// A truncated payload, garbage, or an unknown serializer version is
// ErrInvalidArgument.
func (s suite) testPayloadCodec(t *testing.T) {
	in, id := s.setup(t, "payload")
	pc, ok := in.Provider.(catalogs.PayloadCodec)
	skipUnless(t, ok, "catalogs.PayloadCodec")
	rc, ok := in.Provider.(catalogs.ReceiptChecker)
	if !ok {
		t.Fatal("a catalogs.PayloadCodec must be a catalogs.ReceiptChecker: the gateway checks what a payload decodes to")
	}
	other := createTable(t, in, "payload_other")
	ctx := context.Background()
	staged := []catalogs.WriteReceipt{write(t, in, id, 0, 20), write(t, in, id, 100, 5)}
	var (
		version int
		payload []byte
	)
	err := call(t, "EncodePayload", func() (err error) {
		version, payload, err = pc.EncodePayload(ctx, id, staged)
		return err
	})
	if err != nil {
		t.Fatalf("EncodePayload: %v", err)
	}
	decode := func(table catalogs.TableIdent, v int, b []byte) ([]catalogs.WriteReceipt, error) {
		var rs []catalogs.WriteReceipt
		err := call(t, "DecodePayload", func() (err error) {
			rs, err = pc.DecodePayload(ctx, table, v, b)
			if err == nil {
				err = rc.CheckReceipts(ctx, table, rs)
			}
			return err
		})
		return rs, err
	}
	_, err = decode(other, version, payload)
	wantKind(t, "a payload decoded and checked for another table", err, catalogs.ErrInvalidArgument, other.Name)
	for _, n := range []int{0, 1, len(payload) / 2, len(payload) - 1} {
		if n < 0 || n >= len(payload) {
			continue
		}
		_, err := decode(id, version, payload[:n])
		wantKind(t, fmt.Sprintf("a payload truncated to %d of %d bytes", n, len(payload)), err, catalogs.ErrInvalidArgument, id.Name)
	}
	_, err = decode(id, version, []byte("\xff\xff\xff\xff garbage"))
	wantKind(t, "a garbage payload", err, catalogs.ErrInvalidArgument, id.Name)
	_, err = decode(id, version+1000, payload)
	wantKind(t, "a payload of an unknown serializer version", err, catalogs.ErrInvalidArgument, id.Name)

	rs, err := decode(id, version, payload)
	if err != nil {
		t.Fatalf("DecodePayload and CheckReceipts of the table's own payload: %v", err)
	}
	var n uint64
	for _, r := range rs {
		n += r.RowCount
	}
	if n != 25 {
		t.Errorf("the decoded receipts count %d rows, want 25", n)
	}
	if _, err := in.Provider.Commit(ctx, id, rs); err != nil {
		t.Fatalf("Commit of the decoded receipts: %v", err)
	}
	if got := rows(t, in, id); got != 25 {
		t.Errorf("rows after committing the decoded payload = %d, want 25", got)
	}
	if got := rows(t, in, other); got != 0 {
		t.Errorf("rows of the other table = %d, want 0", got)
	}
}
