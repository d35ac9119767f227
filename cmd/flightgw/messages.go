package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/flightgw/flightgw/codec/paimon"
)

// runMessages implements `flightgw messages`, the debugging tool for Paimon commit-message
// payloads (docs/commit-messages.md): inspect prints one as JSON, encode builds one from
// that JSON. It returns the process exit code: 0 on success, 1 on failure, 2 on misuse.
func runMessages(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprintln(stderr, `usage: flightgw messages inspect [--version N] [--partition-types T1,T2,...] FILE
       flightgw messages encode [--version N] [--envelope] < JSON > FILE
versions: `+fmt.Sprint(paimon.SupportedVersions)+fmt.Sprintf(" (default %d)", paimon.DefaultVersion))
	}
	if len(args) == 0 {
		usage()
		return 2
	}
	switch args[0] {
	case "inspect":
		return messagesInspect(args[1:], stdout, stderr)
	case "encode":
		return messagesEncode(args[1:], stdin, stdout, stderr)
	case "-h", "-help", "--help", "help":
		usage()
		return 0
	}
	fmt.Fprintf(stderr, "flightgw messages: unknown subcommand %q\n", args[0])
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

func messagesInspect(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("messages inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.Int("version", 0, "serializer version of a raw payload (default: the envelope's, else the newest)")
	partTypes := fs.String("partition-types", "", "comma-separated partition field types, to print typed partition values")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flightgw messages inspect [--version N] [--partition-types T1,T2,...] FILE")
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
		fmt.Fprintf(stderr, "flightgw messages inspect: %v\n", err)
		return 1
	}
	v, msgs, err := paimon.Open(data, *version)
	if err != nil {
		fmt.Fprintf(stderr, "flightgw messages inspect: %s: %v\n", fs.Arg(0), err)
		return 1
	}
	doc := paimon.ToDocument(v, msgs)
	if *partTypes != "" {
		types := splitTypes(*partTypes)
		for i := range doc.Messages {
			if err := doc.Messages[i].Partition.Annotate(types); err != nil {
				fmt.Fprintf(stderr, "flightgw messages inspect: message %d partition: %v\n", i, err)
				return 1
			}
		}
	}
	if err := paimon.WriteJSON(stdout, doc); err != nil {
		fmt.Fprintf(stderr, "flightgw messages inspect: %v\n", err)
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

func messagesEncode(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("messages encode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.Int("version", 0, "serializer version to write (default: the JSON's \"version\", else the newest)")
	envelope := fs.Bool("envelope", false, "wrap the payload in the transport envelope")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flightgw messages encode [--version N] [--envelope] < JSON > FILE")
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
		fmt.Fprintf(stderr, "flightgw messages encode: %v\n", err)
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
		fmt.Fprintf(stderr, "flightgw messages encode: %v\n", err)
		return 1
	}
	out, err := paimon.EncodeList(v, msgs)
	if err == nil && *envelope {
		out, err = paimon.Wrap(v, out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "flightgw messages encode: %v\n", err)
		return 1
	}
	if _, err := io.Copy(stdout, bytes.NewReader(out)); err != nil {
		fmt.Fprintf(stderr, "flightgw messages encode: %v\n", err)
		return 1
	}
	return 0
}
