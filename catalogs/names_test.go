package catalogs

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
		want string // in the message when refused
	}{
		{"orders", true, ""},
		{"Orders_2024", true, ""},
		{"2024_orders", true, ""},
		{"a-b", true, ""},
		{"_", true, ""},
		{strings.Repeat("x", MaxNameBytes), true, ""},
		{strings.Repeat("x", MaxNameBytes+1), false, "256 bytes long"},
		{strings.Repeat("x", 300), false, "300 bytes long"},
		{"", false, "empty"},
		{"-a", false, "starts with '-'"},
		{".", false, `'.'`},
		{"..", false, `'.'`},
		{"../x", false, `'.'`},
		{"a/b", false, `'/'`},
		{`a\b`, false, `'\\'`},
		{"%2e%2e%2f", false, `'%'`},
		{"%252e%252e%252f", false, `'%'`},
		{"a%2e", false, `"a%2e" has forbidden character '%'`},
		{"%00", false, `'%'`},
		{"a\x00b", false, `'\x00'`},
		{"\u2024\u2024", false, `'․'`},
		{"\uff0e\uff0e", false, `'．'`},
		{"\u3002", false, `'。'`},
		{"a b", false, `' '`},
		{`a"b`, false, `'"'`},
		{"a'b", false, `'\''`},
		{"a$b", false, `'$'`},
		{"a.b", false, `'.'`},
		{"snow☃", false, `'☃'`},
		{"🦆", false, `'🦆'`},
		{"caf\xe9", false, `'\xe9'`},
		{"a\nb", false, `'\n'`},
	} {
		err := ValidateName("table", tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
			continue
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ValidateName(%q): kind of %v is not invalid argument", tc.name, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) {
			t.Errorf("ValidateName(%q) = %q, does not say %q", tc.name, msg, tc.want)
		}
		if tc.name != "" && !strings.Contains(msg, AllowedNameChars) {
			t.Errorf("ValidateName(%q) = %q, does not state the rule", tc.name, msg)
		}
	}
}

func TestValidateNamespace(t *testing.T) {
	for _, tc := range []struct {
		ns   []string
		ok   bool
		want string
	}{
		{[]string{"default"}, true, ""},
		{[]string{"a", "b", "c"}, true, ""},
		{nil, false, "namespace is empty"},
		{[]string{"a", ""}, false, "empty name component"},
		{[]string{"a", ".."}, false, `name component ".."`},
		{[]string{"%2e%2e"}, false, `name component "%2e%2e" has forbidden character '%'`},
		{[]string{strings.Repeat("n", 200), strings.Repeat("m", 50)}, false, "over the limit of 240"},
	} {
		err := ValidateNamespace(tc.ns)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateNamespace(%q) = %v, want ok=%v", tc.ns, err, tc.ok)
			continue
		}
		if err != nil && (!errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("ValidateNamespace(%q) = %v, want invalid argument saying %q", tc.ns, err, tc.want)
		}
	}
}

// TestTableIdentValidateNamesComponent: the table's message names the
// table, the component and the rule, for each position of the component.
func TestTableIdentValidateNamesComponent(t *testing.T) {
	for _, tc := range []struct {
		id   TableIdent
		want string
	}{
		{TableIdent{"c", []string{"n"}, "a%2e"}, `table "c.n.a%2e": table name "a%2e" has forbidden character '%'`},
		{TableIdent{"c", []string{"%2e%2e"}, "t"}, `namespace "%2e%2e": name component "%2e%2e" has forbidden character '%'`},
		{TableIdent{"c", []string{"ok", "a b"}, "t"}, `name component "a b" has forbidden character ' '`},
		{TableIdent{"c.x", []string{"n"}, "t"}, `catalog name "c.x" has forbidden character '.'`},
		{TableIdent{"c", []string{"n"}, strings.Repeat("t", 300)}, "300 bytes long"},
	} {
		err := tc.id.Validate()
		if err == nil || !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%#v: Validate = %v, want invalid argument saying %q", tc.id, err, tc.want)
		}
	}
}
