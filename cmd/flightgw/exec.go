package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// serverName is the gateway binary's file name; serverEnv names another.
const (
	serverName = "flightgw-server"
	serverEnv  = "FLIGHTGW_SERVER"
)

// execServer replaces the process with the gateway binary, running it with
// argv (program name included) and env. It returns only on failure, with
// the exit code.
func execServer(argv, env []string, stderr io.Writer) int {
	self, err := os.Executable()
	if err != nil {
		self = ""
	}
	path, err := findServer(self, os.Getenv(serverEnv))
	if err != nil {
		fmt.Fprintf(stderr, "flightgw: %v\n", err)
		return 1
	}
	err = syscall.Exec(path, argv, env)
	fmt.Fprintf(stderr, "flightgw: run %s: %v\n", path, err)
	return 1
}

// findServer looks for the gateway binary next to the front's own
// executable self (so a front runs the server built with it), then at
// the path envPath ($FLIGHTGW_SERVER) gives, then on $PATH. The error
// names every place it looked and how to build the binary.
func findServer(self, envPath string) (string, error) {
	var looked []string
	if self != "" {
		p := filepath.Join(filepath.Dir(self), serverName)
		err := isExecutable(p)
		if err == nil {
			return p, nil
		}
		looked = append(looked, fmt.Sprintf("%s (next to %s): %v", p, self, err))
	}
	if envPath != "" {
		p, err := filepath.Abs(envPath)
		if err == nil {
			err = isExecutable(p)
		}
		if err == nil {
			return p, nil
		}
		// A binary named explicitly and missing is a mistake to report, not
		// a reason to run whichever one PATH holds.
		looked = append(looked, fmt.Sprintf("$%s=%s: %v", serverEnv, envPath, err))
		return "", notFound(looked)
	}
	looked = append(looked, fmt.Sprintf("$%s: not set", serverEnv))
	// exec.LookPath refuses a match in a relative PATH entry (exec.ErrDot).
	if p, err := exec.LookPath(serverName); err == nil {
		return p, nil
	}
	looked = append(looked, fmt.Sprintf("PATH=%s: no %s", os.Getenv("PATH"), serverName))
	return "", notFound(looked)
}

func notFound(looked []string) error {
	return fmt.Errorf("serve runs the gateway binary %s, which was not found:\n  %s\n"+
		"build it next to flightgw with `make build` (bin/flightgw and bin/%s), or\n"+
		"  go build -tags duckdb_arrow -o <directory of flightgw>/%s ./cmd/flightgw-server\n"+
		"or set $%s to its path",
		serverName, strings.Join(looked, "\n  "), serverName, serverName, serverEnv)
}

// isExecutable reports why p cannot be run: missing, a directory, or
// without an execute bit.
func isExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errors.New("no such file")
		}
		return err
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return errors.New("not executable")
	}
	return nil
}
