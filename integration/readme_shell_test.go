package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeShellCommands runs or checks every command of the README's
// ```sh blocks, offline: make targets exist, the venv line
// runs, the Go dependency line runs in a fresh module that then builds
// against this checkout, the pip lines pin exactly the versions the tests
// install (integration/python/requirements.txt), and the JDBC lines name
// the flag and the driver version the Java tests use. A command the test
// does not know fails it, so the README cannot grow an unchecked one.
func TestReadmeShellCommands(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	readme := readFile(t, filepath.Join(root, "README.md"))
	pins := requirementPins(t, readFile(t, filepath.Join(root, "integration", "python", "requirements.txt")))
	pom := readFile(t, filepath.Join(root, "integration", "jdbc", "pom.xml"))
	driver := regexp.MustCompile(`<artifactId>flight-sql-jdbc-driver</artifactId>\s*<version>([^<]+)</version>`).FindStringSubmatch(pom)
	argLine := regexp.MustCompile(`<argLine>([^<]+)</argLine>`).FindStringSubmatch(pom)
	if driver == nil || argLine == nil {
		t.Fatal("pom.xml names no driver version or argLine")
	}
	makeTargets := map[string]bool{}
	mks, _ := filepath.Glob(filepath.Join(root, "mk", "*.mk"))
	for _, mk := range append(mks, filepath.Join(root, "Makefile")) {
		for _, m := range regexp.MustCompile(`(?m)^([A-Za-z0-9_.-]+(?:\s+[A-Za-z0-9_.-]+)*)\s*:[^=]`).FindAllStringSubmatch(readFile(t, mk), -1) {
			for _, n := range strings.Fields(m[1]) {
				makeTargets[n] = true
			}
		}
	}
	// Inline pip lines count too: `pip install ...` in the text.
	var cmds []string
	for _, b := range fencedBlocks(readme, "sh") {
		cmds = append(cmds, shellLines(b)...)
	}
	for _, m := range regexp.MustCompile("`(pip install [^`]+)`").FindAllStringSubmatch(readme, -1) {
		cmds = append(cmds, m[1])
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		f := strings.Fields(c)
		seen[f[0]] = true
		switch {
		case f[0] == "make":
			// Not make -n: it runs the recursive make lines of a target.
			if !makeTargets[f[1]] {
				t.Errorf("README: %q: no make target %s in Makefile or mk/*.mk", c, f[1])
			}
		case f[0] == "pip":
			for _, a := range f[2:] {
				a = strings.Trim(a, `'"`)
				name, ver, ok := strings.Cut(a, "==")
				if i := strings.IndexByte(name, '['); i >= 0 {
					name = name[:i]
				}
				if !ok || pins[strings.ToLower(name)] != ver {
					t.Errorf("README: %q installs %s, the tests %s==%s", c, a, name, pins[strings.ToLower(name)])
				}
			}
		case f[0] == "python3":
			run(t, t.TempDir(), nil, "bash", "-c", c)
		case f[0] == "go":
			mod := t.TempDir()
			off := []string{"GOPROXY=off", "GOFLAGS=-mod=mod", "GONOSUMDB=*", "GONOSUMCHECK=1", "GOFLAGS="}
			run(t, mod, off, "go", "mod", "init", "example.com/try")
			run(t, mod, off, "bash", "-c", strings.ReplaceAll(c, "=../flightgw", "="+root))
			prog := "package main\n\nimport \"github.com/flightgw/flightgw/client\"\n\nfunc main() { _ = client.Merge() }\n"
			if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(prog), 0o600); err != nil {
				t.Fatal(err)
			}
			run(t, mod, off, "go", "mod", "tidy")
			run(t, mod, off, "go", "build", "-o", filepath.Join(mod, "try"), ".")
		case f[0] == "export" && strings.HasPrefix(f[1], "JDK_JAVA_OPTIONS="):
			if v := strings.TrimPrefix(f[1], "JDK_JAVA_OPTIONS="); v != argLine[1] {
				t.Errorf("README: %q, the Java tests run with %s", c, argLine[1])
			}
		case f[0] == "java":
			if !strings.Contains(c, "flight-sql-jdbc-driver-"+driver[1]+".jar") {
				t.Errorf("README: %q names another driver than the tests' %s", c, driver[1])
			}
		case f[0] == "flightgw":
			// The command synopsis of the Configuration section:
			// cmd/flightgw's own tests run each command.
		default:
			t.Errorf("README: the test does not know the command %q", c)
		}
	}
	for _, want := range []string{"make", "pip", "python3", "go", "export", "java"} {
		if !seen[want] {
			t.Errorf("README has no %s command any more: update this test", want)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// requirementPins are name (lower case, no extras) → version.
func requirementPins(t *testing.T, req string) map[string]string {
	t.Helper()
	pins := map[string]string{}
	for _, l := range strings.Split(req, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		name, ver, ok := strings.Cut(l, "==")
		if !ok {
			t.Fatalf("requirements.txt: %q is not pinned", l)
		}
		if i := strings.IndexByte(name, '['); i >= 0 {
			name = name[:i]
		}
		pins[strings.ToLower(name)] = ver
	}
	return pins
}

// fencedBlocks are the ```lang blocks of a Markdown text.
func fencedBlocks(md, lang string) []string {
	var out []string
	for _, part := range strings.Split(md, "```"+lang+"\n")[1:] {
		if end := strings.Index(part, "```"); end >= 0 {
			out = append(out, part[:end])
		}
	}
	return out
}

// shellLines are a block's commands: continuations joined, comments and
// blank lines left out.
func shellLines(block string) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(block, "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\")
			continue
		}
		if l = strings.TrimSpace(cur + l); l != "" {
			out = append(out, l)
		}
		cur = ""
	}
	return out
}

// run runs a command in dir, offline, and fails t if it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "PIP_NO_INDEX=1"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s %s (in %s): %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
}
