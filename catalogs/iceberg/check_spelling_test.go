package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// TestCheckReceiptsSpelledTwice: one file named twice, once as written
// and once with a letter of its name URL-escaped (the same file to the
// storage, another string to iceberg-go's duplicate check), would be
// committed twice and its rows read twice: refused, InvalidArgument
// naming both spellings. So is the same spelling twice.
func TestCheckReceiptsSpelledTwice(t *testing.T) {
	ctx := context.Background()
	p, id, _ := planTable(t)
	b := idBatch(100, 5)
	r, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	var rm receiptMeta
	if err := json.Unmarshal(r.Metadata, &rm); err != nil || len(rm.Files) == 0 {
		t.Fatalf("receipt %s: %v", r.Metadata, err)
	}
	tbl, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	f := rm.Files[0]
	dir, name := path.Split(f.Path)
	escaped := dir + "%" + strings.ToUpper(hexByte(name[0])) + name[1:]
	twin := f
	twin.Path, twin.DataFile = escaped, forgedDataFile(t, tbl, escaped)
	rm.Files = append(rm.Files, twin)
	raw, _ := json.Marshal(rm)
	err = p.CheckReceipts(ctx, id, []catalogs.WriteReceipt{{Metadata: raw}})
	if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), escaped) || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a file spelt two ways: %v, want InvalidArgument naming it", err)
	}
	// The same spelling twice is one file committed once, its rows counted
	// twice: refused too.
	if err := p.CheckReceipts(ctx, id, []catalogs.WriteReceipt{r, r}); !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "named twice") {
		t.Fatalf("one receipt passed twice: %v, want InvalidArgument", err)
	}
}

func hexByte(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}
