package wire

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseBulkAuth(t *testing.T) {
	sig := bytes.Repeat([]byte{0xa5}, 64)
	a, err := ParseBulkAuth("bTICKET2", EncodeBulkSignature(sig))
	if err != nil || a.Ticket != "bTICKET2" || !bytes.Equal(a.Signature, sig) {
		t.Fatalf("got %+v, %v", a, err)
	}
	for _, tc := range []struct{ name, ticket, sig string }{
		{"no ticket", "", "AAAA"},
		{"ticket with a slash", "b/1", "AAAA"},
		{"ticket with a space", "b 1", "AAAA"},
		{"long ticket", strings.Repeat("b", MaxTicketLen+1), "AAAA"},
		{"no signature", "b1", ""},
		{"signature not base64url", "b1", "a+b/"},
		{"long signature", "b1", strings.Repeat("A", maxSignatureLen+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseBulkAuth(tc.ticket, tc.sig); AsError(err).Code != CodeUnauthenticated {
				t.Fatalf("got %v, want unauthenticated", err)
			}
		})
	}
}

// TestBulkSignedIsBound: the signed bytes name the workspace, the agent and
// the ticket, and no two different triples share them.
func TestBulkSignedIsBound(t *testing.T) {
	a := BulkSigned("w1", "a1", "b1")
	for _, b := range [][]byte{BulkSigned("w1", "a1", "b2"), BulkSigned("w1", "a2", "b1"), BulkSigned("w2", "a1", "b1"),
		BulkSigned("w1a", "1", "b1")} {
		if bytes.Equal(a, b) {
			t.Fatalf("%q signs the same bytes as another triple", b)
		}
	}
}

// FuzzParseBulkAuth reads arbitrary upgrade headers: never a panic; what
// parses is a valid ticket and a signature no longer than its header.
func FuzzParseBulkAuth(f *testing.F) {
	f.Add("bTICKET2", EncodeBulkSignature(bytes.Repeat([]byte{1}, 64)))
	f.Add("b1", "")
	f.Add("", "AAAA")
	f.Add("b\x00", "AAAA")
	f.Add(strings.Repeat("z", MaxTicketLen), strings.Repeat("_", maxSignatureLen))
	f.Add("b1", " AAAA ")
	f.Fuzz(func(t *testing.T, ticket, sig string) {
		a, err := ParseBulkAuth(ticket, sig)
		if err != nil {
			if AsError(err).Code != CodeUnauthenticated {
				t.Fatalf("error without the unauthenticated code: %v", err)
			}
			return
		}
		if ValidTicket(a.Ticket) != nil || len(a.Signature) > len(sig) {
			t.Fatalf("parsed %+v from %q, %q", a, ticket, sig)
		}
	})
}
