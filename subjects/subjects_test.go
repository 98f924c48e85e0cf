package subjects

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidateID(t *testing.T) {
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"simple", "a1", true},
		{"dash and underscore", "my-laptop_2", true},
		{"max length", strings.Repeat("a", 63), true},
		{"too long", strings.Repeat("a", 64), false},
		{"empty", "", false},
		{"leading dash", "-a", false},
		{"leading underscore", "_a", false},
		{"upper", "Laptop", false},
		{"dot", "a.b", false},
		{"star", "a*", false},
		{"gt", "a>", false},
		{"space", "a b", false},
		{"slash", "a/b", false},
		{"nul", "a\x00", false},
		{"unicode", "é", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateID(tt.id)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidateID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidID) {
				t.Fatalf("error %v is not ErrInvalidID", err)
			}
		})
	}
}

func TestBuilders(t *testing.T) {
	a := Agent{Workspace: "ws1", ID: "laptop"}
	tests := []struct {
		name string
		got  func() (string, error)
		want string
	}{
		{"rpc", a.RPC, "agent.ws1.laptop.rpc"},
		{"wildcard", a.Wildcard, "agent.ws1.laptop.>"},
		{"inbox", a.Inbox, "agent.ws1.laptop._inbox"},
		{"hello", func() (string, error) { return a.Subject(KindHello) }, "agent.ws1.laptop.hello"},
		{"all heartbeats", func() (string, error) { return AllEvents(KindHeartbeat) }, "agent.*.*.heartbeat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.got()
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	bad := Agent{Workspace: "ws.1", ID: "x"}
	if _, err := bad.RPC(); err == nil {
		t.Fatal("RPC with a dotted workspace succeeded")
	}
	if _, err := a.Subject("a.b"); err == nil {
		t.Fatal("Subject with a dotted kind succeeded")
	}
	if _, err := a.Subject(">"); err == nil {
		t.Fatal("Subject with a wildcard kind succeeded")
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		subject string
		agent   Agent
		rest    string
		ok      bool
	}{
		{"agent.ws.a1.rpc", Agent{"ws", "a1"}, "rpc", true},
		{"agent.ws.a1.proc.p1.out", Agent{"ws", "a1"}, "proc.p1.out", true},
		{"agent.ws.a1", Agent{}, "", false},
		{"agent.WS.a1.rpc", Agent{}, "", false},
		{"other.ws.a1.rpc", Agent{}, "", false},
		{"agent.ws.a1.rpc..x", Agent{}, "", false},
		{"agent.*.a1.rpc", Agent{}, "", false},
		{"agent.ws.a1.>", Agent{}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.subject, func(t *testing.T) {
			a, rest, err := Parse(tt.subject)
			if (err == nil) != tt.ok {
				t.Fatalf("Parse(%q) err = %v, want ok=%v", tt.subject, err, tt.ok)
			}
			if tt.ok && (a != tt.agent || rest != tt.rest) {
				t.Fatalf("Parse(%q) = %v %q, want %v %q", tt.subject, a, rest, tt.agent, tt.rest)
			}
		})
	}
}

func TestAgentPermissions(t *testing.T) {
	p, err := AgentPermissions(Agent{"ws", "a1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.PubAllow) != 1 || p.PubAllow[0] != "agent.ws.a1.>" {
		t.Fatalf("PubAllow = %v", p.PubAllow)
	}
	if want := []string{"agent.ws.a1.rpc", "agent.ws.a1._inbox.>"}; !slices.Equal(p.SubAllow, want) {
		t.Fatalf("SubAllow = %v, want %v", p.SubAllow, want)
	}
	for _, s := range append(p.PubAllow, p.SubAllow...) {
		if strings.HasPrefix(s, "_INBOX") || s == ">" {
			t.Fatalf("permission %q is too broad", s)
		}
	}
	if _, err := AgentPermissions(Agent{"ws", "*"}); err == nil {
		t.Fatal("permissions for a wildcard agent id")
	}
}

func FuzzBuildParse(f *testing.F) {
	for _, s := range []string{"a1", "ws", "my-laptop_2", "A", "a.b", "", "*", ">"} {
		f.Add(s, "x1", "rpc")
	}
	f.Fuzz(func(t *testing.T, ws, id, kind string) {
		a := Agent{Workspace: ws, ID: id}
		subj, err := a.Subject(kind)
		if err != nil {
			return
		}
		got, rest, err := Parse(subj)
		if err != nil {
			t.Fatalf("Parse(%q) of a built subject: %v", subj, err)
		}
		if got != a || rest != kind {
			t.Fatalf("round trip %v %q -> %q -> %v %q", a, kind, subj, got, rest)
		}
	})
}

func TestReply(t *testing.T) {
	tests := []struct {
		name         string
		agent        Agent
		owner, token string
		want         string
		wantErr      bool
	}{
		{name: "ok", agent: Agent{"ws", "a1"}, owner: "cp1", token: "7", want: "agent.ws.a1.reply.cp1.7"},
		{name: "owner with a dot", agent: Agent{"ws", "a1"}, owner: "cp.x", token: "7", wantErr: true},
		{name: "wildcard token", agent: Agent{"ws", "a1"}, owner: "cp1", token: "*", wantErr: true},
		{name: "empty token", agent: Agent{"ws", "a1"}, owner: "cp1", wantErr: true},
		{name: "bad agent", agent: Agent{"ws", "A1"}, owner: "cp1", token: "7", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.agent.Reply(tt.owner, tt.token)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("Reply = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
			if err != nil {
				return
			}
			a, rest, err := Parse(got)
			if err != nil || a != tt.agent || rest != "reply."+tt.owner+"."+tt.token {
				t.Fatalf("Parse(%q) = %v %q %v", got, a, rest, err)
			}
		})
	}
	all, err := AllReplies("cp1")
	if err != nil || all != "agent.*.*.reply.cp1.*" {
		t.Fatalf("AllReplies = %q, %v", all, err)
	}
	if _, err := AllReplies("c>"); err == nil {
		t.Fatal("AllReplies accepted a wildcard owner")
	}
}

func TestAccountDisconnects(t *testing.T) {
	const acc = "ADLPMHNFXPJFC5DDBQHMHXNUOQ2LLWYLYOPYFNEVNWVZZ5IVIO2HLRZE"
	got, err := AccountDisconnects(acc)
	if err != nil || got != "$SYS.ACCOUNT."+acc+".DISCONNECT" {
		t.Fatalf("AccountDisconnects = %q, %v", got, err)
	}
	back, err := ParseAccountDisconnects(got)
	if err != nil || back != acc {
		t.Fatalf("ParseAccountDisconnects(%q) = %q, %v", got, back, err)
	}
	for _, bad := range []string{"", "acc", "*", ">", acc[:55], "U" + acc[1:], acc[:55] + "1", acc[:20] + "." + acc[21:]} {
		if s, err := AccountDisconnects(bad); err == nil {
			t.Errorf("AccountDisconnects(%q) = %q, want an error", bad, s)
		}
	}
	for _, bad := range []string{"$SYS.ACCOUNT." + acc + ".CONNECT", "$SYS.ACCOUNT.*.DISCONNECT", "agent.w.a.hello", "$SYS.ACCOUNT." + acc + ".DISCONNECT.x"} {
		if a, err := ParseAccountDisconnects(bad); err == nil {
			t.Errorf("ParseAccountDisconnects(%q) = %q, want an error", bad, a)
		}
	}
}

func TestAgentTags(t *testing.T) {
	ag := Agent{Workspace: "w1", ID: "laptop"}
	got, err := ParseAgentTags(AgentTags(ag))
	if err != nil || got != ag {
		t.Fatalf("ParseAgentTags(AgentTags(%v)) = %v, %v", ag, got, err)
	}
	tests := []struct {
		tags []string
		want Agent
		ok   bool
	}{
		{[]string{"agent:laptop", "team:x", "ws:w1"}, ag, true},
		{[]string{"ws:w1"}, Agent{}, false},
		{[]string{"agent:laptop"}, Agent{}, false},
		{[]string{"ws:w1", "agent:laptop", "agent:desk"}, Agent{}, false},
		{[]string{"ws:w1", "agent:lap top"}, Agent{}, false},
		{[]string{"ws:w.1", "agent:laptop"}, Agent{}, false},
		{nil, Agent{}, false},
	}
	for _, tt := range tests {
		got, err := ParseAgentTags(tt.tags)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseAgentTags(%q) = %v, %v; want %v, ok %v", tt.tags, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzAgentTags(f *testing.F) {
	f.Add("w1", "laptop")
	f.Add("w1", "lap top")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, ws, id string) {
		ag := Agent{Workspace: ws, ID: id}
		got, err := ParseAgentTags(AgentTags(ag))
		if (err == nil) != (ag.Validate() == nil) {
			t.Fatalf("ParseAgentTags(AgentTags(%v)): %v, but Validate: %v", ag, err, ag.Validate())
		}
		if err == nil && got != ag {
			t.Fatalf("ParseAgentTags(AgentTags(%v)) = %v", ag, got)
		}
	})
}
