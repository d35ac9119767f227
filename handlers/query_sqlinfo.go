package handlers

import (
	"context"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

// firstCustomSqlInfo is where Flight SQL's range of server-specific
// SqlInfo ids begins.
const firstCustomSqlInfo = 10000

// noteInfo records a registered standard id (see DoGetSqlInfo).
func (s *sqlState) noteInfo(id flightsql.SqlInfo) {
	if id < firstCustomSqlInfo {
		s.infoIDs = append(s.infoIDs, uint32(id))
	}
}

// sqlInfoIDs is a GetSqlInfo request for given ids.
type sqlInfoIDs []uint32

func (s sqlInfoIDs) GetInfo() []uint32 { return s }

// DoGetSqlInfo answers GetSqlInfo. A request for everything (no ids) gets
// the standard ids only: the JDBC driver maps every id it receives to its
// own enum and fails on one it does not know, so flightgw's own ids
// (SqlInfoMaxBatchBytes) are only sent to a client that asks for them.
func (h *Handler) DoGetSqlInfo(ctx context.Context, cmd flightsql.GetSqlInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if len(cmd.GetInfo()) == 0 {
		cmd = sqlInfoIDs(h.sql.infoIDs)
	}
	return h.BaseServer.DoGetSqlInfo(ctx, cmd)
}

// sqlInfoEntry is one GetSqlInfo value.
type sqlInfoEntry = struct {
	id  flightsql.SqlInfo
	val any
}

// sqlSyntaxInfo describes the SQL dialect (DuckDB's, behind the gateway's
// lock-down) for GetSqlInfo. The JDBC driver's DatabaseMetaData reads
// every one of these, each with a fixed Java type (the comments say which
// getter), and fails on a missing or mistyped one; BI tools call them all.
func sqlSyntaxInfo() []sqlInfoEntry {
	none := int64(0) // no known limit
	return []sqlInfoEntry{
		{flightsql.SqlInfoDDLCatalog, false},
		{flightsql.SqlInfoDDLSchema, false},
		{flightsql.SqlInfoDDLTable, false}, // tables are created by bulk ingest, not CREATE TABLE
		{flightsql.SqlInfoAllTablesAreASelectable, true},
		{flightsql.SqlInfoNullOrdering, int32(flightsql.SqlNullOrderingSortAtEnd)}, // DuckDB: NULLS LAST
		{flightsql.SqlInfoKeywords, []string{"ANTI", "ASOF", "COLUMNS", "EXCLUDE", "ILIKE", "PIVOT", "POSITIONAL",
			"QUALIFY", "SEMI", "SUMMARIZE", "UNPIVOT"}},
		{flightsql.SqlInfoNumericFunctions, []string{"ABS", "ACOS", "ASIN", "ATAN", "ATAN2", "CEILING", "COS", "COT",
			"DEGREES", "EXP", "FLOOR", "LOG", "LOG10", "MOD", "PI", "POWER", "RADIANS", "RAND", "ROUND", "SIGN", "SIN",
			"SQRT", "TAN", "TRUNCATE"}},
		{flightsql.SqlInfoStringFunctions, []string{"ASCII", "CHAR", "CONCAT", "LCASE", "LEFT", "LENGTH", "LOCATE",
			"LTRIM", "REPEAT", "REPLACE", "RIGHT", "RTRIM", "SPACE", "SUBSTRING", "UCASE"}},
		{flightsql.SqlInfoSystemFunctions, []string{"IFNULL"}},
		{flightsql.SqlInfoDateTimeFunctions, []string{"CURDATE", "CURTIME", "DAYNAME", "DAYOFMONTH", "DAYOFWEEK",
			"DAYOFYEAR", "HOUR", "MINUTE", "MONTH", "MONTHNAME", "NOW", "QUARTER", "SECOND", "WEEK", "YEAR"}},
		{flightsql.SqlInfoSearchStringEscape, `\`},
		{flightsql.SqlInfoExtraNameChars, ""},
		{flightsql.SqlInfoSupportsColumnAliasing, true},
		{flightsql.SqlInfoNullPlusNullIsNull, true},
		{flightsql.SqlInfoSupportsConvert, map[int32][]int32{}},
		{flightsql.SqlInfoSupportsTableCorrelationNames, true},
		{flightsql.SqlInfoSupportsDifferentTableCorrelationNames, false},
		{flightsql.SqlInfoSupportsExpressionsInOrderBy, true},
		{flightsql.SqlInfoSupportsOrderByUnrelated, true},
		{flightsql.SqlInfoSupportedGroupBy, int32(1<<0 | 1<<1) /* SQL_GROUP_BY_UNRELATED, SQL_GROUP_BY_BEYOND_SELECT */},
		{flightsql.SqlInfoSupportsLikeEscapeClause, true},
		{flightsql.SqlInfoSupportsNonNullableColumns, true},
		{flightsql.SqlInfoSupportedGrammar, int32(1<<0 | 1<<1) /* SQL_MINIMUM_GRAMMAR, SQL_CORE_GRAMMAR */},
		{flightsql.SqlInfoANSI92SupportedLevel, int32(1<<0 | 1<<1) /* ANSI92_ENTRY_SQL, ANSI92_INTERMEDIATE_SQL */},
		{flightsql.SqlInfoSupportsIntegrityEnhancementFacility, false},
		{flightsql.SqlInfoOuterJoinsSupportLevel, int32(2) /* SQL_FULL_OUTER_JOINS */},
		{flightsql.SqlInfoSchemaTerm, "schema"},
		{flightsql.SqlInfoProcedureTerm, "procedure"},
		{flightsql.SqlInfoCatalogTerm, "catalog"},
		{flightsql.SqlInfoCatalogAtStart, true},
		{flightsql.SqlInfoSchemasSupportedActions, int32(0)},
		{flightsql.SqlInfoCatalogsSupportedActions, int32(0)},
		{flightsql.SqlInfoSupportedPositionedCommands, int32(0)},
		{flightsql.SqlInfoSelectForUpdateSupported, false},
		{flightsql.SqlInfoStoredProceduresSupported, false},
		{flightsql.SqlInfoSupportedSubqueries, int32(1<<0 | 1<<1 | 1<<2 | 1<<3) /* comparisons, EXISTS, IN, quantified */},
		{flightsql.SqlInfoCorrelatedSubqueriesSupported, true},
		{flightsql.SqlInfoSupportedUnions, int32(1<<0 | 1<<1) /* UNION, UNION ALL */},
		{flightsql.SqlInfoMaxBinaryLiteralLen, none},
		{flightsql.SqlInfoMaxCharLiteralLen, none},
		{flightsql.SqlInfoMaxColumnNameLen, none},
		{flightsql.SqlInfoMaxColumnsInGroupBy, none},
		{flightsql.SqlInfoMaxColumnsInIndex, none},
		{flightsql.SqlInfoMaxColumnsInOrderBy, none},
		{flightsql.SqlInfoMaxColumnsInSelect, none},
		{flightsql.SqlInfoMaxColumnsInTable, none},
		{flightsql.SqlInfoMaxConnections, none},
		{flightsql.SqlInfoMaxCursorNameLen, none},
		{flightsql.SqlInfoMaxIndexLen, none},
		{flightsql.SqlInfoDBSchemaNameLen, none},
		{flightsql.SqlInfoMaxProcedureNameLen, none},
		{flightsql.SqlInfoMaxCatalogNameLen, none},
		{flightsql.SqlInfoMaxRowSize, none},
		{flightsql.SqlInfoMaxRowSizeIncludesBlobs, false},
		{flightsql.SqlInfoMaxStatementLen, none},
		{flightsql.SqlInfoMaxStatements, none},
		{flightsql.SqlInfoMaxTableNameLen, none},
		{flightsql.SqlInfoMaxTablesInSelect, none},
		{flightsql.SqlInfoMaxUsernameLen, none},
		// A query reads committed snapshots; a transaction's writes commit
		// together.
		// The JDBC driver reads this one as a Java Long.
		{flightsql.SqlInfoDefaultTransactionIsolation, int64(2) /* SQL_TRANSACTION_READ_COMMITTED */},
		{flightsql.SqlInfoSupportedTransactionsIsolationlevels, int32(1 << 2) /* SQL_TRANSACTION_READ_COMMITTED */},
		{flightsql.SqlInfoDataDefinitionCausesTransactionCommit, false},
		{flightsql.SqlInfoDataDefinitionsInTransactionsIgnored, false},
		{flightsql.SqlInfoSupportedResultSetTypes, int32(1 << 1) /* SQL_RESULT_SET_TYPE_FORWARD_ONLY */},
		{flightsql.SqlInfoSupportedConcurrenciesForResultSetUnspecified, int32(0)},
		{flightsql.SqlInfoSupportedConcurrenciesForResultSetForwardOnly, int32(1 << 1) /* SQL_RESULT_SET_CONCURRENCY_READ_ONLY */},
		{flightsql.SqlInfoSupportedConcurrenciesForResultSetScrollSensitive, int32(0)},
		{flightsql.SqlInfoSupportedConcurrenciesForResultSetScrollInsensitive, int32(0)},
		{flightsql.SqlInfoBatchUpdatesSupported, true},
		{flightsql.SqlInfoSavePointsSupported, false},
		{flightsql.SqlInfoNamedParametersSupported, false},
		{flightsql.SqlInfoLocatorsUpdateCopy, false},
		{flightsql.SqlInfoStoredFunctionsUsingCallSyntaxSupported, false},
	}
}

// millis is a timeout as GetSqlInfo reports it: int32 milliseconds, 0 for
// none, the largest int32 for anything longer.
func millis(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	return int32(min(d.Milliseconds(), math.MaxInt32))
}
