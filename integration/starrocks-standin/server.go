package main

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"
)

// The transaction states StarRocks reports (TransactionStatus).
const (
	statePrepare   = "PREPARE"
	statePrepared  = "PREPARED"
	stateCommitted = "COMMITTED"
	stateVisible   = "VISIBLE"
	stateAborted   = "ABORTED"
	stateUnknown   = "UNKNOWN"
)

// txn is one Stream Load transaction (or one plain _stream_load job).
type txn struct {
	id     int64
	label  string
	db     string
	table  string
	state  string
	reason string
	// rows are staged until the commit, in the table's column order.
	rows     [][]any
	cols     []column
	loaded   int64
	bytes    int64
	begun    time.Time
	active   time.Time
	prepared time.Time
	timeout  time.Duration
	idle     time.Duration
	prepTTL  time.Duration
	loads    int
}

// server is the cluster's state: labels per database, the MariaDB server
// that stores committed rows, the armed faults and the call counts.
type server struct {
	db           *sql.DB
	user, pass   string
	beURL        string
	publishDelay time.Duration
	faults       *faults

	mu     sync.Mutex
	labels map[string]map[string]*txn // db → label → transaction
	nextID int64
	counts map[string]int
	// queries are the last maxQueries statements the MySQL listener
	// forwarded, so that a test can tell what reached the "cluster".
	queries []string
}

// maxQueries bounds the statements kept for /admin/counts.
const maxQueries = 500

// query records one statement sent over the MySQL listener.
func (s *server) query(q string) {
	s.mu.Lock()
	s.queries = append(s.queries, q)
	if len(s.queries) > maxQueries {
		s.queries = s.queries[len(s.queries)-maxQueries:]
	}
	s.mu.Unlock()
}

func newServer(db *sql.DB, user, pass, beURL string, publishDelay time.Duration) *server {
	return &server{db: db, user: user, pass: pass, beURL: beURL, publishDelay: publishDelay,
		faults: &faults{m: map[string]*fault{}}, labels: map[string]map[string]*txn{}, nextID: 1000, counts: map[string]int{}}
}

// count records one call of op.
func (s *server) count(op string) {
	s.mu.Lock()
	s.counts[op]++
	s.mu.Unlock()
}

// lookup finds a transaction by database and label; the caller holds mu.
func (s *server) lookup(db, label string) *txn {
	return s.labels[db][label]
}

// add registers a new transaction; the caller holds mu.
func (s *server) add(x *txn) {
	if s.labels[x.db] == nil {
		s.labels[x.db] = map[string]*txn{}
	}
	s.nextID++
	x.id = s.nextID
	s.labels[x.db][x.label] = x
}

// abort ends a transaction that has not committed; the caller holds mu.
func (s *server) abort(x *txn, reason string) {
	if x.state == statePrepare || x.state == statePrepared {
		x.state, x.reason, x.rows = stateAborted, reason, nil
	}
}

// apply inserts a committed transaction's rows into MariaDB in one
// transaction and makes it VISIBLE.
func (s *server) apply(ctx context.Context, x *txn) error {
	if err := insertRows(ctx, s.db, x.db, x.table, x.cols, x.rows); err != nil {
		return err
	}
	x.state, x.rows = stateVisible, nil
	return nil
}

// reap aborts transactions past their timeouts, as the FE does: PREPARE
// past timeout or idle_transaction_timeout, PREPARED past prepared_timeout.
func (s *server) reap(stop <-chan struct{}) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s.mu.Lock()
			for _, m := range s.labels {
				for _, x := range m {
					switch {
					case x.state == statePrepare && x.timeout > 0 && now.Sub(x.begun) > x.timeout:
						s.abort(x, "transaction timed out")
					case x.state == statePrepare && x.idle > 0 && now.Sub(x.active) > x.idle:
						s.abort(x, "transaction idle timed out")
					case x.state == statePrepared && x.prepTTL > 0 && now.Sub(x.prepared) > x.prepTTL:
						s.abort(x, "prepared transaction timed out")
					}
				}
			}
			s.mu.Unlock()
		}
	}
}

// column is one table column as MariaDB's information_schema has it.
type column struct {
	name     string
	dataType string // lower case: bigint, varchar, datetime...
	colType  string // with its parameters: tinyint(1), decimal(10,2)...
	nullable bool
}

// tableColumns reads a table's columns; ok is false when it does not exist.
func (s *server) tableColumns(ctx context.Context, db, table string) ([]column, bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, db, table)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var cols []column
	for rows.Next() {
		var c column
		var nullable string
		if err := rows.Scan(&c.name, &c.dataType, &c.colType, &nullable); err != nil {
			return nil, false, err
		}
		c.dataType, c.colType, c.nullable = strings.ToLower(c.dataType), strings.ToLower(c.colType), nullable == "YES"
		cols = append(cols, c)
	}
	return cols, len(cols) > 0, rows.Err()
}

// dbExists reports whether MariaDB has the schema.
func (s *server) dbExists(ctx context.Context, db string) bool {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?`, db).Scan(&n)
	return err == nil && n > 0
}

// insertRows inserts rows in one MariaDB transaction.
func insertRows(ctx context.Context, db *sql.DB, schema, table string, cols []column, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	names := make([]string, len(cols))
	marks := make([]string, len(cols))
	for i, c := range cols {
		names[i], marks[i] = quoteIdent(c.name), "?"
	}
	head := fmt.Sprintf("INSERT INTO %s.%s (%s) VALUES ", quoteIdent(schema), quoteIdent(table), strings.Join(names, ", "))
	tuple := "(" + strings.Join(marks, ", ") + ")"
	const chunk = 500
	for start := 0; start < len(rows); start += chunk {
		part := rows[start:min(start+chunk, len(rows))]
		tuples := make([]string, len(part))
		args := make([]any, 0, len(part)*len(cols))
		for i, r := range part {
			tuples[i] = tuple
			args = append(args, r...)
		}
		if _, err := tx.ExecContext(ctx, head+strings.Join(tuples, ", "), args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func logf(format string, args ...any) { log.Printf("standin: "+format, args...) }
