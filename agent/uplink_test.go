package agent

import (
	"testing"
	"time"
)

// TestUplinkSizesReplies: replies are sized to about a second of the rate
// the reads show, never above what was asked nor below minReply; small
// replies and late reads are no samples.
func TestUplinkSizesReplies(t *testing.T) {
	const asked = 1 << 20
	type read struct {
		after time.Duration // since the previous reply was sent
		sent  int           // the reply's size (what limit allowed, or less)
		want  int           // what limit allows
	}
	// drain is what a rate of bytes per second allows.
	drain := func(rate float64) int { return max(minReply, int(rate*replyDrain.Seconds())) }
	slow := drain(firstReply / 4.0) // after firstReply took 4 s
	tests := []struct {
		name  string
		reads []read
	}{
		{"first reply before any sample", []read{{want: firstReply}}},
		{"a fast link lifts the cap to what was asked", []read{
			{want: firstReply, sent: firstReply},
			{after: 10 * time.Millisecond, want: asked}}},
		{"256 KB/s: replyDrain of it", []read{
			{want: firstReply, sent: firstReply},
			{after: time.Second, want: drain(firstReply), sent: drain(firstReply)},
			{after: replyDrain, want: drain(firstReply)}}},
		{"a slower link: smaller replies, samples averaged", []read{
			{want: firstReply, sent: firstReply},
			{after: 4 * time.Second, want: slow, sent: slow},
			{after: 4 * time.Second, want: drain((firstReply/4.0 + float64(slow)/4) / 2)}}},
		{"never below minReply", []read{
			{want: firstReply, sent: minReply},
			{after: 4 * time.Second, want: minReply}}},
		{"small replies are no samples", []read{
			{want: firstReply, sent: 100},
			{after: 3 * time.Second, want: firstReply, sent: minReply - 1},
			{after: 3 * time.Second, want: firstReply}}},
		{"a reader back later is no sample", []read{
			{want: firstReply, sent: firstReply},
			{after: time.Minute, want: firstReply}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u uplink
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			for i, r := range tt.reads {
				now = now.Add(r.after)
				if got := u.limit("p1", now, asked); got != r.want {
					t.Fatalf("read %d: limit %d, want %d", i, got, r.want)
				}
				u.sent("p1", now, r.sent)
			}
		})
	}
	var u uplink
	if got := u.limit("p1", time.Now(), 1000); got != 1000 {
		t.Errorf("limit %d, want what was asked (1000) when it is less", got)
	}
}
