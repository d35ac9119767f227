package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// yamlError is a decode error of the configuration text src, led by the
// line and the key at fault: go-yaml names the Go struct and type
// ("cannot unmarshal string into Go struct field Config.Limits of type
// int64"), which the person editing the file does not know, so the key
// (limits.max_batch_bytes) is found in the document at the error's
// position.
func yamlError(path, src string, err error) error {
	var ye yaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil {
		return fmt.Errorf("config %s: %s", path, yaml.FormatError(err, false, true))
	}
	pos := ye.GetToken().Position
	lead := fmt.Sprintf("config %s line %d", path, pos.Line)
	if key := keyAt(src, pos.Line, pos.Column); key != "" {
		lead += ": " + key
	}
	return fmt.Errorf("%s: %s", lead, yaml.FormatError(err, false, true))
}

// keyAt is the key path (limits.max_batch_bytes, catalogs[0].type) of
// the value at line:column of src, or "" when none is found there.
func keyAt(src string, line, column int) string {
	f, err := parser.ParseBytes([]byte(src), 0)
	if err != nil {
		return ""
	}
	var found string
	for _, doc := range f.Docs {
		ast.Walk(visitFunc(func(n ast.Node) bool {
			t := n.GetToken()
			if found == "" && t != nil && t.Position.Line == line && t.Position.Column == column {
				found = n.GetPath()
			}
			return found == ""
		}), doc)
	}
	return strings.TrimPrefix(strings.TrimPrefix(found, "$"), ".")
}

// visitFunc is an ast.Visitor from a function that says whether to go on.
type visitFunc func(ast.Node) bool

func (f visitFunc) Visit(n ast.Node) ast.Visitor {
	if f(n) {
		return f
	}
	return nil
}
