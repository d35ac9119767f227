// Package messagescli is `flightgw messages`, the command that inspects
// and encodes Paimon commit-message payloads (docs/commit-messages.md). It
// imports the codec and nothing of the gateway, so that the light front
// (cmd/flightgw) runs it without the backends' and the engine's start-up
// (iceberg-go's substrait function catalogue alone costs about 55 ms and
// 33 MB), which every Go package linked into a binary pays before main
// runs.
package messagescli

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/flightgw/flightgw/codec/envelope"
	"github.com/flightgw/flightgw/codec/paimon"
)

// Run implements the command named prog ("flightgw messages"), the
// debugging tool for Paimon commit-message payloads: inspect prints one as
// JSON, encode builds one from that JSON. It returns the process exit
// code: 0 on success, 1 on failure, 2 on misuse.
func Run(prog string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprintf(stderr, "usage: %[1]s inspect [--version N] [--partition-types T1,T2,...] FILE\n"+
			"       %[1]s encode [--version N] [--envelope] < JSON > FILE\n"+
			"versions: %[2]v (default %[3]d)\n", prog, paimon.SupportedVersions, paimon.DefaultVersion)
	}
	if len(args) == 0 {
		usage()
		return 2
	}
	switch args[0] {
	case "inspect":
		return inspect(prog, args[1:], stdout, stderr)
	case "encode":
		return encode(prog, args[1:], stdin, stdout, stderr)
	case "-h", "-help", "--help", "help":
		usage()
		return 0
	}
	fmt.Fprintf(stderr, "%s: unknown subcommand %q\n", prog, args[0])
	usage()
	return 2
}

// parseFlags returns 0 to go on, or the exit code when the flags asked for help or were wrong.
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	return 0, true
}

func inspect(prog string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("messages inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.Int("version", 0, "serializer version of a raw payload (default: the envelope's, else the newest)")
	partTypes := fs.String("partition-types", "", "comma-separated partition field types, to print typed partition values")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: "+prog+" inspect [--version N] [--partition-types T1,T2,...] FILE")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	data, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "%s inspect: %v\n", prog, err)
		return 1
	}
	if bytes.HasPrefix(data, []byte("FGCM")) && len(data) > 4 && data[4] == 2 {
		return inspectSigned(prog, fs.Arg(0), data, *partTypes, stdout, stderr)
	}
	v, msgs, err := paimon.Open(data, *version)
	if err != nil {
		fmt.Fprintf(stderr, "%s inspect: %s: %v\n", prog, fs.Arg(0), err)
		return 1
	}
	doc, err := document(v, msgs, *partTypes)
	if err != nil {
		fmt.Fprintf(stderr, "%s inspect: %v\n", prog, err)
		return 1
	}
	if err := paimon.WriteJSON(stdout, doc); err != nil {
		fmt.Fprintf(stderr, "%s inspect: %v\n", prog, err)
		return 1
	}
	return 0
}

// document is the JSON model of msgs, with typed partition values when
// partTypes names the partition types.
func document(v int, msgs []paimon.CommitMessage, partTypes string) (*paimon.Document, error) {
	doc := paimon.ToDocument(v, msgs)
	if partTypes != "" {
		types := splitTypes(partTypes)
		for i := range doc.Messages {
			if err := doc.Messages[i].Partition.Annotate(types); err != nil {
				return nil, fmt.Errorf("message %d partition: %w", i, err)
			}
		}
	}
	return doc, nil
}

// deltaKind is codec/delta's EnvelopeKind, spelled here: that package
// links Arrow, which this tool stays without (deps_test.go).
const deltaKind = "delta"

// inspectSigned prints a version 2 (signed) envelope: its header, and its
// payload decoded by kind. The signature is not checked: that needs the
// replicas' signing key, which only the gateway holds.
func inspectSigned(prog, name string, data []byte, partTypes string, stdout, stderr io.Writer) int {
	e, err := envelope.Parse(data)
	if err != nil {
		fmt.Fprintf(stderr, "%s inspect: %s: %v\n", prog, name, err)
		return 1
	}
	out := map[string]any{"envelope": map[string]any{
		"version": e.Version, "kind": e.Kind, "serializerVersion": e.SerializerVersion, "table": e.Table,
		"commitUser": e.CommitUser, "preparedAt": e.PreparedAt.UTC().Format(time.RFC3339Nano), "signature": "not checked",
	}}
	switch e.Kind {
	case paimon.EnvelopeKind:
		msgs, err := paimon.DecodeList(e.SerializerVersion, e.Payload)
		if err != nil {
			fmt.Fprintf(stderr, "%s inspect: %s: payload: %v\n", prog, name, err)
			return 1
		}
		doc, err := document(e.SerializerVersion, msgs, partTypes)
		if err != nil {
			fmt.Fprintf(stderr, "%s inspect: %v\n", prog, err)
			return 1
		}
		out["payload"] = doc
	case deltaKind:
		// Add actions, one JSON line each: printed as the list of them.
		var acts []json.RawMessage
		for _, l := range strings.Split(strings.TrimSuffix(string(e.Payload), "\n"), "\n") {
			if !json.Valid([]byte(l)) {
				fmt.Fprintf(stderr, "%s inspect: %s: payload: a line is not JSON\n", prog, name)
				return 1
			}
			acts = append(acts, json.RawMessage(l))
		}
		out["payload"] = acts
	default:
		rs, err := envelope.DecodeReceipts(e.Payload)
		if err != nil {
			fmt.Fprintf(stderr, "%s inspect: %s: payload: %v\n", prog, name, err)
			return 1
		}
		out["payload"] = rs
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(stderr, "%s inspect: %v\n", prog, err)
		return 1
	}
	return 0
}

// splitTypes splits on commas outside <> and (), so DECIMAL(20, 2) and MAP<K, V> stay whole.
func splitTypes(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '<', '(':
			depth++
		case '>', ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

func encode(prog string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("messages encode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.Int("version", 0, "serializer version to write (default: the JSON's \"version\", else the newest)")
	envelope := fs.Bool("envelope", false, "wrap the payload in the transport envelope")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: "+prog+" encode [--version N] [--envelope] < JSON > FILE")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	doc, err := paimon.ReadDocument(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "%s encode: %v\n", prog, err)
		return 1
	}
	v := *version
	if v == 0 {
		v = doc.Version
	}
	if v == 0 {
		v = paimon.DefaultVersion
	}
	msgs, err := doc.ToMessages()
	if err != nil {
		fmt.Fprintf(stderr, "%s encode: %v\n", prog, err)
		return 1
	}
	out, err := paimon.EncodeList(v, msgs)
	if err == nil && *envelope {
		out, err = paimon.Wrap(v, out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s encode: %v\n", prog, err)
		return 1
	}
	if _, err := io.Copy(stdout, bytes.NewReader(out)); err != nil {
		fmt.Fprintf(stderr, "%s encode: %v\n", prog, err)
		return 1
	}
	return 0
}
