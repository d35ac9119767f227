package delta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Row tracking (PROTOCOL.md "Row Tracking").
const (
	PropEnableRowTracking = "delta.enableRowTracking"
	// PropRowTrackingSuspended, true, stops writers assigning row ids.
	PropRowTrackingSuspended = "delta.rowTrackingSuspended"
	// The hidden columns materialized row ids and commit versions would go in (never
	// written by this package's users: their values would all be null).
	PropMaterializedRowIDColumn            = "delta.rowTracking.materializedRowIdColumnName"
	PropMaterializedRowCommitVersionColumn = "delta.rowTracking.materializedRowCommitVersionColumnName"
	// RowTrackingDomain is the metadata domain holding the row id high-water mark.
	RowTrackingDomain = "delta.rowTracking"
)

// AssignsRowIDs reports whether a writer must assign row ids and commit versions: the
// protocol supports rowTracking and delta.rowTrackingSuspended is not true.
func AssignsRowIDs(p *Protocol, m *Metadata) bool {
	return slices.Contains(p.WriterFeatures, FeatureRowTracking) &&
		!strings.EqualFold(m.Configuration[PropRowTrackingSuspended], "true")
}

// RowIDHighWaterMark is the highest fresh row id assigned so far in s (the
// delta.rowTracking domain's rowIdHighWaterMark), -1 when none was.
func RowIDHighWaterMark(s *Snapshot) (int64, error) {
	d, ok := s.Domains[RowTrackingDomain]
	if !ok {
		return -1, nil
	}
	var c struct {
		HWM *int64 `json:"rowIdHighWaterMark"`
	}
	if err := json.Unmarshal([]byte(d.Configuration), &c); err != nil || c.HWM == nil {
		return 0, fmt.Errorf("%w: domain %s: configuration %q has no rowIdHighWaterMark", ErrMalformed, RowTrackingDomain, d.Configuration)
	}
	return *c.HWM, nil
}

// RowTrackingDomainMetadata is the domainMetadata action recording hwm as the high-water
// mark.
func RowTrackingDomainMetadata(hwm int64) *DomainMetadata {
	return &DomainMetadata{Domain: RowTrackingDomain, Configuration: fmt.Sprintf(`{"rowIdHighWaterMark":%d}`, hwm)}
}
