package paimon

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// Paimon's distributed lock (JdbcCatalogLock), taken with lock.enabled
// around the write of schema-0 and of every snapshot file, which is where
// Paimon Java takes it (SchemaManager.createTable under runWithLock,
// RenamingSnapshotCommit). A lock is a row of paimon_distributed_locks
// named <catalog-key>.<database>.<table>: inserting it acquires it (the
// primary key makes a second insert fail), deleting it releases it, and a
// row older than its expire_time_seconds (lock-acquire-timeout) is
// deleted by the next acquirer as abandoned. On an object store, where
// Java's commit is "snapshot-N does not exist, then write it", the lock
// is what keeps a Java committer and this gateway from both writing N;
// the gateway still writes with put-if-absent under it.

// Statements of the SQLite and PostgreSQL lock dialects.
const (
	lockAcquireSQL = "INSERT INTO " + tblLocks + " (lock_id,expire_time_seconds) VALUES (?,?)"
	lockReleaseSQL = "DELETE FROM " + tblLocks + " WHERE lock_id = ?"
	// The expiry checks of SqlLiteDistributedLockDialect and
	// PostgresqlDistributedLockDialect.
	lockExpiredSQLite   = "DELETE FROM " + tblLocks + " WHERE  strftime('%s', 'now') - strftime('%s', acquired_at) > expire_time_seconds and lock_id = ?"
	lockExpiredPostgres = "DELETE FROM " + tblLocks + " WHERE EXTRACT(EPOCH FROM AGE(NOW(), acquired_at)) >expire_time_seconds and lock_id = ?"
	// The seconds until a held lock counts as abandoned, by the same
	// clocks and arithmetic as the expiry checks.
	lockLeftSQLite   = "SELECT expire_time_seconds - (strftime('%s', 'now') - strftime('%s', acquired_at)) FROM " + tblLocks + " WHERE lock_id = ?"
	lockLeftPostgres = "SELECT CAST(expire_time_seconds - EXTRACT(EPOCH FROM AGE(NOW(), acquired_at)) AS BIGINT) FROM " + tblLocks + " WHERE lock_id = ?"
)

// lockID is JdbcCatalogLock's lock name.
func (m *metastore) lockID(t catalogs.TableIdent) string {
	return fmt.Sprintf("%s.%s.%s", m.cfg.catalogKey, t.Namespace[0], t.Name)
}

// tryAcquire clears the lock when it expired and tries to insert it once
// (JdbcUtils.acquire); false when another holder has it.
func (m *metastore) tryAcquire(ctx context.Context, id string) (bool, error) {
	expired := lockExpiredSQLite
	if m.cfg.dialect == dialectPostgres {
		expired = lockExpiredPostgres
	}
	if _, err := m.exec(ctx, true, "lock "+id+": clear an expired lock", expired, id); err != nil {
		return false, err
	}
	// Not retried: a retry after a lost reply would find its own row and
	// wait for it to expire.
	_, err := m.exec(ctx, false, "lock "+id, lockAcquireSQL, id, int64(m.cfg.acquireTimeout/time.Second))
	if isConstraint(err) {
		return false, nil
	}
	return err == nil, err
}

// expiryGrace is how close to expiring a held lock may be when a wait
// times out for the waiter to stay for its expiry: the expiry checks
// count whole seconds.
const expiryGrace = 1100 * time.Millisecond

// expiresIn is how long until the held lock id counts as abandoned (and
// the next acquirer deletes it); ok is false when the row is gone or
// cannot be read.
func (m *metastore) expiresIn(ctx context.Context, id string) (time.Duration, bool) {
	q := lockLeftSQLite
	if m.cfg.dialect == dialectPostgres {
		q = lockLeftPostgres
	}
	vals, err := m.column(ctx, "lock "+id+": expiry", q, id)
	if err != nil || len(vals) != 1 {
		return 0, false
	}
	n, err := strconv.ParseFloat(vals[0], 64)
	if err != nil {
		return 0, false
	}
	return max(time.Duration(n*float64(time.Second)), 0), true
}

// acquire takes the lock, retrying as JdbcCatalogLock.lock does (sleeps
// from 100 ms doubling up to lock-check-max-sleep) until
// lock-acquire-timeout; a lock still held then is ErrConflict. A row that
// a killed process (gateway or Java) left is indistinguishable from a
// live holder's: the commit waits until the row is older than its
// expire_time_seconds, then deletes it and goes on (past
// lock-acquire-timeout by the second or so the expiry checks' whole
// seconds need, when the row is that close to expiring). The wait is logged at
// its start with the time the row has left, so that an operator sees why
// commits stall and can delete a row known to be dead.
func (m *metastore) acquire(ctx context.Context, t catalogs.TableIdent) (string, error) {
	id := m.lockID(t)
	if len(id) > m.cfg.lockKeyMaxLength {
		return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: its lock name is %d bytes, more than %s %d", t, len(id), PropLockKeyMaxLength, m.cfg.lockKeyMaxLength)
	}
	start := time.Now()
	sleep := 50 * time.Millisecond
	warned, graced := false, false
	for {
		ok, err := m.tryAcquire(ctx, id)
		if err != nil {
			return "", err
		}
		if ok {
			return id, nil
		}
		if !warned {
			warned = true
			left, known := m.expiresIn(ctx, id)
			attrs := []any{"catalog", m.catalog, "backend", Type, "table", t.String(), "lock", id, "lock_table", tblLocks, "wait_up_to", m.cfg.acquireTimeout}
			if known {
				attrs = append(attrs, "expires_in", left.Round(time.Second))
			}
			slog.WarnContext(ctx, "table lock held by another committer, or left by a process that died: waiting for it (a dead holder's row expires and is then cleared)", attrs...)
		}
		if time.Since(start) > m.cfg.acquireTimeout && !graced {
			// A holder that died holding the lock left a row whose
			// expire_time_seconds is its lock-acquire-timeout: a waiter
			// that started less than a second after the row was taken
			// gives up just before the row counts as abandoned (the
			// expiry compares whole seconds, and "older than"). When the
			// row is that close to expiring, wait for it once more.
			graced = true
			if left, known := m.expiresIn(ctx, id); known && left <= expiryGrace {
				if err := catalogs.Sleep(ctx, left+expiryGrace); err != nil {
					return "", err
				}
				continue
			}
		}
		if time.Since(start) > m.cfg.acquireTimeout {
			return "", catalogs.Errorf(catalogs.ErrConflict,
				"table %s: lock %q still held after %s (%s); a row left in %s by a killed process is cleared once older than its expire_time_seconds; if no process holds it, delete that row",
				t, id, time.Since(start).Round(time.Millisecond), PropLockAcquireTimeout, tblLocks)
		}
		sleep = min(sleep*2, m.cfg.checkMaxSleep)
		if err := catalogs.Sleep(ctx, sleep); err != nil {
			return "", err
		}
	}
}

// release deletes the lock row, also when the request was cancelled: a
// row left behind blocks every committer of the table until it expires.
func (m *metastore) release(ctx context.Context, id string) error {
	_, err := m.exec(context.WithoutCancel(ctx), true, "unlock "+id, lockReleaseSQL, id)
	return err
}

// withTableLock runs fn holding the table's lock when the catalog has one
// (a JDBC metastore with lock.enabled), and plainly otherwise.
func (p *Provider) withTableLock(ctx context.Context, t catalogs.TableIdent, fn func() error) error {
	if p.meta == nil || !p.meta.cfg.lock {
		return fn()
	}
	id, err := p.meta.acquire(ctx, t)
	if err != nil {
		return err
	}
	defer func() {
		if err := p.meta.release(ctx, id); err != nil {
			p.log.Error("release the table lock (it expires after lock-acquire-timeout)", "table", t.String(), "lock", id, "err", err)
		}
	}()
	return fn()
}

// createLocked writes a metadata file with put-if-absent under the table's
// lock, checking first that it does not exist, as Paimon's
// RenamingSnapshotCommit does under its lock: lake.ErrExists when it does.
func (p *Provider) createLocked(ctx context.Context, t catalogs.TableIdent, path string, data []byte) error {
	return p.withTableLock(ctx, t, func() error {
		if p.meta != nil && p.meta.cfg.lock {
			ok, err := p.fs.Exists(ctx, path)
			if err != nil {
				return err
			}
			if ok {
				return lake.ErrExists
			}
		}
		return p.fs.Create(ctx, path, data)
	})
}
