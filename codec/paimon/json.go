package paimon

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// Document is the JSON model of a payload: what `flightgw messages inspect` prints, what
// `encode` reads, and what the Java fixture generator writes beside each golden payload.
// Rows are carried as arity and hex bytes; when a row also names its field types, the
// typed values are shown beside them. Binary fields are base64.
type Document struct {
	Description string        `json:"description,omitempty"`
	Version     int           `json:"version"`
	Messages    []MessageJSON `json:"messages"`
}

// MessageJSON is one CommitMessage.
type MessageJSON struct {
	Partition        RowJSON              `json:"partition"`
	Bucket           int32                `json:"bucket"`
	TotalBuckets     *int32               `json:"totalBuckets"`
	DataIncrement    DataIncrementJSON    `json:"dataIncrement"`
	CompactIncrement CompactIncrementJSON `json:"compactIncrement"`
}

// DataIncrementJSON is a DataIncrement.
type DataIncrementJSON struct {
	NewFiles          []DataFileJSON  `json:"newFiles"`
	DeletedFiles      []DataFileJSON  `json:"deletedFiles"`
	ChangelogFiles    []DataFileJSON  `json:"changelogFiles"`
	NewIndexFiles     []IndexFileJSON `json:"newIndexFiles"`
	DeletedIndexFiles []IndexFileJSON `json:"deletedIndexFiles"`
}

// CompactIncrementJSON is a CompactIncrement.
type CompactIncrementJSON struct {
	CompactBefore     []DataFileJSON  `json:"compactBefore"`
	CompactAfter      []DataFileJSON  `json:"compactAfter"`
	ChangelogFiles    []DataFileJSON  `json:"changelogFiles"`
	NewIndexFiles     []IndexFileJSON `json:"newIndexFiles"`
	DeletedIndexFiles []IndexFileJSON `json:"deletedIndexFiles"`
}

// RowJSON is a BinaryRow: Hex is the row's bytes; Types (optional) name its field types
// and Values then holds the fields (see ValueJSON). On input, Hex wins when present;
// otherwise the row is built from Types and Values.
type RowJSON struct {
	Arity  int      `json:"arity"`
	Hex    string   `json:"hex,omitempty"`
	Types  []string `json:"types,omitempty"`
	Values []any    `json:"values,omitempty"`
}

// StatsJSON is a SimpleStats.
type StatsJSON struct {
	MinValues  RowJSON  `json:"minValues"`
	MaxValues  RowJSON  `json:"maxValues"`
	NullCounts []*int64 `json:"nullCounts"`
}

// DataFileJSON is a DataFileMeta.
type DataFileJSON struct {
	FileName          string    `json:"fileName"`
	FileSize          int64     `json:"fileSize"`
	RowCount          int64     `json:"rowCount"`
	MinKey            RowJSON   `json:"minKey"`
	MaxKey            RowJSON   `json:"maxKey"`
	KeyStats          StatsJSON `json:"keyStats"`
	ValueStats        StatsJSON `json:"valueStats"`
	MinSequenceNumber int64     `json:"minSequenceNumber"`
	MaxSequenceNumber int64     `json:"maxSequenceNumber"`
	SchemaID          int64     `json:"schemaId"`
	Level             int32     `json:"level"`
	ExtraFiles        []string  `json:"extraFiles"`
	CreationTime      *int64    `json:"creationTime"`
	DeleteRowCount    *int64    `json:"deleteRowCount"`
	EmbeddedIndex     []byte    `json:"embeddedIndex"`
	FileSource        *int8     `json:"fileSource"`
	ValueStatsCols    []string  `json:"valueStatsCols"`
	ExternalPath      *string   `json:"externalPath"`
	FirstRowID        *int64    `json:"firstRowId"`
	WriteCols         []string  `json:"writeCols"`
}

// IndexFileJSON is an IndexFileMeta.
type IndexFileJSON struct {
	IndexType    string               `json:"indexType"`
	FileName     string               `json:"fileName"`
	FileSize     int64                `json:"fileSize"`
	RowCount     int64                `json:"rowCount"`
	DVRanges     []DeletionVectorJSON `json:"dvRanges"`
	ExternalPath *string              `json:"externalPath"`
	GlobalIndex  *GlobalIndexJSON     `json:"globalIndex"`
}

// DeletionVectorJSON is a DeletionVectorMeta.
type DeletionVectorJSON struct {
	DataFileName string `json:"dataFileName"`
	Offset       int32  `json:"offset"`
	Length       int32  `json:"length"`
	Cardinality  *int64 `json:"cardinality"`
}

// GlobalIndexJSON is a GlobalIndexMeta.
type GlobalIndexJSON struct {
	RowRangeStart int64   `json:"rowRangeStart"`
	RowRangeEnd   int64   `json:"rowRangeEnd"`
	IndexFieldID  int32   `json:"indexFieldId"`
	ExtraFieldIDs []int32 `json:"extraFieldIds"`
	IndexMeta     []byte  `json:"indexMeta"`
	SourceMeta    []byte  `json:"sourceMeta"`
}

// ReadDocument parses a Document; numbers in row values keep their exact digits.
func ReadDocument(r io.Reader) (*Document, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var d Document
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("paimon: json: %w", err)
	}
	return &d, nil
}

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// ToDocument describes messages as JSON, with rows as hex.
func ToDocument(version int, msgs []CommitMessage) *Document {
	d := &Document{Version: version, Messages: make([]MessageJSON, len(msgs))}
	for i, m := range msgs {
		d.Messages[i] = MessageJSON{
			Partition:    rowJSON(m.Partition),
			Bucket:       m.Bucket,
			TotalBuckets: m.TotalBuckets,
			DataIncrement: DataIncrementJSON{
				NewFiles: filesJSON(m.Data.NewFiles), DeletedFiles: filesJSON(m.Data.DeletedFiles),
				ChangelogFiles: filesJSON(m.Data.ChangelogFiles), NewIndexFiles: indexesJSON(m.Data.NewIndexFiles),
				DeletedIndexFiles: indexesJSON(m.Data.DeletedIndexFiles),
			},
			CompactIncrement: CompactIncrementJSON{
				CompactBefore: filesJSON(m.Compact.CompactBefore), CompactAfter: filesJSON(m.Compact.CompactAfter),
				ChangelogFiles: filesJSON(m.Compact.ChangelogFiles), NewIndexFiles: indexesJSON(m.Compact.NewIndexFiles),
				DeletedIndexFiles: indexesJSON(m.Compact.DeletedIndexFiles),
			},
		}
	}
	return d
}

func rowJSON(r Row) RowJSON { return RowJSON{Arity: r.arity, Hex: hex.EncodeToString(r.data)} }

func statsJSON(s Stats) StatsJSON {
	return StatsJSON{MinValues: rowJSON(s.MinValues), MaxValues: rowJSON(s.MaxValues), NullCounts: s.NullCounts}
}

func filesJSON(fs []DataFile) []DataFileJSON {
	out := make([]DataFileJSON, len(fs))
	for i, f := range fs {
		var src *int8
		if f.FileSource != nil {
			v := int8(*f.FileSource)
			src = &v
		}
		extra := f.ExtraFiles
		if extra == nil {
			extra = []string{}
		}
		out[i] = DataFileJSON{
			FileName: f.FileName, FileSize: f.FileSize, RowCount: f.RowCount,
			MinKey: rowJSON(f.MinKey), MaxKey: rowJSON(f.MaxKey),
			KeyStats: statsJSON(f.KeyStats), ValueStats: statsJSON(f.ValueStats),
			MinSequenceNumber: f.MinSequenceNumber, MaxSequenceNumber: f.MaxSequenceNumber,
			SchemaID: f.SchemaID, Level: f.Level, ExtraFiles: extra, CreationTime: f.CreationTime,
			DeleteRowCount: f.DeleteRowCount, EmbeddedIndex: f.EmbeddedIndex, FileSource: src,
			ValueStatsCols: f.ValueStatsCols, ExternalPath: f.ExternalPath, FirstRowID: f.FirstRowID,
			WriteCols: f.WriteCols,
		}
	}
	return out
}

func indexesJSON(fs []IndexFile) []IndexFileJSON {
	out := make([]IndexFileJSON, len(fs))
	for i, f := range fs {
		j := IndexFileJSON{IndexType: f.IndexType, FileName: f.FileName, FileSize: f.FileSize,
			RowCount: f.RowCount, ExternalPath: f.ExternalPath}
		if f.DVRanges != nil {
			j.DVRanges = make([]DeletionVectorJSON, len(f.DVRanges))
			for k, dv := range f.DVRanges {
				j.DVRanges[k] = DeletionVectorJSON(dv)
			}
		}
		if g := f.GlobalIndex; g != nil {
			gj := GlobalIndexJSON(*g)
			j.GlobalIndex = &gj
		}
		out[i] = j
	}
	return out
}

// Rows lists pointers to every row of the document in a fixed order (partition, then
// for each data file minKey, maxKey, key stats min and max, value stats min and max), so
// that the types of one document's rows can be laid on another's.
func (d *Document) Rows() []*RowJSON {
	var out []*RowJSON
	files := func(fs []DataFileJSON) {
		for i := range fs {
			f := &fs[i]
			out = append(out, &f.MinKey, &f.MaxKey, &f.KeyStats.MinValues, &f.KeyStats.MaxValues,
				&f.ValueStats.MinValues, &f.ValueStats.MaxValues)
		}
	}
	for i := range d.Messages {
		m := &d.Messages[i]
		out = append(out, &m.Partition)
		files(m.DataIncrement.NewFiles)
		files(m.DataIncrement.DeletedFiles)
		files(m.DataIncrement.ChangelogFiles)
		files(m.CompactIncrement.CompactBefore)
		files(m.CompactIncrement.CompactAfter)
		files(m.CompactIncrement.ChangelogFiles)
	}
	return out
}

// Annotate decodes the row's fields with the given types into Values.
func (r *RowJSON) Annotate(types []string) error {
	if types == nil {
		return nil
	}
	ts, err := parseTypes(types)
	if err != nil {
		return err
	}
	row, err := r.row()
	if err != nil {
		return err
	}
	vals, err := row.Values(ts)
	if err != nil {
		return err
	}
	r.Types = types
	r.Values = make([]any, len(vals))
	for i, v := range vals {
		if r.Values[i], err = ValueToJSON(v, ts[i]); err != nil {
			return fmt.Errorf("paimon: field %d: %w", i, err)
		}
	}
	return nil
}

func parseTypes(ss []string) ([]Type, error) {
	ts := make([]Type, len(ss))
	for i, s := range ss {
		t, err := ParseType(s)
		if err != nil {
			return nil, err
		}
		ts[i] = t
	}
	return ts, nil
}

// row builds the Row: from Hex when present, else from Types and Values.
func (r *RowJSON) row() (Row, error) {
	if r.Hex != "" || r.Types == nil {
		b, err := hex.DecodeString(r.Hex)
		if err != nil {
			return Row{}, fmt.Errorf("paimon: row hex: %w", err)
		}
		return NewRow(r.Arity, b)
	}
	ts, err := parseTypes(r.Types)
	if err != nil {
		return Row{}, err
	}
	if len(r.Values) != len(ts) || r.Arity != len(ts) {
		return Row{}, fmt.Errorf("paimon: row of arity %d has %d types and %d values", r.Arity, len(ts), len(r.Values))
	}
	vals := make([]any, len(ts))
	for i, t := range ts {
		if vals[i], err = ValueFromJSON(r.Values[i], t); err != nil {
			return Row{}, fmt.Errorf("paimon: field %d (%v): %w", i, t, err)
		}
	}
	return BuildRow(ts, vals)
}

// ToMessages converts the document back to messages.
func (d *Document) ToMessages() ([]CommitMessage, error) {
	out := make([]CommitMessage, len(d.Messages))
	for i, mj := range d.Messages {
		m := &out[i]
		var err error
		if m.Partition, err = mj.Partition.row(); err != nil {
			return nil, fmt.Errorf("messages[%d].partition: %w", i, err)
		}
		m.Bucket, m.TotalBuckets = mj.Bucket, mj.TotalBuckets
		di, ci := mj.DataIncrement, mj.CompactIncrement
		for _, l := range []struct {
			name string
			in   []DataFileJSON
			out  *[]DataFile
		}{
			{"dataIncrement.newFiles", di.NewFiles, &m.Data.NewFiles},
			{"dataIncrement.deletedFiles", di.DeletedFiles, &m.Data.DeletedFiles},
			{"dataIncrement.changelogFiles", di.ChangelogFiles, &m.Data.ChangelogFiles},
			{"compactIncrement.compactBefore", ci.CompactBefore, &m.Compact.CompactBefore},
			{"compactIncrement.compactAfter", ci.CompactAfter, &m.Compact.CompactAfter},
			{"compactIncrement.changelogFiles", ci.ChangelogFiles, &m.Compact.ChangelogFiles},
		} {
			if *l.out, err = filesFromJSON(l.in); err != nil {
				return nil, fmt.Errorf("paimon: json: messages[%d].%s%w", i, l.name, err)
			}
		}
		m.Data.NewIndexFiles = indexesFromJSON(di.NewIndexFiles)
		m.Data.DeletedIndexFiles = indexesFromJSON(di.DeletedIndexFiles)
		m.Compact.NewIndexFiles = indexesFromJSON(ci.NewIndexFiles)
		m.Compact.DeletedIndexFiles = indexesFromJSON(ci.DeletedIndexFiles)
	}
	return out, nil
}

func statsFromJSON(s StatsJSON) (Stats, error) {
	minV, err := s.MinValues.row()
	if err != nil {
		return Stats{}, fmt.Errorf("minValues: %w", err)
	}
	maxV, err := s.MaxValues.row()
	if err != nil {
		return Stats{}, fmt.Errorf("maxValues: %w", err)
	}
	nc := s.NullCounts
	if nc == nil {
		nc = []*int64{}
	}
	return Stats{MinValues: minV, MaxValues: maxV, NullCounts: nc}, nil
}

func filesFromJSON(in []DataFileJSON) ([]DataFile, error) {
	out := make([]DataFile, len(in))
	for i, j := range in {
		f := DataFile{FileName: j.FileName, FileSize: j.FileSize, RowCount: j.RowCount,
			MinSequenceNumber: j.MinSequenceNumber, MaxSequenceNumber: j.MaxSequenceNumber,
			SchemaID: j.SchemaID, Level: j.Level, ExtraFiles: j.ExtraFiles, CreationTime: j.CreationTime,
			DeleteRowCount: j.DeleteRowCount, EmbeddedIndex: j.EmbeddedIndex,
			ValueStatsCols: j.ValueStatsCols, ExternalPath: j.ExternalPath, FirstRowID: j.FirstRowID,
			WriteCols: j.WriteCols}
		if j.FileSource != nil {
			fs := FileSource(*j.FileSource)
			f.FileSource = &fs
		}
		var err error
		steps := []struct {
			name string
			do   func() error
		}{
			{"minKey", func() (e error) { f.MinKey, e = j.MinKey.row(); return }},
			{"maxKey", func() (e error) { f.MaxKey, e = j.MaxKey.row(); return }},
			{"keyStats", func() (e error) { f.KeyStats, e = statsFromJSON(j.KeyStats); return }},
			{"valueStats", func() (e error) { f.ValueStats, e = statsFromJSON(j.ValueStats); return }},
		}
		for _, s := range steps {
			if err = s.do(); err != nil {
				return nil, fmt.Errorf("[%d].%s: %w", i, s.name, err)
			}
		}
		out[i] = f
	}
	return out, nil
}

func indexesFromJSON(in []IndexFileJSON) []IndexFile {
	out := make([]IndexFile, len(in))
	for i, j := range in {
		f := IndexFile{IndexType: j.IndexType, FileName: j.FileName, FileSize: j.FileSize,
			RowCount: j.RowCount, ExternalPath: j.ExternalPath}
		if j.DVRanges != nil {
			f.DVRanges = make([]DeletionVector, len(j.DVRanges))
			for k, dv := range j.DVRanges {
				f.DVRanges[k] = DeletionVector(dv)
			}
		}
		if j.GlobalIndex != nil {
			g := GlobalIndex(*j.GlobalIndex)
			f.GlobalIndex = &g
		}
		out[i] = f
	}
	return out
}

// ValueToJSON renders a value read by Row.Get as JSON: numbers, strings and booleans as
// themselves, binaries base64, decimals as plain strings, timestamps as
// {"millis", "nanoOfMillis"}, arrays and rows as lists, maps as lists of [key, value];
// a float that JSON cannot carry (NaN, ±Inf) as the string Java prints for it.
func ValueToJSON(v any, t Type) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case []byte:
		return base64.StdEncoding.EncodeToString(x), nil
	case Decimal:
		return x.String(), nil
	case float32:
		return floatJSON(float64(x)), nil
	case float64:
		return floatJSON(x), nil
	case []MapEntry:
		out := make([]any, len(x))
		for i, e := range x {
			k, err := ValueToJSON(e.Key, *t.Key)
			if err != nil {
				return nil, err
			}
			val, err := ValueToJSON(e.Value, *t.Val)
			if err != nil {
				return nil, err
			}
			out[i] = []any{k, val}
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			et := t.Elem
			if t.Kind == KindRow {
				et = &t.Fields[i]
			}
			var err error
			if out[i], err = ValueToJSON(e, *et); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return v, nil
}

func floatJSON(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

// Java's NaNs, Double.NaN and Float.NaN (Double.doubleToRawLongBits gives
// 0x7ff8000000000000): a JSON "NaN" is built with these bits, not Go's
// math.NaN() (0x7ff8000000000001), because Paimon compares partition rows
// byte by byte, and a partition with other NaN bits is another partition.
var (
	javaDoubleNaN = math.Float64frombits(0x7ff8000000000000)
	javaFloatNaN  = math.Float32frombits(0x7fc00000)
)

// ValueFromJSON is the inverse of ValueToJSON, given the type.
func ValueFromJSON(j any, t Type) (any, error) {
	if j == nil {
		return nil, nil
	}
	bad := func() (any, error) { return nil, fmt.Errorf("JSON %v does not fit %v", j, t) }
	switch t.Kind {
	case KindBoolean:
		b, ok := j.(bool)
		if !ok {
			return bad()
		}
		return b, nil
	case KindTinyInt, KindSmallInt, KindInt, KindDate, KindTime, KindBigInt:
		n, ok := j.(json.Number)
		if !ok {
			return bad()
		}
		v, err := n.Int64()
		if err != nil {
			return bad()
		}
		switch t.Kind {
		case KindTinyInt:
			return int8(v), checkRange(v, math.MinInt8, math.MaxInt8)
		case KindSmallInt:
			return int16(v), checkRange(v, math.MinInt16, math.MaxInt16)
		case KindBigInt:
			return v, nil
		}
		return int32(v), checkRange(v, math.MinInt32, math.MaxInt32)
	case KindFloat, KindDouble:
		var f float64
		switch x := j.(type) {
		case json.Number:
			var err error
			if f, err = x.Float64(); err != nil {
				return bad()
			}
		case string:
			switch x {
			case "NaN":
				if t.Kind == KindFloat {
					return javaFloatNaN, nil
				}
				return javaDoubleNaN, nil
			case "Infinity":
				f = math.Inf(1)
			case "-Infinity":
				f = math.Inf(-1)
			default:
				return bad()
			}
		default:
			return bad()
		}
		if t.Kind == KindFloat {
			return float32(f), nil
		}
		return f, nil
	case KindString:
		s, ok := j.(string)
		if !ok {
			return bad()
		}
		return s, nil
	case KindBytes:
		s, ok := j.(string)
		if !ok {
			return bad()
		}
		return base64.StdEncoding.DecodeString(s)
	case KindDecimal:
		s, ok := j.(string)
		if !ok {
			return bad()
		}
		return ParseDecimal(s, t.Precision, t.Scale)
	case KindTimestamp, KindTimestampLTZ:
		m, ok := j.(map[string]any)
		if !ok {
			return bad()
		}
		ms, ok1 := m["millis"].(json.Number)
		ns, ok2 := m["nanoOfMillis"].(json.Number)
		if !ok1 || !ok2 || len(m) != 2 {
			return bad()
		}
		a, err1 := ms.Int64()
		b, err2 := ns.Int64()
		if err1 != nil || err2 != nil || b < 0 || b > 999_999 {
			return bad()
		}
		return Timestamp{Millis: a, NanoOfMillis: int32(b)}, nil
	case KindArray, KindRow:
		l, ok := j.([]any)
		if !ok || (t.Kind == KindRow && len(l) != len(t.Fields)) {
			return bad()
		}
		out := make([]any, len(l))
		for i, e := range l {
			et := t.Elem
			if t.Kind == KindRow {
				et = &t.Fields[i]
			}
			var err error
			if out[i], err = ValueFromJSON(e, *et); err != nil {
				return nil, err
			}
		}
		return out, nil
	case KindMap:
		l, ok := j.([]any)
		if !ok {
			return bad()
		}
		out := make([]MapEntry, len(l))
		for i, e := range l {
			kv, ok := e.([]any)
			if !ok || len(kv) != 2 {
				return bad()
			}
			k, err := ValueFromJSON(kv[0], *t.Key)
			if err != nil {
				return nil, err
			}
			v, err := ValueFromJSON(kv[1], *t.Val)
			if err != nil {
				return nil, err
			}
			out[i] = MapEntry{Key: k, Value: v}
		}
		return out, nil
	}
	return bad()
}

func checkRange(v, lo, hi int64) error {
	if v < lo || v > hi {
		return fmt.Errorf("%d out of range [%d, %d]", v, lo, hi)
	}
	return nil
}
