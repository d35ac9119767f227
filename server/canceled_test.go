package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestClientGone: the raw context errors a stream writer returns when
// the client went away become Canceled (DeadlineExceeded for the
// client's deadline); a status a handler chose, and an error of a call
// whose client is still there, are kept.
func TestClientGone(t *testing.T) {
	live := context.Background()
	gone, cancel := context.WithCancel(live)
	cancel()
	late, cancel2 := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancel2()
	cases := []struct {
		name string
		ctx  context.Context
		err  error
		want codes.Code
	}{
		{"ok", gone, nil, codes.OK},
		{"context.Canceled from the writer", gone, context.Canceled, codes.Canceled},
		{"wrapped context.Canceled", gone, fmt.Errorf("send batch: %w", context.Canceled), codes.Canceled},
		{"io.EOF once the client left", gone, io.EOF, codes.Canceled},
		{"deadline", late, context.DeadlineExceeded, codes.DeadlineExceeded},
		{"canceled by the deadline", late, context.Canceled, codes.DeadlineExceeded},
		{"a status the handler chose", gone, status.Error(codes.InvalidArgument, "bad"), codes.InvalidArgument},
		{"a server error, client still there", live, errors.New("boom"), codes.Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := clientGone(c.ctx, c.err)
			if got := status.Code(err); got != c.want {
				t.Fatalf("code %v (%v), want %v", got, err, c.want)
			}
			if c.err != nil && c.want != codes.Unknown && status.Convert(err).Message() == "" {
				t.Errorf("no text for %v", c.err)
			}
		})
	}
}
