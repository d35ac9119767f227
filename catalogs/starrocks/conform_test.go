package starrocks

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/go-sql-driver/mysql"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// cluster is a StarRocks cluster (or the stand-in) from the environment
// that integration/starrocks-standin/run.sh sets, or that points at a real
// cluster (docs/starrocks.md).
type cluster struct {
	fe, mysql, user, password string
}

func clusterFromEnv(t *testing.T) cluster {
	c := cluster{fe: os.Getenv("FLIGHTGW_STARROCKS_FE"), mysql: os.Getenv("FLIGHTGW_STARROCKS_MYSQL"),
		user: os.Getenv("FLIGHTGW_STARROCKS_USER"), password: os.Getenv("FLIGHTGW_STARROCKS_PASSWORD")}
	if c.fe == "" || c.mysql == "" {
		t.Skip("FLIGHTGW_STARROCKS_FE and FLIGHTGW_STARROCKS_MYSQL are not set: run make test-starrocks (MariaDB and the StarRocks stand-in), or point them at a cluster")
	}
	if c.user == "" {
		c.user = "root"
	}
	return c
}

// freshDatabase creates an empty database and drops it at cleanup.
func (c cluster) freshDatabase(t *testing.T) string {
	t.Helper()
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr, mc.InterpolateParams = c.user, c.password, "tcp", c.mysql, true
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "fgw_" + hex.EncodeToString(b)
	if _, err := db.Exec("CREATE DATABASE " + quote(name)); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP DATABASE IF EXISTS " + quote(name)); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
		_ = db.Close()
	})
	return name
}

func (c cluster) props(t *testing.T) map[string]string {
	return map[string]string{propFE: c.fe, propMySQL: c.mysql, propUser: c.user, propPassword: c.password,
		propSpoolDir: t.TempDir(), catalogs.PropRemoteTimeout: "20000", propReplication: os.Getenv("FLIGHTGW_STARROCKS_REPLICATION")}
}

func TestConformance(t *testing.T) {
	c := clusterFromEnv(t)
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		db := c.freshDatabase(t)
		props := c.props(t)
		if props[propReplication] == "" {
			delete(props, propReplication)
		}
		p, err := Open(context.Background(), "sr", props)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return &catalogtest.Instance{Provider: p, Catalog: "sr", Namespace: []string{db}}
	}}, catalogtest.Config{
		TransactionScoped: true,
		UnstorableType:    &arrow.DurationType{Unit: arrow.Second},
	})
}
