package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Watch calls GET {target}/fs/watch and calls f for every event until f
// returns an error, ctx ends or the stream breaks (the error says which).
// after > 0 resumes after that seq (Last-Event-ID); resume with the Seq of
// the last event f saw. An `event: reset` comes as a WatchEvent with
// Reset set.
func (t *Target) Watch(ctx context.Context, path string, recursive bool, after uint64, f func(WatchEvent) error) error {
	q := url.Values{"path": {path}, "recursive": {strconv.FormatBool(recursive)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.c.BaseURL+t.prefix+"/fs/watch?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(after, 10))
	}
	resp, err := t.c.send(ctx, req)
	if err != nil {
		return fmt.Errorf("watch %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return decodeError(resp)
	}
	return readWatch(resp.Body, f)
}

// readWatch parses the watch's event stream.
func readWatch(r io.Reader, f func(WatchEvent) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var ev WatchEvent
	var kind, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			switch kind {
			case "reset":
				ev.Reset = true
			case "error":
				var body ErrorBody
				if json.Unmarshal([]byte(data), &body) == nil && body.Error != nil {
					return body.Error.Err()
				}
				return fmt.Errorf("watch: %s", data)
			case "":
				if data == "" {
					continue
				}
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					return fmt.Errorf("watch: bad event %q: %w", data, err)
				}
			}
			if err := f(ev); err != nil {
				return err
			}
			ev, kind, data = WatchEvent{}, "", ""
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				ev.Seq, _ = strconv.ParseUint(value, 10, 64)
			case "event":
				kind = value
			case "data":
				data += value
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	return errors.New("watch stream ended")
}
