package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// loadFormat is what a load's headers say about its body.
type loadFormat struct {
	format      string // csv or json
	columnSep   string
	rowDelim    string
	columns     []string
	stripOuter  bool
	partialCols bool
}

// formatOf reads the data_desc headers of a load.
func formatOf(get func(string) string) (loadFormat, error) {
	f := loadFormat{format: strings.ToLower(get("format")), columnSep: "\t", rowDelim: "\n"}
	if f.format == "" {
		f.format = "csv"
	}
	if f.format != "csv" && f.format != "json" {
		return f, fmt.Errorf("format %q is not supported (CSV, JSON)", get("format"))
	}
	if v := get("column_separator"); v != "" {
		f.columnSep = unescapeSep(v)
	}
	if v := get("row_delimiter"); v != "" {
		f.rowDelim = unescapeSep(v)
	}
	if v := get("columns"); v != "" {
		for c := range strings.SplitSeq(v, ",") {
			f.columns = append(f.columns, strings.Trim(strings.TrimSpace(c), "`"))
		}
	}
	f.stripOuter = strings.EqualFold(get("strip_outer_array"), "true")
	return f, nil
}

// unescapeSep turns StarRocks' \xHH notation (\x01, \\x0D0A) into bytes.
func unescapeSep(v string) string {
	v = strings.TrimPrefix(v, `\`)
	if strings.HasPrefix(v, `\x`) || strings.HasPrefix(v, "x") && len(v) > 1 && isHex(v[1:]) {
		h := strings.TrimPrefix(strings.TrimPrefix(v, `\`), "x")
		var out []byte
		for i := 0; i+1 < len(h); i += 2 {
			b, err := strconv.ParseUint(h[i:i+2], 16, 8)
			if err != nil {
				return v
			}
			out = append(out, byte(b))
		}
		return string(out)
	}
	if v == "t" {
		return "\t"
	}
	if v == "n" {
		return "\n"
	}
	return v
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return s != ""
}

// parsed is a decoded load body: rows in the table's column order and the
// number of rows that failed the table's types or nullability (StarRocks
// "filters" them; with the default max_filter_ratio of 0 the load fails).
type parsed struct {
	rows     [][]any
	total    int64
	filtered int64
	firstErr string
}

// parseBody decodes body per f against the table's columns.
func parseBody(body []byte, f loadFormat, cols []column) (parsed, error) {
	var p parsed
	idx := map[string]int{}
	for i, c := range cols {
		idx[strings.ToLower(c.name)] = i
	}
	add := func(vals map[int]any) {
		p.total++
		row := make([]any, len(cols))
		for i, c := range cols {
			v, ok := vals[i]
			if !ok || v == nil {
				if !c.nullable {
					p.filter(fmt.Sprintf("column %s is not nullable but got NULL", c.name))
					return
				}
				continue
			}
			cv, err := convert(c, v)
			if err != nil {
				p.filter(fmt.Sprintf("column %s: %v", c.name, err))
				return
			}
			row[i] = cv
		}
		p.rows = append(p.rows, row)
	}
	switch f.format {
	case "json":
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var objs []map[string]any
		trimmed := bytes.TrimSpace(body)
		if len(trimmed) > 0 && trimmed[0] == '[' {
			if err := dec.Decode(&objs); err != nil {
				return p, fmt.Errorf("JSON body: %v", err)
			}
		} else {
			for dec.More() {
				var o map[string]any
				if err := dec.Decode(&o); err != nil {
					return p, fmt.Errorf("JSON body: %v", err)
				}
				objs = append(objs, o)
			}
		}
		for _, o := range objs {
			vals := map[int]any{}
			for k, v := range o {
				if i, ok := idx[strings.ToLower(k)]; ok {
					vals[i] = v
				}
			}
			add(vals)
		}
	default:
		names := f.columns
		if names == nil {
			for _, c := range cols {
				names = append(names, c.name)
			}
		}
		text := string(body)
		if !strings.HasSuffix(text, f.rowDelim) && text != "" {
			return p, fmt.Errorf("CSV body does not end with the row delimiter")
		}
		for line := range strings.SplitSeq(strings.TrimSuffix(text, f.rowDelim), f.rowDelim) {
			if text == "" {
				break
			}
			fields := strings.Split(line, f.columnSep)
			if len(fields) != len(names) {
				p.total++
				p.filter(fmt.Sprintf("row has %d fields, want %d", len(fields), len(names)))
				continue
			}
			vals := map[int]any{}
			for j, n := range names {
				i, ok := idx[strings.ToLower(n)]
				if !ok {
					continue
				}
				if fields[j] == `\N` {
					vals[i] = nil
				} else {
					vals[i] = fields[j]
				}
			}
			add(vals)
		}
	}
	return p, nil
}

func (p *parsed) filter(msg string) {
	p.filtered++
	if p.firstErr == "" {
		p.firstErr = msg
	}
}

// convert checks a value against the column's type, as StarRocks' casts
// do, and returns what MariaDB stores.
func convert(c column, v any) (any, error) {
	s, isStr := v.(string)
	if n, ok := v.(json.Number); ok {
		s, isStr = n.String(), true
	}
	if b, ok := v.(bool); ok {
		if c.colType == "tinyint(1)" || isInt(c.dataType) {
			if b {
				return int64(1), nil
			}
			return int64(0), nil
		}
		return nil, fmt.Errorf("boolean value for a %s column", c.colType)
	}
	if !isStr {
		return nil, fmt.Errorf("value %v is not a scalar", v)
	}
	switch {
	case c.colType == "tinyint(1)":
		switch strings.ToLower(s) {
		case "true", "1":
			return int64(1), nil
		case "false", "0":
			return int64(0), nil
		}
		return nil, fmt.Errorf("%q is not a boolean", s)
	case isInt(c.dataType):
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return nil, fmt.Errorf("%q is not a %s", s, c.dataType)
		}
		return s, nil
	case c.dataType == "decimal":
		if _, ok := new(big.Float).SetString(s); !ok {
			return nil, fmt.Errorf("%q is not a decimal", s)
		}
		return s, nil
	case c.dataType == "float" || c.dataType == "double":
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return nil, fmt.Errorf("%q is not a %s", s, c.dataType)
		}
		return s, nil
	case c.dataType == "date":
		if _, err := time.Parse("2006-01-02", s); err != nil {
			return nil, fmt.Errorf("%q is not a date", s)
		}
		return s, nil
	case c.dataType == "datetime" || c.dataType == "timestamp":
		if _, err := time.Parse("2006-01-02 15:04:05.999999", s); err != nil {
			return nil, fmt.Errorf("%q is not a datetime", s)
		}
		return s, nil
	}
	return s, nil
}

func isInt(dataType string) bool {
	switch dataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint":
		return true
	}
	return false
}
