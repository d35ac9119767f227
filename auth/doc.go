// Package auth identifies the principal behind each Flight call and scopes
// it to a realm.
//
// Every principal belongs to one realm and every configured catalog to one
// realm; a principal sees and writes only the catalogs of its realm (the
// others do not exist for it). Authentication accepts:
//
//   - HTTP Basic credentials, on the Flight handshake or on any call's
//     "authorization" header; the server answers with a bearer token in the
//     "authorization" response header (and trailer) that the client sends
//     on later calls. Passwords are stored as bcrypt hashes.
//   - Bearer tokens: those the server issued (HMAC-signed, short-lived, so
//     any replica with the same key accepts them) and static tokens from the
//     configuration, stored as SHA-256 hashes.
//
// With authentication disabled every call runs as the anonymous principal
// of the default realm; the server only allows that on loopback addresses
// unless told --insecure.
package auth
