package catalogtest

import (
	"strings"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// TestContractNamesChecks: every check a row of catalogs.Contract names
// (a capitalised first word of its Check column, in each part between
// commas and semicolons) is one of the suite's, so that the contract
// cannot promise a check that does not exist; and every check of the
// suite is named by some row.
func TestContractNamesChecks(t *testing.T) {
	have := map[string]bool{}
	for _, c := range (suite{}).checks() {
		have[c.name] = true
	}
	named := map[string]bool{}
	for _, row := range catalogs.Contract {
		for _, part := range strings.FieldsFunc(row.Check, func(r rune) bool { return r == ',' || r == ';' }) {
			word, _, _ := strings.Cut(strings.TrimSpace(part), " ")
			if word == "" || word[0] < 'A' || word[0] > 'Z' || strings.Contains(word, ".") {
				continue // prose: "messages", "integration TestX", "catalogtest.Run: every check", "none"
			}
			named[word] = true
			if !have[word] {
				t.Errorf("Contract row %s names check %q, which catalogtest does not have", row.Interface, word)
			}
		}
	}
	for name := range have {
		if !named[name] {
			t.Errorf("check %s is named by no row of catalogs.Contract", name)
		}
	}
}
