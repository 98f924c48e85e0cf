package agent

import (
	"reflect"
	"testing"
)

const procNetTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0000000000000000 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1 0000000000000000 100 0 0 10 0
   2: 0A00020F:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 333 1 0000000000000000 100 0 0 10 0
   3: 0100007F:1F90 0100007F:A000 01 00000000:00000000 00:00000000 00000000  1000        0 444 1 0000000000000000 100 0 0 10 0
`

const procNetTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1435 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 555 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:0BB8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 666 1 0000000000000000 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:0BB9 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 777 1 0000000000000000 100 0 0 10 0
   3: 000080FE00000000FF005450B6AD1DFE:0BBA 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 888 1 0000000000000000 100 0 0 10 0
`

func TestParseProcNetTCP(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []listenSocket
	}{
		{name: "ipv4: loopback and wildcard listeners, not other addresses or connections", text: procNetTCP, want: []listenSocket{
			{addr: "127.0.0.1", port: 8080, inode: "111"}, {addr: "0.0.0.0", port: 22, inode: "222"},
		}},
		{name: "ipv6: ::1, ::, mapped loopback; not link-local", text: procNetTCP6, want: []listenSocket{
			{addr: "::1", port: 5173, inode: "555"}, {addr: "::", port: 3000, inode: "666"}, {addr: "127.0.0.1", port: 3001, inode: "777"},
		}},
		{name: "garbage", text: "x\n 0: zz:zz 0 0A a b c d e f\n 1: 0100007F:ZZZZ 0 0A a b c d e f\n", want: nil},
		{name: "empty", text: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseProcNetTCP(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func FuzzParseProcNetTCP(f *testing.F) {
	f.Add(procNetTCP)
	f.Add(procNetTCP6)
	f.Add("h\n 0: 0100007F: x 0A a b c d e f g")
	f.Fuzz(func(t *testing.T, text string) {
		for _, s := range parseProcNetTCP(text) {
			if s.port < 1 || s.port > 65535 || s.addr == "" {
				t.Fatalf("parsed %+v", s)
			}
		}
	})
}
