package main

import (
	"fmt"
	"os"
	"path/filepath"

	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"

	"github.com/flightgw/flightgw/internal/testpki"
)

// writePKI writes a throwaway CA (ca.pem) and two certificates it signed
// for 127.0.0.1, usable by a server and a client (server.pem with
// server-key.pem, client.pem with client-key.pem), PKCS #8 keys, all PEM.
func writePKI(dir string) error {
	ca, err := testpki.New("flightgw JDBC test CA")
	if err != nil {
		return err
	}
	files := map[string][]byte{"ca.pem": ca.PEM}
	for i, name := range []string{"server", "client"} {
		cert, key, err := ca.Issue(int64(i + 2))
		if err != nil {
			return err
		}
		files[name+".pem"], files[name+"-key.pem"] = cert, key
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// tlsOptions are the ADBC options of a gateway serving TLS, from the
// files writePKI wrote in dir (FLIGHTGW_SEED_TLS_DIR): the CA to trust,
// and the client certificate.
func tlsOptions(dir string, opts map[string]string) error {
	for opt, name := range map[string]string{
		adbcflight.OptionSSLRootCerts:   "ca.pem",
		adbcflight.OptionMTLSCertChain:  "client.pem",
		adbcflight.OptionMTLSPrivateKey: "client-key.pem",
	} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("FLIGHTGW_SEED_TLS_DIR: %w", err)
		}
		opts[opt] = string(b)
	}
	return nil
}
