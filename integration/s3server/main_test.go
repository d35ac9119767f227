package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHandler: path-style objects in the buckets made, and the
// conditional put of Paimon commits: If-None-Match: * on an existing key
// is 412 and leaves the object as it was.
func TestHandler(t *testing.T) {
	h, err := newHandler([]string{"lake"}, false)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	put := func(body string) int {
		req, _ := http.NewRequest(http.MethodPut, srv.URL+"/lake/t/snapshot/snapshot-1", strings.NewReader(body))
		req.Header.Set("If-None-Match", "*")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := put("first"); got != http.StatusOK {
		t.Fatalf("first conditional put: %d", got)
	}
	if got := put("second"); got != http.StatusPreconditionFailed {
		t.Errorf("second conditional put: %d, want 412", got)
	}
	res, err := http.Get(srv.URL + "/lake/t/snapshot/snapshot-1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "first" {
		t.Errorf("object %q after the refused put, want first", b)
	}
	res, err = http.Get(srv.URL + "/other/x")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("a bucket not made: %s, want 404", res.Status)
	}
}

// TestRun: the command gets the endpoint and credentials, its exit
// status is s3server's, and a command past -timeout is killed with its
// children.
func TestRun(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	if got := run("127.0.0.1:0", []string{"lake"}, false, 0, []string{"sh", "-c",
		`test -n "$S3_ENDPOINT" && test -n "$AWS_ACCESS_KEY_ID" && test -n "$AWS_SECRET_ACCESS_KEY" && exit 3`}); got != 3 {
		t.Errorf("exit status %d, want the command's 3", got)
	}
	if got := run("0.0.0.0:0", nil, false, 0, []string{"true"}); got != 2 {
		t.Errorf("-addr 0.0.0.0: exit status %d, want 2 (127.0.0.1 only)", got)
	}
	marker := filepath.Join(t.TempDir(), "survived")
	got := run("127.0.0.1:0", nil, false, 500*time.Millisecond, []string{"sh", "-c", "(sleep 2; touch " + marker + ") & wait"})
	if got != 124 {
		t.Errorf("timed out command: exit status %d, want 124", got)
	}
	time.Sleep(2500 * time.Millisecond) // past the child's sleep
	if _, err := os.Stat(marker); err == nil {
		t.Error("a child of the timed-out command outlived it")
	}
}
