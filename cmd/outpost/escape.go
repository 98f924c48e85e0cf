package main

// escapeAction is what a typed escape sequence asks for.
type escapeAction int

const (
	escapeNone       escapeAction = iota
	escapeDisconnect              // ~.
	escapeHelp                    // ~?
)

// escapeHelpText is what ~? prints (raw terminal: \r\n).
const escapeHelpText = "Supported escape sequences:\r\n" +
	"  ~.  - disconnect (the remote process is hung up after the grace unless re-attached)\r\n" +
	"  ~?  - this message\r\n" +
	"  ~~  - send the escape character by typing it twice\r\n" +
	"(Note that escapes are only recognized immediately after newline.)\r\n"

// escapes finds ssh's escape sequences in typed input: '~' right after a
// newline (or at the start) followed by '.', '?' or '~'. Any other byte
// after the '~' sends both.
type escapes struct {
	midLine bool // the last byte typed was not a newline
	tilde   bool // a '~' at a line start waits for the next byte
}

// filter returns what of in goes to the remote, appended to dst[:0]
// (the caller's buffer, reused: no allocation a keystroke), and the first
// action typed; the input after an action's sequence is still returned to
// send.
func (e *escapes) filter(dst, in []byte) (out []byte, act escapeAction) {
	out = dst[:0]
	for _, b := range in {
		switch {
		case e.tilde:
			e.tilde = false
			switch b {
			case '.':
				return out, escapeDisconnect
			case '?':
				if act == escapeNone {
					act = escapeHelp
				}
				e.midLine = true
				continue
			case '~':
				out = append(out, '~')
			default:
				out = append(out, '~', b)
			}
		case b == '~' && !e.midLine:
			e.tilde = true
			continue
		default:
			out = append(out, b)
		}
		e.midLine = b != '\r' && b != '\n'
	}
	return out, act
}
