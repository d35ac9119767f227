package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// TLSConfig turns on TLS for the gateway's listener.
type TLSConfig struct {
	// CertFile and KeyFile are the server's PEM certificate chain and
	// private key. They are read again when either file changes, so a
	// renewed certificate (cert-manager, certbot) is served to new
	// connections without a restart.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientCAFile, when set, requires every client to present a
	// certificate signed by one of these PEM CAs (mutual TLS).
	ClientCAFile string `yaml:"client_ca_file"`
	// PeerCAFile holds the PEM CAs that sign the other replicas'
	// certificates (cluster.peers); empty trusts the system's roots.
	PeerCAFile string `yaml:"peer_ca_file"`
}

// Enabled tells whether TLS is configured.
func (c TLSConfig) Enabled() bool { return c.CertFile != "" || c.KeyFile != "" }

// validate checks the files now, so that a bad path or PEM stops the
// server at start with the key at fault.
func (c TLSConfig) validate() []error {
	var errs []error
	switch {
	case !c.Enabled():
		if c.ClientCAFile != "" {
			errs = append(errs, errors.New("tls.client_ca_file: needs tls.cert_file and tls.key_file"))
		}
		if c.PeerCAFile != "" {
			errs = append(errs, errors.New("tls.peer_ca_file: needs tls.cert_file and tls.key_file"))
		}
		return errs
	case c.CertFile == "":
		return append(errs, errors.New("tls.cert_file: empty while tls.key_file is set"))
	case c.KeyFile == "":
		return append(errs, errors.New("tls.key_file: empty while tls.cert_file is set"))
	}
	if _, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile); err != nil {
		errs = append(errs, fmt.Errorf("tls.cert_file, tls.key_file: %w", err))
	}
	for key, path := range map[string]string{"tls.client_ca_file": c.ClientCAFile, "tls.peer_ca_file": c.PeerCAFile} {
		if path == "" {
			continue
		}
		if _, err := certPool(path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	return errs
}

// certPool reads PEM CA certificates.
func certPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// certReloader serves the key pair in its files, read again when either
// file's modification time or size changes. A pair that fails to load
// (a renewal caught half-written) leaves the previous one in service.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]fileStamp
	checked time.Time
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// recheck is how often the files are looked at, at most.
const recheck = time.Second

func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	if _, err := r.current(); err != nil {
		return nil, err
	}
	return r, nil
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}
}

// current returns the key pair to serve, loading it again if the files
// changed since it was loaded.
func (r *certReloader) current() (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.cert != nil && now.Sub(r.checked) < recheck {
		return r.cert, nil
	}
	r.checked = now
	stamp := [2]fileStamp{stampOf(r.certFile), stampOf(r.keyFile)}
	if r.cert != nil && stamp == r.stamp {
		return r.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		if r.cert == nil {
			return nil, fmt.Errorf("tls.cert_file, tls.key_file: %w", err)
		}
		if stamp != r.stamp {
			r.log.Warn("TLS certificate files changed but do not load; serving the previous certificate", "cert_file", r.certFile, "err", err)
			r.stamp = stamp
		}
		return r.cert, nil
	}
	if r.cert != nil {
		r.log.Info("TLS certificate reloaded", "cert_file", r.certFile)
	}
	r.cert, r.stamp = &cert, stamp
	return r.cert, nil
}

// serverTLS is the listener's TLS configuration.
func serverTLS(c TLSConfig, certs *certReloader) (*tls.Config, error) {
	conf := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return certs.current() },
		NextProtos:     []string{"h2"},
	}
	if c.ClientCAFile != "" {
		pool, err := certPool(c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.client_ca_file: %w", err)
		}
		conf.ClientCAs = pool
		conf.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return conf, nil
}

// peerTLS is the TLS configuration of calls to the other replicas: their
// certificates verified against tls.peer_ca_file (else the system's
// roots), and this gateway's own certificate presented when replicas
// require client certificates.
func peerTLS(c TLSConfig, certs *certReloader) (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.PeerCAFile != "" {
		pool, err := certPool(c.PeerCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.peer_ca_file: %w", err)
		}
		conf.RootCAs = pool
	}
	if c.ClientCAFile != "" {
		conf.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return certs.current() }
	}
	return conf, nil
}
