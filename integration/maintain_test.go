package integration

import (
	"context"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/client"
	"github.com/flightgw/flightgw/codec/actions"
	"github.com/flightgw/flightgw/engine"
)

// TestMaintainTableAction: through a running gateway, MaintainTable on a
// table of six auto-commit appends plans the rewrite of its six small
// files in a dry run, then rewrites them into one; the table counts the
// same rows; expiry with the default retention expires nothing; an
// unknown task is InvalidArgument; and /metrics counts each run by task
// and result.
func TestMaintainTableAction(t *testing.T) {
	g, health := runGateway(t)
	cnxn := g.adbcConn(t, nil)
	for i := range 6 {
		if _, err := ingest(t, cnxn, "mt", adbc.OptionValueIngestModeCreateAppend, people(t, i*10, 10)); err != nil {
			t.Fatal(err)
		}
	}
	c := g.flightClient(t)
	ctx := context.Background()
	req := actions.MaintainRequest{TableRef: actions.TableRef{Catalog: "lake", Table: "mt"}, Tasks: []string{"rewrite_data_files"}, DryRun: true}
	res, err := client.MaintainTable(ctx, c, req)
	if err != nil {
		t.Fatalf("MaintainTable dry run: %v", err)
	}
	if len(res.Tasks) != 1 || res.Tasks[0].Committed || res.Tasks[0].RewrittenFiles != 6 || !res.DryRun {
		t.Fatalf("dry run = %+v, want 6 files planned and nothing committed", res)
	}
	req.DryRun = false
	if err := doAction(ctx, c, actions.MaintainTable, req, &res); err != nil {
		t.Fatalf("MaintainTable: %v", err)
	}
	if tr := res.Tasks[0]; !tr.Committed || tr.RewrittenFiles != 6 || tr.AddedFiles != 1 {
		t.Fatalf("rewrite = %+v, want 6 files into 1", tr)
	}
	req.Tasks = []string{"expire_snapshots"}
	if err := doAction(ctx, c, actions.MaintainTable, req, &res); err != nil {
		t.Fatalf("MaintainTable expire: %v", err)
	}
	if tr := res.Tasks[0]; len(tr.ExpiredSnapshots) != 0 || tr.RetainedSnapshots != 7 {
		t.Errorf("expiry with the default retention = %+v, want the 7 snapshots kept", tr)
	}
	req.Tasks = []string{"vacuum"}
	if err := doAction(ctx, c, actions.MaintainTable, req, &res); status.Code(err) != codes.InvalidArgument {
		t.Errorf("unknown task: %v, want InvalidArgument", err)
	}
	if engine.Built {
		for _, q := range []string{`SELECT count(*) FROM mt`, `SELECT count(DISTINCT id) FROM mt`} {
			if got := joined(t, cnxn, q); got != "60" {
				t.Errorf("after the rewrite %s = %s, want 60", q, got)
			}
		}
	}
	fams := scrape(t, health)
	for _, w := range []struct {
		task, result string
		n            float64
	}{{"rewrite_data_files", "dry_run", 1}, {"rewrite_data_files", "ok", 1}, {"expire_snapshots", "ok", 1}} {
		labels := []string{"catalog=lake", "backend=iceberg", "task=" + w.task, "result=" + w.result}
		if v, ok := value(fams, "flightgw_maintenance_runs_total", labels...); !ok || v != w.n {
			t.Errorf("flightgw_maintenance_runs_total%v = %v (found %v), want %v", labels, v, ok, w.n)
		}
	}
	if v, ok := value(fams, "flightgw_maintenance_duration_seconds", "catalog=lake"); !ok || v != 4 {
		t.Errorf("maintenance durations observed = %v (%v), want 4", v, ok)
	}
}

// TestMaintainTablePaimonCompact: through a running gateway on a Paimon
// warehouse, MaintainTable compact on an append table of six auto-commit
// appends plans its six small files in a dry run, then compacts them into
// one COMPACT snapshot; the table counts the same rows, and a second
// compact finds nothing to do.
func TestMaintainTablePaimonCompact(t *testing.T) {
	g := startGateway(t, `
catalogs:
  - name: pm
    type: paimon
    properties: {warehouse: "${DATA}/paimon", create-namespaces: default}
default_catalog: pm
`)
	cnxn := g.adbcConn(t, nil)
	for i := range 6 {
		if _, err := ingest(t, cnxn, "mc", adbc.OptionValueIngestModeCreateAppend, people(t, i*10, 10)); err != nil {
			t.Fatal(err)
		}
	}
	c := g.flightClient(t)
	ctx := context.Background()
	req := actions.MaintainRequest{TableRef: actions.TableRef{Catalog: "pm", Table: "mc"}, Tasks: []string{"compact"}, DryRun: true}
	res, err := client.MaintainTable(ctx, c, req)
	if err != nil {
		t.Fatalf("MaintainTable dry run: %v", err)
	}
	if len(res.Tasks) != 1 || res.Tasks[0].Committed || res.Tasks[0].RewrittenFiles != 6 {
		t.Fatalf("dry run = %+v, want 6 files planned and nothing committed", res)
	}
	req.DryRun = false
	if res, err = client.MaintainTable(ctx, c, req); err != nil {
		t.Fatalf("MaintainTable: %v", err)
	}
	if tr := res.Tasks[0]; !tr.Committed || tr.RewrittenFiles != 6 || tr.AddedFiles != 1 {
		t.Fatalf("compact = %+v, want 6 files into 1", tr)
	}
	if res, err = client.MaintainTable(ctx, c, req); err != nil || res.Tasks[0].Committed || res.Tasks[0].RewrittenFiles != 0 {
		t.Errorf("a second compact = %+v, %v: want nothing to do", res, err)
	}
	if engine.Built {
		for _, q := range []string{`SELECT count(*) FROM mc`, `SELECT count(DISTINCT id) FROM mc`} {
			if got := joined(t, cnxn, q); got != "60" {
				t.Errorf("after the compaction %s = %s, want 60", q, got)
			}
		}
	}
}
