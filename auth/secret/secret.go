// Package secret hashes the credentials an operator writes into the
// configuration (auth.users[].password_hash, auth.tokens[].sha256). It is
// apart from package auth, which links gRPC, so that `flightgw
// hash-password` and `hash-token` run in the light front (cmd/flightgw)
// with the very functions the gateway's checks are written against.
package secret

import (
	"crypto/sha256"
	"encoding/hex"

	"golang.org/x/crypto/bcrypt"
)

// HashPassword returns the bcrypt hash (default cost) to put in a user's
// password_hash.
func HashPassword(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	return string(h), err
}

// HashToken returns the hex SHA-256 to put in a token's sha256.
func HashToken(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}
