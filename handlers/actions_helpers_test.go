package handlers

import (
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/txn"
)

// identity is a table's identity in an envelope, for tests that seal
// payloads themselves.
func identity(t catalogs.TableIdent) []string { return txn.EnvelopeTable(t) }
