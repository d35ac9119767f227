package paimon

import (
	"context"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// BenchmarkPlanAfterCommits: planning a scan (PlanFiles: the snapshot's
// manifest lists and manifests, the live files) of a table after 500
// one-file commits, with Paimon's default manifest compaction and with
// compaction kept from running (what every commit did before: the base
// list only grew).
//
// make paimon-plan-bench (part of make bench) runs it and prints the
// ratio.
func BenchmarkPlanAfterCommits(b *testing.B) {
	const commits = 500
	for _, bc := range []struct {
		name string
		opts map[string]string
	}{
		{"compacted", nil},
		{"uncompacted", map[string]string{optManifestMergeMinCount: "1000000", optManifestFullThreshold: "1tb"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p, id := mergeTable(b, bc.opts)
			for c := range int64(commits) {
				commitRows(b, p, id, c*2, 2, false)
			}
			base, delta := manifests(b, p, id)
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				plan, err := p.PlanFiles(ctx, id, catalogs.ScanRequest{})
				if err != nil || !plan.Plain || len(plan.Files) != commits {
					b.Fatalf("plan %v, %v", plan, err)
				}
			}
			b.ReportMetric(float64(len(base)+len(delta)), "manifests")
		})
	}
}
