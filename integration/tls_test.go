package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/flightgw/flightgw/internal/testpki"
)

// pki is a throwaway certificate authority and the files it issued.
type pki struct {
	t      *testing.T
	dir    string
	ca     *testpki.CA
	caFile string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	ca, err := testpki.New("flightgw test CA")
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{t: t, dir: t.TempDir(), ca: ca}
	p.caFile = p.write("ca.pem", ca.PEM)
	return p
}

func (p *pki) write(name string, b []byte) string {
	p.t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// issue makes a certificate for 127.0.0.1 usable by a server and a
// client, and returns its PEM chain and key.
func (p *pki) issue(serial int64) (certPEM, keyPEM []byte) {
	p.t.Helper()
	cert, key, err := p.ca.Issue(serial)
	if err != nil {
		p.t.Fatal(err)
	}
	return cert, key
}

// servedSerial is the serial of the certificate a new TLS connection to
// addr is shown.
func (p *pki) servedSerial(addr string, clientCert *tls.Certificate) (int64, error) {
	roots := x509.NewCertPool()
	roots.AddCert(p.ca.Cert)
	conf := &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}}
	if clientCert != nil {
		conf.Certificates = []tls.Certificate{*clientCert}
	}
	conn, err := tls.Dial("tcp", addr, conf)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
}

// adbcTLS opens an ADBC connection over TLS to addr with extra options.
func adbcTLS(t *testing.T, addr string, opts map[string]string) (adbc.Connection, error) {
	t.Helper()
	o := map[string]string{adbc.OptionKeyURI: "grpc+tls://" + addr}
	for k, v := range opts {
		o[k] = v
	}
	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(o)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { db.Close() })
	cnxn, err := db.Open(context.Background())
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cnxn.Close() })
	return cnxn, nil
}

// adbcCount runs SELECT count(*) FROM table through an ADBC connection.
func adbcCount(cnxn adbc.Connection, table string) (int64, error) {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery("SELECT count(*) FROM " + table); err != nil {
		return 0, err
	}
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	if !rdr.Next() {
		return 0, fmt.Errorf("no row: %v", rdr.Err())
	}
	return rdr.RecordBatch().Column(0).(interface{ Value(int) int64 }).Value(0), nil
}

// TestTLS: with tls.cert_file and tls.key_file the gateway serves TLS
// only. ADBC over grpc+tls ingests and queries; a plaintext client is
// refused; a renewed certificate is served to new connections without a
// restart, and one that does not load leaves the previous in service.
func TestTLS(t *testing.T) {
	requireEngine(t)
	p := newPKI(t)
	cert, key := p.issue(2)
	certFile, keyFile := p.write("server.pem", cert), p.write("server-key.pem", key)
	g := startGateway(t, fmt.Sprintf("tls: {cert_file: %q, key_file: %q}\n", certFile, keyFile))
	caPEM, _ := os.ReadFile(p.caFile)

	cnxn, err := adbcTLS(t, g.addr, map[string]string{adbcflight.OptionSSLRootCerts: string(caPEM)})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := ingest(t, cnxn, "people", adbc.OptionValueIngestModeCreate, people(t, 0, 100)); err != nil || n != 100 {
		t.Fatalf("ingest over TLS: %d rows, %v", n, err)
	}
	if n, err := adbcCount(cnxn, "people"); err != nil || n != 100 {
		t.Fatalf("query over TLS: %d, %v", n, err)
	}
	// Plaintext gRPC is not served.
	if n, err := adbcCount(g.adbcConn(t, nil), "people"); err == nil {
		t.Fatalf("a plaintext client read %d rows", n)
	}
	// A client that does not trust the CA fails the handshake.
	if c, err := adbcTLS(t, g.addr, nil); err == nil {
		if _, err := adbcCount(c, "people"); err == nil {
			t.Fatal("a client that does not trust the CA was served")
		}
	}

	// Renewal: new files, served to new connections.
	cert, key = p.issue(3)
	p.write("server.pem", cert)
	p.write("server-key.pem", key)
	var serial int64
	if !eventually(t, 10*time.Second, func() bool { serial, _ = p.servedSerial(g.addr, nil); return serial == 3 }) {
		t.Fatalf("the renewed certificate is not served (serial %d)", serial)
	}
	if n, err := adbcCount(cnxn, "people"); err != nil || n != 100 {
		t.Fatalf("the open connection after the renewal: %d, %v", n, err)
	}
	// A renewal caught half-written: the previous certificate stays.
	p.write("server.pem", cert[:len(cert)/2])
	if !eventually(t, 10*time.Second, func() bool {
		return strings.Contains(g.logs.String(), "TLS certificate files changed but do not load")
	}) {
		t.Fatal("no warning for a certificate that does not load")
	}
	if serial, err := p.servedSerial(g.addr, nil); err != nil || serial != 3 {
		t.Fatalf("after a bad renewal: serial %d, %v", serial, err)
	}
}

// TestMutualTLS: with tls.client_ca_file a client must present a
// certificate the CA signed. Replicas that require client certificates
// reach each other with their own: a cancel forwarded between two such
// replicas stops the query.
func TestMutualTLS(t *testing.T) {
	requireEngine(t)
	p := newPKI(t)
	cert, key := p.issue(2)
	certFile, keyFile := p.write("server.pem", cert), p.write("server-key.pem", key)
	tlsConf := fmt.Sprintf("tls: {cert_file: %q, key_file: %q, client_ca_file: %q, peer_ca_file: %q}\ntickets: {signing_key: mtls-key}\n",
		certFile, keyFile, p.caFile, p.caFile)
	reader := startGateway(t, tlsConf)
	planner := startGateway(t, tlsConf+fmt.Sprintf("cluster: {peers: [%q]}\n", reader.addr))
	caPEM, _ := os.ReadFile(p.caFile)

	// Without a client certificate: TLS 1.3 finishes the client's side of
	// the handshake before the server checks, so the refusal shows on the
	// first call.
	if c, err := adbcTLS(t, reader.addr, map[string]string{adbcflight.OptionSSLRootCerts: string(caPEM)}); err == nil {
		if n, err := adbcCount(c, "(SELECT 1 AS x)"); err == nil {
			t.Fatalf("ADBC without a client certificate counted %d", n)
		}
	}
	ccert, ckey := p.issue(9)
	cnxn, err := adbcTLS(t, reader.addr, map[string]string{adbcflight.OptionSSLRootCerts: string(caPEM),
		adbcflight.OptionMTLSCertChain: string(ccert), adbcflight.OptionMTLSPrivateKey: string(ckey)})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := adbcCount(cnxn, "(SELECT 1 AS x UNION ALL SELECT 2)"); err != nil || n != 2 {
		t.Fatalf("query with a client certificate: %d, %v", n, err)
	}

	pair, err := tls.X509KeyPair(ccert, ckey)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.ca.Cert)
	creds := grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}}))
	cr, cp := reader.flightClient(t, creds), planner.flightClient(t, creds)
	ctx := context.Background()
	info, rdr := startLongRead(t, ctx, cp, cr, ctx)
	res, err := cp.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
	if err != nil || res.Status != flight.CancelStatusCancelled {
		t.Fatalf("cancel between mTLS replicas: %v %v\n%s", res.GetStatus(), err, planner.logs.String())
	}
	drainCancelled(t, rdr)
}
