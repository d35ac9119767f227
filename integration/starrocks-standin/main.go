// Command starrocks-standin is a protocol-faithful stand-in for a StarRocks
// cluster, for the tests of the gateway's StarRocks backend on machines
// where StarRocks cannot run. It is a separate program: the gateway never
// links it.
//
// It serves, on loopback only:
//   - an FE HTTP listener: the Stream Load transaction interface
//     (/api/transaction/begin, prepare, commit, rollback), get_load_state,
//     and 307 redirects of the data-carrying calls (/api/transaction/load,
//     /api/{db}/{table}/_stream_load) to the BE listener, as a real FE does;
//   - a BE HTTP listener that receives the loads;
//   - a MySQL-protocol listener that forwards to a real MariaDB server,
//     rewriting StarRocks CREATE TABLE statements into MariaDB ones, so that
//     the backend's DDL, information_schema reads and queries reach a real
//     SQL server;
//   - admin endpoints on the FE listener (/admin/faults, /admin/counts,
//     /admin/reset) to inject failures, count calls and list the
//     statements the MySQL listener forwarded.
//
// Loaded rows stay staged in the stand-in until their transaction is
// COMMITTED, and are then inserted into MariaDB in one transaction, so
// that what a reader sees over the MySQL protocol is exactly what was
// committed. See docs/starrocks.md for what is faithful and what is not.
//
// Usage:
//
//	starrocks-standin -mariadb root@tcp(127.0.0.1:3306)/ -user root -password secret
//
// It prints one JSON line with its addresses on stdout once it listens
// ({"fe":"http://...","be":"http://...","mysql":"127.0.0.1:N"}), and runs
// until SIGINT or SIGTERM. Faults can also be set at start with
// STANDIN_FAULTS="op=kind[:times],..." (see faults.go).
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

func main() {
	mariadb := flag.String("mariadb", "root@tcp(127.0.0.1:3306)/", "DSN of the MariaDB server that stores committed rows (go-sql-driver form)")
	mariadbAddr := flag.String("mariadb-addr", "", "host:port the MySQL listener forwards to (default: the DSN's address)")
	user := flag.String("user", "root", "user the HTTP API accepts (Basic auth)")
	password := flag.String("password", "", "password the HTTP API accepts")
	publishDelay := flag.Duration("publish-delay", 300*time.Millisecond, "how long a COMMITTED transaction takes to become VISIBLE after an injected Publish Timeout")
	flag.Parse()

	db, err := sql.Open("mysql", *mariadb+"?parseTime=true&multiStatements=false")
	if err != nil {
		log.Fatalf("standin: mariadb: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if err = db.PingContext(ctx); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		log.Fatalf("standin: mariadb unreachable: %v", err)
	}
	faults, err := parseFaults(os.Getenv("STANDIN_FAULTS"))
	if err != nil {
		log.Fatalf("standin: STANDIN_FAULTS: %v", err)
	}

	feL := listen()
	beL := listen()
	myL := listen()
	target := *mariadbAddr
	if target == "" {
		target = dsnAddr(*mariadb)
	}
	s := newServer(db, *user, *password, "http://"+beL.Addr().String(), *publishDelay)
	s.faults = faults
	stop := make(chan struct{})
	go s.reap(stop)

	fe := &http.Server{Handler: s.feMux(), ReadHeaderTimeout: 10 * time.Second}
	be := &http.Server{Handler: s.beMux(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = fe.Serve(feL) }()
	go func() { _ = be.Serve(beL) }()
	go proxyMySQL(myL, target, s.query)

	addrs, _ := json.Marshal(map[string]string{
		"fe": "http://" + feL.Addr().String(), "be": "http://" + beL.Addr().String(), "mysql": myL.Addr().String(),
	})
	fmt.Println(string(addrs))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	close(stop)
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = fe.Shutdown(sctx)
	_ = be.Shutdown(sctx)
	_ = myL.Close()
	_ = db.Close()
}

// listen opens a listener on a free loopback port.
func listen() net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatalf("standin: listen: %v", err)
	}
	return l
}

// dsnAddr extracts host:port from a go-sql-driver DSN user@tcp(host:port)/.
func dsnAddr(dsn string) string {
	start, end := -1, -1
	for i := range len(dsn) {
		if dsn[i] == '(' && start < 0 {
			start = i + 1
		}
		if dsn[i] == ')' && start >= 0 {
			end = i
			break
		}
	}
	if start < 0 || end < 0 {
		return "127.0.0.1:3306"
	}
	return dsn[start:end]
}
