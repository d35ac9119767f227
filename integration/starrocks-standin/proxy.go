package main

import (
	"encoding/binary"
	"io"
	"net"
	"regexp"
	"strings"
)

// proxyMySQL forwards MySQL-protocol connections to MariaDB, rewriting
// StarRocks CREATE TABLE statements (COM_QUERY) into MariaDB ones on the
// way. Everything else, the handshake and every answer included, passes
// through unchanged, so the client talks to a real SQL server. Every
// COM_QUERY's text, as received, is handed to record.
func proxyMySQL(l net.Listener, target string, record func(string)) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("tcp", target)
			if err != nil {
				logf("mysql proxy: dial %s: %v", target, err)
				return
			}
			defer up.Close()
			go func() {
				_, _ = io.Copy(c, up)
				_ = c.Close()
			}()
			forwardCommands(up, c, record)
		}()
	}
}

// forwardCommands copies client packets to the server, rewriting the DDL
// of command packets (sequence id 0, COM_QUERY).
func forwardCommands(dst io.Writer, src io.Reader, record func(string)) {
	hdr := make([]byte, 4)
	for {
		if _, err := io.ReadFull(src, hdr); err != nil {
			return
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		payload := make([]byte, n)
		if _, err := io.ReadFull(src, payload); err != nil {
			return
		}
		if hdr[3] == 0 && n > 1 && n < 0xffffff && payload[0] == 0x03 {
			record(string(payload[1:]))
			if q, ok := rewriteDDL(string(payload[1:])); ok {
				payload = append([]byte{0x03}, q...)
				var l [4]byte
				binary.LittleEndian.PutUint32(l[:], uint32(len(payload)))
				copy(hdr[:3], l[:3])
			}
		}
		if _, err := dst.Write(append(hdr[:4:4], payload...)); err != nil {
			return
		}
	}
}

var (
	createTable = regexp.MustCompile(`(?is)^\s*CREATE\s+TABLE\s`)
	primaryKey  = regexp.MustCompile(`(?is)\bPRIMARY\s+KEY\s*\(([^)]*)\)`)
)

// rewriteDDL turns a StarRocks CREATE TABLE into MariaDB's: the column
// list is kept with StarRocks-only types mapped (STRING, LARGEINT,
// DATETIME, JSON, VARBINARY), a PRIMARY KEY model becomes a primary key,
// and the StarRocks clauses after the column list (ENGINE=OLAP, DUPLICATE
// KEY, DISTRIBUTED BY, PROPERTIES) are dropped.
func rewriteDDL(q string) (string, bool) {
	if !createTable.MatchString(q) {
		return "", false
	}
	open := strings.IndexByte(q, '(')
	if open < 0 {
		return "", false
	}
	end := matching(q, open)
	if end < 0 {
		return "", false
	}
	defs := splitTop(q[open+1 : end])
	for i, d := range defs {
		defs[i] = mapColumn(d)
	}
	if m := primaryKey.FindStringSubmatch(q[end+1:]); m != nil {
		defs = append(defs, "PRIMARY KEY ("+m[1]+")")
	}
	return q[:open] + "(\n  " + strings.Join(defs, ",\n  ") + "\n)", true
}

// matching finds the parenthesis closing the one at open, skipping quoted
// text and backticked names.
func matching(s string, open int) int {
	depth := 0
	var quote byte
	for i := open; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '`' || c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// splitTop splits a column list on its top-level commas.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '`' || c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

var typeWord = regexp.MustCompile(`(?i)^([A-Za-z]+)(\([^)]*\))?`)

// mapColumn maps one "`name` TYPE ..." definition's type.
func mapColumn(d string) string {
	if !strings.HasPrefix(d, "`") {
		return d
	}
	close := strings.IndexByte(d[1:], '`')
	if close < 0 {
		return d
	}
	name, rest := d[:close+2], strings.TrimSpace(d[close+2:])
	m := typeWord.FindStringSubmatchIndex(rest)
	if m == nil {
		return d
	}
	word, args := strings.ToUpper(rest[m[2]:m[3]]), ""
	if m[4] >= 0 {
		args = rest[m[4]:m[5]]
	}
	typ := word + args
	switch word {
	case "STRING", "JSON":
		typ = "LONGTEXT"
	case "LARGEINT":
		typ = "DECIMAL(39,0)"
	case "DATETIME":
		typ = "DATETIME(6)"
	case "VARBINARY":
		if args == "" {
			typ = "LONGBLOB"
		}
	case "VARCHAR":
		// StarRocks' widest VARCHAR does not fit a MariaDB row.
		if args == "" || len(args) > 6 {
			typ = "LONGTEXT"
		}
	}
	return name + " " + typ + rest[m[1]:]
}
