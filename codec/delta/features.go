package delta

import (
	"fmt"
	"slices"
	"sort"
)

// Table features (PROTOCOL.md "Table Features", "Reader/Writer Version Requirements" and
// the appendix "Valid Feature Names in Table Features").

// Feature names the protocol defines.
const (
	FeatureAppendOnly          = "appendOnly"
	FeatureInvariants          = "invariants"
	FeatureCheckConstraints    = "checkConstraints"
	FeatureGeneratedColumns    = "generatedColumns"
	FeatureAllowColumnDefaults = "allowColumnDefaults"
	FeatureChangeDataFeed      = "changeDataFeed"
	FeatureColumnMapping       = "columnMapping"
	FeatureIdentityColumns     = "identityColumns"
	FeatureDeletionVectors     = "deletionVectors"
	FeatureRowTracking         = "rowTracking"
	FeatureTimestampNtz        = "timestampNtz"
	FeatureDomainMetadata      = "domainMetadata"
	FeatureV2Checkpoint        = "v2Checkpoint"
	FeatureCatalogManaged      = "catalogManaged"
	FeatureIcebergCompatV1     = "icebergCompatV1"
	FeatureIcebergCompatV2     = "icebergCompatV2"
	FeatureClustering          = "clustering"
	FeatureVacuumProtocolCheck = "vacuumProtocolCheck"
	FeatureInCommitTimestamp   = "inCommitTimestamp"
	FeatureTypeWidening        = "typeWidening"
	FeatureVariantType         = "variantType"
)

// legacyWriter lists what each legacy writer version implies; each row inherits the ones
// before it.
var legacyWriter = [][]string{
	2: {FeatureAppendOnly, FeatureInvariants},
	3: {FeatureCheckConstraints},
	4: {FeatureChangeDataFeed, FeatureGeneratedColumns},
	5: {FeatureColumnMapping},
	6: {FeatureIdentityColumns},
}

// RequiredReaderFeatures is what a reader must implement to read a table on this protocol:
// the listed readerFeatures on reader version 3, columnMapping on version 2, none on 1.
func (p *Protocol) RequiredReaderFeatures() []string {
	switch {
	case p.MinReaderVersion >= 3:
		return sortedUnique(p.ReaderFeatures)
	case p.MinReaderVersion == 2:
		return []string{FeatureColumnMapping}
	}
	return nil
}

// RequiredWriterFeatures is what a writer must implement to write the table: the listed
// writerFeatures on writer version 7, what the legacy version implies on 2..6, plus every
// reader feature (a writer reads the table first).
func (p *Protocol) RequiredWriterFeatures() []string {
	var out []string
	if p.MinWriterVersion >= 7 {
		out = append(out, p.WriterFeatures...)
	} else {
		for v := 2; v <= int(p.MinWriterVersion) && v < len(legacyWriter); v++ {
			out = append(out, legacyWriter[v]...)
		}
	}
	out = append(out, p.RequiredReaderFeatures()...)
	return sortedUnique(out)
}

// Supports says whether the table's protocol lists (or, on legacy versions, implies) the
// feature. Supported is not active: appendOnly, for one, is active only when
// delta.appendOnly is true as well.
func (p *Protocol) Supports(feature string) bool {
	return slices.Contains(p.RequiredWriterFeatures(), feature)
}

// readSupported are the features this implementation can read correctly.
var readSupported = map[string]bool{
	FeatureAppendOnly: true, FeatureInvariants: true, FeatureCheckConstraints: true,
	FeatureGeneratedColumns: true, FeatureAllowColumnDefaults: true, FeatureChangeDataFeed: true,
	FeatureIdentityColumns: true, FeatureColumnMapping: true, FeatureDeletionVectors: true,
	FeatureRowTracking: true, FeatureTimestampNtz: true, FeatureDomainMetadata: true,
	FeatureV2Checkpoint: true, FeatureIcebergCompatV1: true, FeatureIcebergCompatV2: true,
	FeatureClustering: true, FeatureVacuumProtocolCheck: true, FeatureInCommitTimestamp: true,
}

// writeSupported are the features this implementation writes as the protocol requires
// (issue 23's list). appendOnly, invariants and checkConstraints are supported in the
// sense the protocol allows: the backend refuses writes that would break them;
// deletionVectors by never emitting one and honouring
// those present; v2Checkpoint by reading every checkpoint form and writing classic ones.
var writeSupported = map[string]bool{
	FeatureAppendOnly: true, FeatureInvariants: true, FeatureCheckConstraints: true,
	FeatureTimestampNtz: true, FeatureColumnMapping: true, FeatureInCommitTimestamp: true,
	FeatureDomainMetadata: true, FeatureVacuumProtocolCheck: true, FeatureV2Checkpoint: true,
	FeatureDeletionVectors: true, FeatureRowTracking: true,
}

// FeatureError names the features a table needs that this implementation lacks. The
// backend maps it to FailedPrecondition.
type FeatureError struct {
	Op       string   // "read" or "write"
	Features []string // sorted
	Protocol Protocol
}

func (e *FeatureError) Error() string {
	return fmt.Sprintf("delta table needs %s feature(s) %v this implementation does not support (protocol reader %d, writer %d)",
		e.Op, e.Features, e.Protocol.MinReaderVersion, e.Protocol.MinWriterVersion)
}

// UnsupportedForRead returns the reader features of p this implementation lacks.
func UnsupportedForRead(p *Protocol) []string {
	var out []string
	for _, f := range p.RequiredReaderFeatures() {
		if !readSupported[f] {
			out = append(out, f)
		}
	}
	return out
}

// UnsupportedForWrite returns the writer (and reader) features of p this implementation
// lacks for writing.
func UnsupportedForWrite(p *Protocol) []string {
	var out []string
	for _, f := range p.RequiredWriterFeatures() {
		if !writeSupported[f] {
			out = append(out, f)
		}
	}
	return out
}

// CheckRead returns a *FeatureError when p needs reader features this implementation
// lacks, or a reader version above 3.
func CheckRead(p *Protocol) error {
	if p.MinReaderVersion > 3 {
		return &FeatureError{Op: "read", Features: []string{fmt.Sprintf("readerVersion%d", p.MinReaderVersion)}, Protocol: *p}
	}
	if u := UnsupportedForRead(p); len(u) > 0 {
		return &FeatureError{Op: "read", Features: u, Protocol: *p}
	}
	return nil
}

// CheckWrite returns a *FeatureError when p needs writer features this implementation
// lacks, or a writer version above 7.
func CheckWrite(p *Protocol) error {
	if p.MinWriterVersion > 7 || p.MinReaderVersion > 3 {
		return &FeatureError{Op: "write", Features: []string{fmt.Sprintf("writerVersion%d", p.MinWriterVersion)}, Protocol: *p}
	}
	if u := UnsupportedForWrite(p); len(u) > 0 {
		return &FeatureError{Op: "write", Features: u, Protocol: *p}
	}
	return nil
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return slices.Compact(out)
}
