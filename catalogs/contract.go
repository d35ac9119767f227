package catalogs

// Contract is every interface a backend must or may implement, in one
// place, as database/sql/driver keeps its interfaces in one file: who
// calls it, what happens when a backend does not implement it, and the
// catalogtest check that holds a backend to it. TestContract fails when
// an interface of this package has no row, so that a new capability
// cannot be added without saying who calls it and how it is checked.
// docs/architecture.md and doc.go point here instead of repeating it.
var Contract = []Capability{
	{"Provider", true, "txn (writes and commits), handlers (GetTableSpec, security)",
		"none: every backend implements it", "GetTableSpecConcurrent, InvisibleUntilCommit, ConcurrentCommitters, BadInput, SecurityContext; and every other check of catalogtest.Run"},
	{"Discarder", false, "txn: a commit that certainly did not land, AbortMessages",
		"staged files stay until the backend's own cleanup or Reclaimer", "Discard, Stream (Abort), messages"},
	{"TableManager", false, "txn/write.go: ingest modes create, create_append and replace, with the write's table options (Iceberg partition spec, sort order, properties; Paimon, Delta and StarRocks layout)",
		"a write that must create a table, or carries table options, is InvalidArgument", "CreateAndDrop, TableOptions (an unknown option refused, never ignored)"},
	{"Uncreator", false, "txn: a write that created its table and failed before its first commit landed; ROLLBACK of a transaction that created a table",
		"the table stays, empty, and the client's error says it was created and kept", "Uncreator (Config.DropsUnwritten: the JDBC Paimon catalog's creates, not staged)"},
	{"Lister", false, "handlers: catalogs' metadata, information_schema, name resolution",
		"the catalog lists nothing; a table is found only by its full name", "CreateAndDrop (its tables and namespaces listed)"},
	{"IdempotentCommitter", false, "txn (commits with the landed-commit check), CommitMessages' replay refusal",
		"the outcome of a commit whose reply was lost stays unknown; CommitMessages is refused", "CommitOnce, Replicas (with Instance.Replica), txn, messages"},
	{"Overwriter", false, "txn: replace-mode ingest and INSERT OVERWRITE (the stream is opened with WriteTxn.Replace, for a backend that replaces as it writes)",
		"a replace is InvalidArgument", "Overwrite (Config.ReplacesInStream), messages"},
	{"Closer", false, "server: shutdown", "nothing is closed", "none (no observable contract)"},
	{"QueryPusher", false, "engine/pushquery.go: a query wholly on one remote catalog",
		"the engine runs the query over scans", "QueryPusher"},
	{"Reclaimer", false, "server/reclaim.go: at start and every reclaim.interval",
		"orphan files are never deleted", "Reclaimer, StagedCreateReclaim"},
	{"Scanner", false, "handlers/query.go: a query reads the table",
		"the table cannot be queried (InvalidArgument)", "Scan and the checks that read back"},
	{"FilePlanner", false, "engine/native.go: the engine reads Parquet files itself",
		"the engine reads through Scanner", "FilePlanner (its plain plans read back with an independent Parquet reader)"},
	{"StagedPlanner", false, "engine/native.go: a transaction reads its own staged writes as files",
		"staged writes are read through StagedScanner", "StagedPlanner"},
	{"StagedScanner", false, "engine: a transaction reads its own staged writes",
		"a transaction does not see its own writes before COMMIT", "StagedScanner"},
	{"StreamWriter", false, "txn/write.go: ingest and INSERT streams, told their unit of work (a backend transaction of their own: StarRocks, an upstream Flight SQL server)",
		"each batch is a WriteBatch of its own", "Stream, StreamUnitOfWork (TransactionScoped: an aborted stream dooms its unit of work)"},
	{"WriteStream", false, "txn/write.go: what OpenStream and OpenReplaceStream return",
		"(returned by StreamWriter and SchemaReplacer)", "Stream, SchemaReplacer"},
	{"MultiTableCommitter", false, "txn: a transaction or CommitMessages over several tables",
		"each table commits in one snapshot, in first-write order", "MultiTableCommitter"},
	{"SchemaReplacer", false, "txn/write.go: a replace that changes the schema",
		"a replace must keep the table's columns", "SchemaReplacer"},
	{"CommitMatcher", false, "txn/messagecommit.go: CommitMessages, before and after committing (a commit id names one set of files)",
		"a landed commit id is answered from its record without comparing its files", "CommitMatcher; integration TestCommitMessagesOneFileSetPerID"},
	{"ReceiptChecker", false, "txn/messages.go and txn/messagecommit.go: CommitMessages and AbortMessages check the payloads' receipts (CheckReceipts), CommitMessages' replay refusal and AbortMessages' never-committed check (CheckUnreferenced)",
		"CommitMessages and AbortMessages are FailedPrecondition", "ReceiptChecker, CheckUnreferenced, Replicas, messages"},
	{"PayloadCodec", false, "txn/messages.go: PrepareCommit seals the payloads under the codec's kind; CommitMessages and AbortMessages refuse another kind and decode them",
		"PrepareCommit, CommitMessages and AbortMessages are FailedPrecondition", "PayloadCodec, messages"},
	{"Maintainer", false, "txn/maintain.go: the MaintainTable action (handlers/maintain.go)",
		"MaintainTable is FailedPrecondition: nothing expires or is rewritten", "Maintainer"},
	{"StagedCreator", false, "txn/write.go: a write that creates its table (auto-commit or in a transaction), in preference to TableManager.CreateTable",
		"the table is created before the data and a failed create is undone with Uncreator", "StagedCreate; txn TestStagedCreate"},
	{"CreateKeeper", false, "txn: the reaper refreshes, every catalogs.CreateKeepEvery, the marks of the staged creates open transactions hold; the Reclaimer reclaims the files of a create whose marks are all older than reclaim.min_age and whose name no table took",
		"a killed staged create's files belong to no table and are never reclaimed", "StagedCreateReclaim"},
	{"CreateScanner", false, "engine: a transaction reads a table it is creating (a staged create)",
		"the table a transaction creates reads as not found inside it until COMMIT", "none yet (integration TestQueryReadsOwnTransaction on iceberg and TestPaimonReadsOwnTransaction; paimon TestStagedCreateScan)"},
	{"BreakerReporter", false, "server/metrics.go: flightgw_breaker_state",
		"no breaker metric for the catalog", "none (metrics test)"},
}

// Capability is one row of Contract.
type Capability struct {
	// Interface names the interface of this package.
	Interface string
	// Required is true for the one interface every backend implements.
	Required bool
	// Caller is who calls it, and for what.
	Caller string
	// Fallback is what happens when a backend does not implement it.
	Fallback string
	// Check names the catalogtest checks that hold a backend to it.
	Check string
}
