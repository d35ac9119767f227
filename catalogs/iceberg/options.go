package iceberg

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// The ingest options CreateTable takes besides table
// properties.
const (
	// OptPartition is the partition spec: comma-separated Iceberg
	// transforms as Spark and pyiceberg spell them (col, identity(col),
	// bucket(N, col), truncate(W, col), year(col), month(col), day(col),
	// hour(col)).
	OptPartition = "partition"
	// OptSort is the table's sort order: comma-separated columns, each
	// optionally followed by asc|desc and nulls first|nulls last.
	OptSort = "sort"
	// OptFormatVersion is the table's format version.
	OptFormatVersion = table.PropertyFormatVersion
)

// tableOptions is what a create's options decided.
type tableOptions struct {
	spec  *ice.PartitionSpec // nil: unpartitioned
	order table.SortOrder
	props ice.Properties
}

// propKind checks one table property's value.
type propKind func(v string) error

func intAtLeast(lo int64) propKind {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo {
			return fmt.Errorf("%q is not an integer of at least %d", v, lo)
		}
		return nil
	}
}

func boolean(v string) error {
	if _, err := strconv.ParseBool(v); err != nil || (v != "true" && v != "false") {
		return fmt.Errorf("%q is not true or false", v)
	}
	return nil
}

func nonEmpty(v string) error {
	if v == "" {
		return fmt.Errorf("%q is empty", v)
	}
	return nil
}

func oneOf(vals ...string) propKind {
	return func(v string) error {
		if !slices.Contains(vals, v) {
			return fmt.Errorf("%q is not one of %s", v, strings.Join(vals, ", "))
		}
		return nil
	}
}

var truncateMode = regexp.MustCompile(`^truncate\(([1-9][0-9]{0,5})\)$`)

func metricsMode(v string) error {
	if v == "none" || v == "counts" || v == "full" || truncateMode.MatchString(v) {
		return nil
	}
	return fmt.Errorf("%q is not none, counts, full or truncate(N)", v)
}

// The Iceberg table properties (as Iceberg's configuration page documents
// them) a client may set at create, each with its type. Each is either
// applied by the gateway's writer and commit (Parquet tuning, metrics
// modes, metadata retention, gc.enabled) or kept in the metadata for the
// engines and maintenance jobs that read it (distribution and delete
// modes, commit retries, snapshot expiry). Not here, so refused: the
// properties that would move data or metadata away from where the
// gateway checks it lies (write.data.path, write.metadata.path,
// write.object-storage.*, write.location-provider.impl), formats and
// features the gateway's writer does not produce (ORC, Avro data files,
// bloom filters, write-audit-publish, client-side encryption), the file size, which
// is the catalog's target-file-size, and the reserved properties.
var tableProps = map[string]propKind{
	table.WriteFormatDefaultKey:                           oneOf("parquet"),
	"write.delete.format.default":                         oneOf("parquet"),
	table.ParquetCompressionKey:                           oneOf("zstd", "snappy", "gzip", "uncompressed", "brotli", "lz4"),
	table.ParquetCompressionLevelKey:                      intAtLeast(0),
	table.ParquetRowGroupSizeBytesKey:                     intAtLeast(1),
	table.ParquetRowGroupLimitKey:                         intAtLeast(1),
	table.ParquetPageSizeBytesKey:                         intAtLeast(1),
	table.ParquetPageRowLimitKey:                          intAtLeast(1),
	table.ParquetDictSizeBytesKey:                         intAtLeast(1),
	table.DefaultWriteMetricsModeKey:                      metricsMode,
	table.MetadataCompressionKey:                          oneOf("none", "gzip"),
	table.MetadataDeleteAfterCommitEnabledKey:             boolean,
	table.MetadataPreviousVersionsMaxKey:                  intAtLeast(1),
	"write.metadata.metrics.max-inferred-column-defaults": intAtLeast(0),
	table.WritePartitionSummaryLimitKey:                   intAtLeast(0),
	"write.distribution-mode":                             oneOf("none", "hash", "range"),
	"write.delete.distribution-mode":                      oneOf("none", "hash", "range"),
	"write.update.distribution-mode":                      oneOf("none", "hash", "range"),
	"write.merge.distribution-mode":                       oneOf("none", "hash", "range"),
	table.WriteDeleteModeKey:                              oneOf(table.WriteModeCopyOnWrite, table.WriteModeMergeOnRead),
	"write.update.mode":                                   oneOf(table.WriteModeCopyOnWrite, table.WriteModeMergeOnRead),
	"write.merge.mode":                                    oneOf(table.WriteModeCopyOnWrite, table.WriteModeMergeOnRead),
	"write.delete.isolation-level":                        oneOf("serializable", "snapshot"),
	"write.update.isolation-level":                        oneOf("serializable", "snapshot"),
	"write.merge.isolation-level":                         oneOf("serializable", "snapshot"),
	"write.spark.fanout.enabled":                          boolean,
	PropTruncateNanos:                                     boolean,
	PropKMSKeyID:                                          nonEmpty,
	"write.spark.accept-any-schema":                       boolean,
	table.CommitNumRetriesKey:                             intAtLeast(0),
	table.CommitMinRetryWaitMsKey:                         intAtLeast(0),
	table.CommitMaxRetryWaitMsKey:                         intAtLeast(0),
	table.CommitTotalRetryTimeoutMsKey:                    intAtLeast(0),
	"commit.status-check.num-retries":                     intAtLeast(0),
	"commit.status-check.min-wait-ms":                     intAtLeast(0),
	"commit.status-check.max-wait-ms":                     intAtLeast(0),
	"commit.status-check.total-timeout-ms":                intAtLeast(0),
	table.ManifestTargetSizeBytesKey:                      intAtLeast(1),
	table.ManifestMinMergeCountKey:                        intAtLeast(1),
	table.ManifestMergeEnabledKey:                         boolean,
	table.GCEnabledKey:                                    boolean,
	table.MinSnapshotsToKeepKey:                           intAtLeast(1),
	table.MaxSnapshotAgeMsKey:                             intAtLeast(1),
	table.MaxRefAgeMsKey:                                  intAtLeast(1),
	table.ReadSplitTargetSizeKey:                          intAtLeast(1),
	table.ReadSplitPlanningLookbackKey:                    intAtLeast(1),
	table.ReadSplitOpenFileCostKey:                        intAtLeast(0),
	"read.split.metadata-target-size":                     intAtLeast(1),
	"read.parquet.vectorization.enabled":                  boolean,
	"read.parquet.vectorization.batch-size":               intAtLeast(1),
}

// refusedProp says why an Iceberg table property the gateway cannot
// honour is refused ("" for any other name).
func refusedProp(k string) string {
	for _, r := range []struct{ prefix, why string }{
		{"write.data.path", "would put data files where the gateway does not check them"},
		{"write.metadata.path", "would put metadata where the gateway does not check it"},
		{"write.object-storage.", "the gateway writes data files under the table's data directory"},
		{"write.location-provider.", "the gateway writes data files under the table's data directory"},
		{"write.target-file-size-bytes", "the gateway's files roll at the catalog's " + PropTargetFileSize},
		{"write.parquet.bloom-filter-", "the gateway writes no Parquet bloom filters"},
		{"write.orc.", "the gateway writes Parquet data files only"},
		{"write.avro.", "the gateway writes Parquet data files only"},
		{"write.wap.", "the gateway publishes its commits; it does not stage them for write-audit-publish"},
		{"encryption.", "client-side encryption (Parquet modular encryption, encrypted manifests) is not written by the gateway; " + PropKMSKeyID + " asks for S3 SSE-KMS"},
	} {
		if strings.HasPrefix(k, r.prefix) && k != PropKMSKeyID {
			return r.why
		}
	}
	if slices.Contains(table.ReservedProperties[:], k) {
		return "a reserved property, kept by the catalog"
	}
	return ""
}

// formatVersions are the format versions a created table may have. A v3
// table keeps nanosecond timestamps (schema.go) and has row lineage: each
// commit attempt numbers its files from the table's next-row-id
// (lineage.go).
var formatVersions = []string{"1", "2", "3"}

// createdVersion is the format version a create with these options gives
// the table: the option's, else iceberg-go's default (2). A bad value is
// parseTableOptions' to refuse; here it counts as the default.
func createdVersion(opts map[string]string) int {
	if v, err := strconv.Atoi(strings.TrimSpace(opts[OptFormatVersion])); err == nil && v > 0 {
		return v
	}
	return table.DefaultFormatVersion
}

// parseTableOptions validates a create's options against the schema sc
// the table gets (with the field ids icebergSchema gave it).
func parseTableOptions(t catalogs.TableIdent, sc *ice.Schema, opts map[string]string) (tableOptions, error) {
	out := tableOptions{order: table.UnsortedSortOrder, props: ice.Properties{}}
	bad := func(k, format string, args ...any) error {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: option %q: %s", t, k, fmt.Sprintf(format, args...))
	}
	// Sorted, so that of two bad options the same one is named each time.
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := strings.TrimSpace(opts[k])
		switch {
		case k == OptPartition:
			spec, err := parsePartition(sc, v)
			if err != nil {
				return out, bad(k, "%v", err)
			}
			out.spec = spec
		case k == OptSort:
			order, err := parseSort(sc, v)
			if err != nil {
				return out, bad(k, "%v", err)
			}
			out.order = order
		case k == OptFormatVersion:
			if !slices.Contains(formatVersions, v) {
				return out, bad(k, "%q is not a format version the gateway writes (%s)", v, strings.Join(formatVersions, ", "))
			}
			out.props[k] = v
		case strings.HasPrefix(k, table.MetricsModeColumnConfPrefix+"."):
			col := strings.TrimPrefix(k, table.MetricsModeColumnConfPrefix+".")
			if _, ok := sc.FindFieldByName(col); !ok {
				return out, bad(k, "column %q does not exist", col)
			}
			if err := metricsMode(v); err != nil {
				return out, bad(k, "%v", err)
			}
			out.props[k] = v
		default:
			if why := refusedProp(k); why != "" {
				return out, bad(k, "%s", why)
			}
			check, ok := tableProps[k]
			if !ok {
				return out, bad(k, "not an Iceberg table property the gateway takes (options: %s, %s, %s, write.*, commit.*, ...; see docs/configuration.md)", OptPartition, OptSort, OptFormatVersion)
			}
			if err := check(v); err != nil {
				return out, bad(k, "%v", err)
			}
			out.props[k] = v
		}
	}
	if lv, ok := out.props[table.ParquetCompressionLevelKey]; ok {
		codec := out.props.Get(table.ParquetCompressionKey, table.ParquetCompressionDefault)
		n, _ := strconv.Atoi(lv)
		if top, ok := compressionLevels[codec]; !ok || n > top {
			return out, bad(table.ParquetCompressionLevelKey, "%q is not a level of codec %s (%s)", lv, codec, levelRanges)
		}
	}
	return out, nil
}

// compressionLevels are the highest level of each Parquet codec that has
// levels; the others take none.
var compressionLevels = map[string]int{"zstd": 22, "gzip": 9, "brotli": 11}

const levelRanges = "zstd 0-22, gzip 0-9, brotli 0-11, no level for the others"

// splitTop splits s at the commas outside parentheses.
func splitTop(s string) ([]string, error) {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced parentheses in %q", s)
			}
		case ',':
			if depth == 0 {
				parts = append(parts, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced parentheses in %q", s)
	}
	parts = append(parts, strings.TrimSpace(s[start:]))
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("empty term in %q", s)
		}
	}
	return parts, nil
}

// call splits "fn(a, b)" into fn and its arguments; a term without
// parentheses is a bare column.
func call(term string) (fn string, args []string, err error) {
	open := strings.IndexByte(term, '(')
	if open < 0 {
		return "", []string{term}, nil
	}
	if !strings.HasSuffix(term, ")") {
		return "", nil, fmt.Errorf("%q is not a transform of the form fn(args)", term)
	}
	fn = strings.ToLower(strings.TrimSpace(term[:open]))
	for _, a := range strings.Split(term[open+1:len(term)-1], ",") {
		args = append(args, strings.TrimSpace(a))
	}
	return fn, args, nil
}

// column finds a top-level primitive column by name.
func column(sc *ice.Schema, name string) (ice.NestedField, error) {
	f, ok := sc.FindFieldByName(name)
	if !ok || name == "" {
		return f, fmt.Errorf("column %q does not exist", name)
	}
	if _, ok := f.Type.(ice.PrimitiveType); !ok {
		return f, fmt.Errorf("column %q is of type %s, not a primitive type", name, f.Type)
	}
	return f, nil
}

// timeTransforms are the time transforms, by their Spark and pyiceberg
// names, with the suffix pyiceberg gives the partition field.
var timeTransforms = map[string]struct {
	tr     ice.Transform
	suffix string
}{
	"year": {ice.YearTransform{}, "year"}, "years": {ice.YearTransform{}, "year"},
	"month": {ice.MonthTransform{}, "month"}, "months": {ice.MonthTransform{}, "month"},
	"day": {ice.DayTransform{}, "day"}, "days": {ice.DayTransform{}, "day"}, "date": {ice.DayTransform{}, "day"},
	"hour": {ice.HourTransform{}, "hour"}, "hours": {ice.HourTransform{}, "hour"}, "date_hour": {ice.HourTransform{}, "hour"},
}

// parsePartition parses the partition option into a spec over sc. The
// partition fields are named as pyiceberg and Spark name them (id,
// id_bucket, s_trunc, ts_day...).
func parsePartition(sc *ice.Schema, v string) (*ice.PartitionSpec, error) {
	terms, err := splitTop(v)
	if err != nil {
		return nil, err
	}
	var fields []ice.PartitionField
	seen := map[string]bool{}
	for i, term := range terms {
		fn, args, err := call(term)
		if err != nil {
			return nil, err
		}
		var (
			tr     ice.Transform
			suffix string
			col    string
		)
		width := func(what string) (int, error) {
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 || n > 1<<20 {
				return 0, fmt.Errorf("%s: %q is not a %s from 1 to %d", term, args[0], what, 1<<20)
			}
			return n, nil
		}
		switch tt, isTime := timeTransforms[fn]; {
		case fn == "" || fn == "identity":
			if len(args) != 1 {
				return nil, fmt.Errorf("%s: identity takes one column", term)
			}
			tr, col = ice.IdentityTransform{}, args[0]
		case fn == "bucket" || fn == "truncate":
			if len(args) != 2 {
				return nil, fmt.Errorf("%s: %s takes a width and a column, as %s(16, id)", term, fn, fn)
			}
			n, err := width(map[string]string{"bucket": "bucket count", "truncate": "width"}[fn])
			if err != nil {
				return nil, err
			}
			col = args[1]
			if fn == "bucket" {
				tr, suffix = ice.BucketTransform{NumBuckets: n}, "_bucket"
			} else {
				tr, suffix = ice.TruncateTransform{Width: n}, "_trunc"
			}
		case isTime:
			if len(args) != 1 {
				return nil, fmt.Errorf("%s: %s takes one column", term, fn)
			}
			tr, suffix, col = tt.tr, "_"+tt.suffix, args[0]
		default:
			return nil, fmt.Errorf("%s: unknown transform %q (identity, bucket, truncate, year, month, day, hour)", term, fn)
		}
		f, err := column(sc, col)
		if err != nil {
			return nil, err
		}
		if !tr.CanTransform(f.Type) {
			return nil, fmt.Errorf("%s: transform %s cannot apply to column %q of type %s", term, tr, col, f.Type)
		}
		name := col + suffix
		if seen[name] {
			return nil, fmt.Errorf("%s: partition field %q appears twice", term, name)
		}
		seen[name] = true
		fields = append(fields, ice.PartitionField{SourceIDs: []int{f.ID}, FieldID: 1000 + i, Name: name, Transform: tr})
	}
	spec := ice.NewPartitionSpec(fields...)
	return &spec, nil
}

// parseSort parses the sort option: columns, each with an optional
// direction (asc by default) and null order (nulls first for asc and
// nulls last for desc by default, as Spark and Iceberg Java).
func parseSort(sc *ice.Schema, v string) (table.SortOrder, error) {
	terms, err := splitTop(v)
	if err != nil {
		return table.UnsortedSortOrder, err
	}
	var fields []table.SortField
	seen := map[int]bool{}
	for _, term := range terms {
		words := strings.Fields(term)
		f, err := column(sc, words[0])
		if err != nil {
			return table.UnsortedSortOrder, err
		}
		if seen[f.ID] {
			return table.UnsortedSortOrder, fmt.Errorf("column %q appears twice", words[0])
		}
		seen[f.ID] = true
		dir, rest := table.SortASC, words[1:]
		if len(rest) > 0 {
			switch strings.ToLower(rest[0]) {
			case "asc":
				rest = rest[1:]
			case "desc":
				dir, rest = table.SortDESC, rest[1:]
			}
		}
		nulls := table.NullsFirst
		if dir == table.SortDESC {
			nulls = table.NullsLast
		}
		switch strings.ToLower(strings.Join(rest, " ")) {
		case "":
		case "nulls first":
			nulls = table.NullsFirst
		case "nulls last":
			nulls = table.NullsLast
		default:
			return table.UnsortedSortOrder, fmt.Errorf("%q: expected column [asc|desc] [nulls first|nulls last]", term)
		}
		fields = append(fields, table.SortField{SourceIDs: []int{f.ID}, Transform: ice.IdentityTransform{}, Direction: dir, NullOrder: nulls})
	}
	order, err := table.NewSortOrder(table.InitialSortOrderID, fields)
	if err != nil {
		return table.UnsortedSortOrder, err
	}
	return order, nil
}
