package handlers

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

// SqlInfoMaxBatchBytes is a flightgw-specific GetSqlInfo id (int64): the
// largest Arrow message, in bytes, that the gateway accepts.
const SqlInfoMaxBatchBytes flightsql.SqlInfo = 10001

// registerSQLInfo fills GetSqlInfo. The values are the same for every
// caller, so BaseServer's table serves them.
func (h *Handler) registerSQLInfo() error {
	name := h.opts.ServerName
	if name == "" {
		name = "flightgw"
	}
	infos := []struct {
		id  flightsql.SqlInfo
		val any
	}{
		{flightsql.SqlInfoFlightSqlServerName, name},
		{flightsql.SqlInfoFlightSqlServerVersion, h.opts.Version},
		{flightsql.SqlInfoFlightSqlServerArrowVersion, arrow.PkgVersion},
		{flightsql.SqlInfoFlightSqlServerReadOnly, false},
		{flightsql.SqlInfoFlightSqlServerSql, h.opts.Engine != nil},
		{flightsql.SqlInfoFlightSqlServerSubstrait, false},
		{flightsql.SqlInfoFlightSqlServerTransaction, int32(flightsql.SqlTransactionTransaction)},
		{flightsql.SqlInfoFlightSqlServerCancel, h.opts.Engine != nil},
		{flightsql.SqlInfoFlightSqlServerBulkIngestion, true},
		{flightsql.SqlInfoFlightSqlServerIngestTransactionsSupported, true},
		{flightsql.SqlInfoTransactionsSupported, true},
		{flightsql.SqlInfoIdentifierQuoteChar, `"`},
		{flightsql.SqlInfoIdentifierCase, int32(flightsql.SqlCaseSensitivityCaseInsensitive)},
		{flightsql.SqlInfoQuotedIdentifierCase, int32(flightsql.SqlCaseSensitivityCaseInsensitive)},
		{SqlInfoMaxBatchBytes, h.opts.MaxBatchBytes},
	}
	infos = append(infos,
		sqlInfoEntry{flightsql.SqlInfoFlightSqlServerStatementTimeout, millis(h.opts.StatementTimeout)},
		sqlInfoEntry{flightsql.SqlInfoFlightSqlServerTransactionTimeout, millis(h.opts.TxnTimeout)})
	infos = append(infos, sqlSyntaxInfo()...)
	for _, i := range infos {
		if err := h.RegisterSqlInfo(i.id, i.val); err != nil {
			return fmt.Errorf("handlers: sql info %v: %w", i.id, err)
		}
		h.sql.noteInfo(i.id)
	}
	return nil
}
