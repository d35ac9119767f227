package flightsql

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/flightgw/flightgw/catalogs"
)

// caps is what the upstream says it can do, from its GetSqlInfo.
type caps struct {
	name, version string
	readOnly      bool
	sql           bool
	// transactions: BeginTransaction/EndTransaction (SQL_SUPPORTED_TRANSACTION
	// at least TRANSACTION).
	transactions bool
	cancel       bool
	ingest       bool
	// ingestInTxn: a bulk ingest may carry a transaction id.
	ingestInTxn bool
	// quote is the identifier quote character ("" : the ANSI '"').
	quote    string
	keywords []string
	nullsAt  int32
	at       time.Time
}

// label names the upstream in messages: its own name and version when it
// gave them, its address otherwise.
func (c caps) label(addr string) string {
	if c.name == "" {
		return addr
	}
	if c.version == "" {
		return fmt.Sprintf("%s at %s", c.name, addr)
	}
	return fmt.Sprintf("%s %s at %s", c.name, c.version, addr)
}

// capabilities returns the upstream's capabilities, read again when the
// cached ones are older than the TTL. A read that fails keeps the old
// ones when there are (an upstream down now answered before).
func (p *Provider) capabilities(ctx context.Context) (caps, error) {
	p.infoMu.Lock()
	defer p.infoMu.Unlock()
	if p.info != nil && time.Since(p.info.at) < p.cfg.infoTTL {
		return *p.info, nil
	}
	c, err := p.readInfo(ctx)
	if errors.Is(err, errUnimplemented) {
		// No GetSqlInfo (Sail): the upstream claims nothing, so it is
		// given SQL and nothing else: no transactions, no ingest.
		c, err = caps{at: time.Now(), quote: `"`, sql: true}, nil
		p.log.Info("upstream has no GetSqlInfo: reads only (no transactions, no bulk ingest)")
	}
	if p.cfg.quote != "" {
		c.quote = p.cfg.quote
	}
	if err != nil {
		if p.info != nil {
			return *p.info, nil
		}
		return caps{}, err
	}
	p.info = &c
	p.canCancel.Store(c.cancel)
	p.log.Info("upstream capabilities", "server", c.label(p.cfg.addr), "transactions", c.transactions,
		"ingest", c.ingest, "ingest_in_transaction", c.ingestInTxn, "quote", c.quote)
	return c, nil
}

// readInfo runs GetSqlInfo and decodes the values it reads.
func (p *Provider) readInfo(ctx context.Context) (caps, error) {
	// SQL is what a Flight SQL server is for: assumed unless the
	// upstream says otherwise.
	c := caps{at: time.Now(), quote: `"`, sql: true}
	r, err := p.query(ctx, "read GetSqlInfo", func(ctx context.Context) (*flight.FlightInfo, error) {
		// Everything, not infoIDs: some servers (arrow-go's SQLite
		// example) refuse a whole request naming one id they lack.
		return p.main.client.GetSqlInfo(ctx, nil)
	})
	if err != nil {
		return c, err
	}
	defer r.Release()
	for r.Next() {
		rec := r.RecordBatch()
		names, ok1 := rec.Column(0).(*array.Uint32)
		vals, ok2 := rec.Column(1).(*array.DenseUnion)
		if !ok1 || !ok2 {
			return c, catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q: upstream %s: GetSqlInfo answered with schema %s", p.name, p.cfg.addr, rec.Schema())
		}
		for i := range int(rec.NumRows()) {
			decodeInfo(&c, fsql.SqlInfo(names.Value(i)), vals, i)
		}
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, nil
}

// decodeInfo stores one GetSqlInfo value.
func decodeInfo(c *caps, id fsql.SqlInfo, u *array.DenseUnion, i int) {
	child := u.Field(u.ChildID(i))
	off := int(u.ValueOffset(i))
	str := func() string {
		if s, ok := child.(*array.String); ok && s.IsValid(off) {
			return s.Value(off)
		}
		return ""
	}
	boolean := func() bool {
		switch v := child.(type) {
		case *array.Boolean:
			return v.IsValid(off) && v.Value(off)
		case *array.Int64:
			return v.IsValid(off) && v.Value(off) != 0
		case *array.Int32:
			return v.IsValid(off) && v.Value(off) != 0
		}
		return false
	}
	integer := func() int64 {
		switch v := child.(type) {
		case *array.Int64:
			return v.Value(off)
		case *array.Int32:
			return int64(v.Value(off))
		}
		return 0
	}
	switch id {
	case fsql.SqlInfoFlightSqlServerName:
		c.name = str()
	case fsql.SqlInfoFlightSqlServerVersion:
		c.version = str()
	case fsql.SqlInfoFlightSqlServerReadOnly:
		c.readOnly = boolean()
	case fsql.SqlInfoFlightSqlServerSql:
		c.sql = boolean()
	case fsql.SqlInfoFlightSqlServerTransaction:
		// SqlSupportedTransaction: 0 none, 1 transactions, 2 savepoints too.
		c.transactions = integer() >= 1
	case fsql.SqlInfoFlightSqlServerCancel:
		c.cancel = boolean()
	case fsql.SqlInfoFlightSqlServerBulkIngestion:
		c.ingest = boolean()
	case fsql.SqlInfoFlightSqlServerIngestTransactionsSupported:
		c.ingestInTxn = boolean()
	case fsql.SqlInfoIdentifierQuoteChar:
		if q := str(); q != "" {
			c.quote = q
		}
	case fsql.SqlInfoNullOrdering:
		c.nullsAt = int32(integer())
	case fsql.SqlInfoKeywords:
		if l, ok := child.(*array.List); ok {
			start, end := l.ValueOffsets(off)
			if s, ok := l.ListValues().(*array.String); ok {
				for j := start; j < end; j++ {
					c.keywords = append(c.keywords, s.Value(int(j)))
				}
			}
		}
	}
}

// lacks is the error for a capability the upstream does not have.
func (p *Provider) lacks(c caps, what string, t *catalogs.TableIdent) error {
	if t != nil {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: upstream %s does not support %s (its GetSqlInfo says so)", t, c.label(p.cfg.addr), what)
	}
	return catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q: upstream %s does not support %s (its GetSqlInfo says so)", p.name, c.label(p.cfg.addr), what)
}
