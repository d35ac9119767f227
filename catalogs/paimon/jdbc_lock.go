package paimon

import (
	"context"
	"fmt"
	"time"

	"github.com/flightgw/flightgw/catalogs"
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

// acquire takes the lock, retrying as JdbcCatalogLock.lock does (sleeps
// from 100 ms doubling up to lock-check-max-sleep) until
// lock-acquire-timeout; a lock still held then is ErrConflict.
func (m *metastore) acquire(ctx context.Context, t catalogs.TableIdent) (string, error) {
	id := m.lockID(t)
	if len(id) > m.cfg.lockKeyMaxLength {
		return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: its lock name is %d bytes, more than %s %d", t, len(id), PropLockKeyMaxLength, m.cfg.lockKeyMaxLength)
	}
	start := time.Now()
	sleep := 50 * time.Millisecond
	for {
		ok, err := m.tryAcquire(ctx, id)
		if err != nil {
			return "", err
		}
		if ok {
			return id, nil
		}
		if time.Since(start) > m.cfg.acquireTimeout {
			return "", catalogs.Errorf(catalogs.ErrConflict, "table %s: lock %q still held after %s (%s)", t, id, time.Since(start).Round(time.Millisecond), PropLockAcquireTimeout)
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
// RenamingSnapshotCommit does under its lock: errExists when it does.
func (p *Provider) createLocked(ctx context.Context, t catalogs.TableIdent, path string, data []byte) error {
	return p.withTableLock(ctx, t, func() error {
		if p.meta != nil && p.meta.cfg.lock {
			ok, err := p.fs.exists(ctx, path)
			if err != nil {
				return err
			}
			if ok {
				return errExists
			}
		}
		return p.fs.create(ctx, path, data)
	})
}
