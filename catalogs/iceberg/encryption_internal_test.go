package iceberg

import (
	"context"
	"errors"
	"strings"
	"testing"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// TestEncryptedTablesOfOtherEngines: a table another engine created with
// client-side encryption, or with a KMS key on storage that has no
// server-side encryption, is refused with FailedPrecondition naming the
// table and the reason, for a write, a stream, the security context, and
// the commit of receipts written before the property was set; no data
// file is written for it.
func TestEncryptedTablesOfOtherEngines(t *testing.T) {
	p, _ := openLake(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		prop string
		why  string
	}{
		{"keyid", PropTableKeyID, "client-side encryption"},
		{"keymeta", PropKeyMetadataPrefix + "wrapped", "client-side encryption"},
		{"kmslocal", PropKMSKeyID, "server-side encryption, which its storage file:// does not have"},
	} {
		id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: tc.name}
		if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
			t.Fatal(err)
		}
		early := stageIn(t, p, id, 0, 3) // written before the property was set
		tbl, err := p.load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.cat.CommitTable(ctx, tbl.Identifier(), []table.Requirement{table.AssertTableUUID(tbl.Metadata().TableUUID())},
			[]table.Update{table.NewSetPropertiesUpdate(ice.Properties{tc.prop: "k-1"})}); err != nil {
			t.Fatal(err)
		}
		refused := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), id.String()) || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("%s: %s = %v, want FailedPrecondition naming %s and %q", tc.name, what, err, id, tc.why)
			}
		}
		b := catalogtest.Batch(10, 3)
		_, err = p.WriteBatch(ctx, id, b)
		b.Release()
		refused("WriteBatch", err)
		_, err = p.OpenStream(ctx, id, catalogs.WriteTxn{})
		refused("OpenStream", err)
		_, err = p.GetSecurityContext(ctx, id)
		refused("GetSecurityContext", err)
		_, err = p.Commit(ctx, id, []catalogs.WriteReceipt{early})
		refused("Commit", err)
		if n := len(loadMeta(t, p, id).Snapshots()); n != 0 {
			t.Errorf("%s: %d snapshots, want none", tc.name, n)
		}
	}
}
