package delta

import (
	"errors"
	"reflect"
	"testing"
)

func TestFeatureChecks(t *testing.T) {
	cases := []struct {
		name          string
		p             Protocol
		reader        []string
		writer        []string
		badRead       []string
		badWrite      []string
		supportsAppnd bool
	}{
		{name: "1,2 legacy", p: Protocol{MinReaderVersion: 1, MinWriterVersion: 2},
			writer: []string{"appendOnly", "invariants"}, supportsAppnd: true},
		{name: "1,4 implies CDF and generated columns", p: Protocol{MinReaderVersion: 1, MinWriterVersion: 4},
			writer:   []string{"appendOnly", "changeDataFeed", "checkConstraints", "generatedColumns", "invariants"},
			badWrite: []string{"changeDataFeed", "generatedColumns"}, supportsAppnd: true},
		{name: "2,5 column mapping", p: Protocol{MinReaderVersion: 2, MinWriterVersion: 5},
			reader:   []string{"columnMapping"},
			writer:   []string{"appendOnly", "changeDataFeed", "checkConstraints", "columnMapping", "generatedColumns", "invariants"},
			badWrite: []string{"changeDataFeed", "generatedColumns"}, supportsAppnd: true},
		{name: "3,7 supported features",
			p: Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
				ReaderFeatures: []string{"deletionVectors", "v2Checkpoint", "vacuumProtocolCheck", "timestampNtz", "columnMapping"},
				WriterFeatures: []string{"deletionVectors", "v2Checkpoint", "vacuumProtocolCheck", "timestampNtz", "columnMapping", "rowTracking", "domainMetadata", "inCommitTimestamp"}},
			reader: []string{"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"},
			writer: []string{"columnMapping", "deletionVectors", "domainMetadata", "inCommitTimestamp", "rowTracking", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"}},
		{name: "3,7 what deltalake writes for deletion vectors (variantType)",
			p: Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
				ReaderFeatures: []string{"variantType", "deletionVectors"},
				WriterFeatures: []string{"invariants", "deletionVectors", "variantType", "appendOnly"}},
			reader: []string{"deletionVectors", "variantType"}, writer: []string{"appendOnly", "deletionVectors", "invariants", "variantType"},
			badRead: []string{"variantType"}, badWrite: []string{"variantType"}, supportsAppnd: true},
		{name: "1,7 writer-only features never stop a read",
			p:      Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"identityColumns", "icebergCompatV2"}},
			writer: []string{"icebergCompatV2", "identityColumns"}, badWrite: []string{"icebergCompatV2", "identityColumns"}},
		{name: "unknown reader feature",
			p:      Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"someFuture"}, WriterFeatures: []string{"someFuture"}},
			reader: []string{"someFuture"}, writer: []string{"someFuture"}, badRead: []string{"someFuture"}, badWrite: []string{"someFuture"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.p.RequiredReaderFeatures(); !reflect.DeepEqual(got, c.reader) && !(len(got) == 0 && len(c.reader) == 0) {
				t.Errorf("reader features %v, want %v", got, c.reader)
			}
			if got := c.p.RequiredWriterFeatures(); !reflect.DeepEqual(got, c.writer) {
				t.Errorf("writer features %v, want %v", got, c.writer)
			}
			checkFeatureErr(t, "read", CheckRead(&c.p), c.badRead)
			checkFeatureErr(t, "write", CheckWrite(&c.p), c.badWrite)
			if c.p.Supports(FeatureAppendOnly) != c.supportsAppnd {
				t.Errorf("supports appendOnly = %v", !c.supportsAppnd)
			}
		})
	}
	if err := CheckRead(&Protocol{MinReaderVersion: 4, MinWriterVersion: 7, ReaderFeatures: []string{}, WriterFeatures: []string{}}); err == nil {
		t.Error("reader version 4 accepted")
	}
	if err := CheckWrite(&Protocol{MinReaderVersion: 1, MinWriterVersion: 8}); err == nil {
		t.Error("writer version 8 accepted")
	}
}

func checkFeatureErr(t *testing.T, op string, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Errorf("%s: %v", op, err)
		}
		return
	}
	var fe *FeatureError
	if !errors.As(err, &fe) || !reflect.DeepEqual(fe.Features, want) || fe.Op != op {
		t.Errorf("%s: %v, want a FeatureError naming %v", op, err, want)
	}
}

func TestParseInterval(t *testing.T) {
	for in, want := range map[string]string{
		"interval 1 week": "168h0m0s", "interval 7 days": "168h0m0s", "interval 30 days": "720h0m0s",
		"interval 2 hours": "2h0m0s", "INTERVAL 1 DAY": "24h0m0s", "1 minute": "1m0s",
	} {
		d, err := ParseInterval(in)
		if err != nil || d.String() != want {
			t.Errorf("%q: %v %v, want %s", in, d, err, want)
		}
	}
	for _, in := range []string{"", "interval", "interval x days", "interval 1 fortnight", "interval -1 days", "interval 999999999999999 weeks"} {
		if _, err := ParseInterval(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
