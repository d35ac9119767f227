package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/flightgw/flightgw/auth/secret"
	"github.com/flightgw/flightgw/internal/duration"
)

// User is a principal that logs in with a password.
type User struct {
	Name  string `yaml:"name"`
	Realm string `yaml:"realm"`
	// PasswordHash is a bcrypt hash ("$2a$…"; `flightgw hash-password`
	// prints one).
	PasswordHash string `yaml:"password_hash"`
}

// Token is a principal that presents a static bearer token.
type Token struct {
	Name  string `yaml:"name"`
	Realm string `yaml:"realm"`
	// SHA256 is the hex SHA-256 of the token (`flightgw hash-token`).
	SHA256 string `yaml:"sha256"`
}

// Config configures authentication.
type Config struct {
	// Enabled turns authentication on. Off, every call is anonymous.
	Enabled bool    `yaml:"enabled"`
	Users   []User  `yaml:"users"`
	Tokens  []Token `yaml:"tokens"`
	// TokenTTL is the lifetime of the bearer tokens the server issues.
	TokenTTL duration.Duration `yaml:"token_ttl"`
	// SigningKey signs issued tokens; replicas that share it accept each
	// other's tokens. Empty: a random key per process.
	SigningKey string `yaml:"signing_key"`
}

// DefaultTokenTTL is the lifetime of issued tokens when none is configured.
const DefaultTokenTTL = time.Hour

// Validate checks the configuration and names the entry at fault.
func (c *Config) Validate() error {
	seen := map[string]bool{}
	for i, u := range c.Users {
		if u.Name == "" {
			return fmt.Errorf("auth.users[%d].name: empty", i)
		}
		if seen[u.Name] {
			return fmt.Errorf("auth.users[%d].name: duplicate principal %q", i, u.Name)
		}
		seen[u.Name] = true
		if _, err := bcrypt.Cost([]byte(u.PasswordHash)); err != nil {
			return fmt.Errorf("auth.users[%d].password_hash: not a bcrypt hash (use `flightgw hash-password`)", i)
		}
	}
	for i, t := range c.Tokens {
		if t.Name == "" {
			return fmt.Errorf("auth.tokens[%d].name: empty", i)
		}
		if seen[t.Name] {
			return fmt.Errorf("auth.tokens[%d].name: duplicate principal %q", i, t.Name)
		}
		seen[t.Name] = true
		if b, err := hex.DecodeString(strings.TrimPrefix(t.SHA256, "sha256:")); err != nil || len(b) != sha256.Size {
			return fmt.Errorf("auth.tokens[%d].sha256: not a hex SHA-256 (use `flightgw hash-token`)", i)
		}
	}
	if err := c.TokenTTL.Check("auth.token_ttl"); err != nil {
		return err
	}
	if c.Enabled && len(c.Users) == 0 && len(c.Tokens) == 0 {
		return fmt.Errorf("auth.enabled: no users or tokens configured")
	}
	return nil
}

// HashPassword returns the bcrypt hash to put in User.PasswordHash
// (secret.HashPassword, which `flightgw hash-password` prints).
func HashPassword(password string) (string, error) { return secret.HashPassword(password) }

// HashToken returns the SHA-256 to put in Token.SHA256
// (secret.HashToken, which `flightgw hash-token` prints).
func HashToken(token string) string { return secret.HashToken(token) }
