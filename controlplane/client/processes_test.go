package client

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/outposthq/outpost/wire"
)

// sseTests are the table of events streams; FuzzReadEvents seeds from them.
var sseTests = []struct {
	name      string
	stream    string
	wantKinds string
	wantErr   func(error) bool
}{
	{"complete", "id: 1\nevent: output\ndata: {\"seq\":1,\"stream\":\"stdout\",\"data\":\"aGk=\"}\n\n" +
		": keepalive\n\nid: 2\nevent: exit\ndata: {\"exitCode\":3}\n\nid: 3\nevent: closed\ndata: {\"exitCode\":3}\n\n",
		"output,exit,closed", nil},
	{"crlf", "id: 4\r\nevent: closed\r\ndata: {\"exitCode\":0}\r\n\r\n", "closed", nil},
	{"broken off", "id: 1\nevent: output\ndata: {\"seq\":1,\"stream\":\"pty\",\"data\":\"\"}\n\n", "output", IsStreamEnded},
	{"error event", "event: error\ndata: {\"error\":{\"code\":\"not_found\",\"reason\":\"\",\"message\":\"gone\",\"retryable\":false}}\n\n", "",
		func(err error) bool { return errors.Is(err, wire.ErrNotFound) }},
	{"error event, flat", "event: error\ndata: {\"code\":\"unavailable\",\"reason\":\"agent_offline\",\"message\":\"gone\",\"retryable\":true}\n\n", "",
		func(err error) bool {
			var we *wire.Error
			return errors.As(err, &we) && we.Code == wire.CodeUnavailable && we.Reason == wire.ReasonAgentOffline && we.Retryable
		}},
	{"error event, unknown shape", "event: error\ndata: {\"what\":1}\n\n", "", func(err error) bool { return err != nil && !IsStreamEnded(err) }},
	{"bad json", "id: 1\nevent: output\ndata: {\n\n", "", func(err error) bool { return err != nil && !IsStreamEnded(err) }},
	{"split data", "id: 6\nevent: exit\ndata: {\"exitCode\":\ndata: 2}\n\nid: 7\nevent: closed\ndata: {\"exitCode\":2}\n\n", "exit,closed", nil},
	{"two values", "id: 8\nevent: output\ndata: {\"seq\":8,\"stream\":\"stdout\",\"data\":\"\"}\ndata: {}\n\n", "", func(err error) bool { return err != nil && !IsStreamEnded(err) }},
	{"other field order", "id: 5\nevent: output\ndata: {\"data\":\"aGk=\",\"stream\":\"stderr\",\"seq\":5}\n\n", "output", IsStreamEnded},
}

func TestReadEvents(t *testing.T) {
	for _, tt := range sseTests {
		t.Run(tt.name, func(t *testing.T) {
			var kinds []string
			err := readEvents(strings.NewReader(tt.stream), func(ev ProcessEvent) error {
				kinds = append(kinds, ev.Kind)
				return nil
			})
			if got := strings.Join(kinds, ","); got != tt.wantKinds {
				t.Errorf("kinds %q, want %q", got, tt.wantKinds)
			}
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !tt.wantErr(err) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

// FuzzReadEvents feeds arbitrary bytes to the events parser: it never
// panics, and it delivers nothing after closed.
func FuzzReadEvents(f *testing.F) {
	for _, tt := range sseTests {
		f.Add([]byte(tt.stream))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		closed := false
		_ = readEvents(strings.NewReader(string(data)), func(ev ProcessEvent) error {
			if closed {
				t.Fatalf("event %q after closed", ev.Kind)
			}
			closed = ev.Kind == EventClosed
			if ev.Kind == EventOutput && ev.Chunk == nil || (ev.Kind == EventExit || ev.Kind == EventClosed) && ev.Exit == nil {
				t.Fatalf("event %q without its data", ev.Kind)
			}
			return nil
		})
	})
}

func TestParseOutputMatchesJSON(t *testing.T) {
	for _, data := range []string{
		`{"seq":1,"stream":"stdout","data":"aGk="}`,
		`{"seq":18446744073709551615,"stream":"pty","data":"","dropped":12}`,
		`{"seq":2,"stream":"st\\u0065rr","data":"aGk="}`,
		`{"seq":3,"stream":"stdout","data":"!!"}`,
		`{"seq":4,"stream":"stdout","data":"aGk=","extra":1}`,
	} {
		fast, ok := parseOutput([]byte(data))
		var slow ProcessChunk
		err := json.Unmarshal([]byte(data), &slow)
		if ok && (err != nil || fast.Seq != slow.Seq || fast.Stream != slow.Stream || string(fast.Data) != string(slow.Data) || fast.Dropped != slow.Dropped) {
			t.Errorf("%s: fast %+v, encoding/json %+v (%v)", data, fast, slow, err)
		}
	}
}
