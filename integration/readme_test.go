package integration

import (
	"context"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestReadmeGoExample runs the README's Go example, line for line, so the
// README stays true.
func TestReadmeGoExample(t *testing.T) {
	g := startGateway(t, "")
	ctx := context.Background()
	record := people(t, 0, 3)

	drv := flightsql.NewDriver(memory.DefaultAllocator)
	db, err := drv.NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + g.addr})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cnxn, err := db.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cnxn.Close()
	if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
		t.Fatal(err)
	}
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	stmt.SetOption(adbc.OptionKeyIngestTargetTable, "people")
	stmt.SetOption(adbc.OptionKeyIngestMode, adbc.OptionValueIngestModeCreateAppend)
	if err := stmt.Bind(ctx, record); err != nil {
		t.Fatal(err)
	}
	n, err := stmt.ExecuteUpdate(ctx)
	if err != nil || n != 3 {
		t.Fatalf("rows=%d err=%v", n, err)
	}
	if got := rows(g.readTable(t, "people")); got != 0 {
		t.Fatalf("visible before commit: %d", got)
	}
	if err := cnxn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rows(g.readTable(t, "people")); got != 3 {
		t.Fatalf("after commit: %d", got)
	}
}
