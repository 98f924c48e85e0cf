package wire

// Op names. Dotted names group an area; every op is listed in Ops.
const (
	OpCapabilities = "capabilities"
	OpPing         = "ping"
	OpExec         = "exec"
	// OpProbe is sent by a starting daemon on its own rpc subject to find out
	// whether another daemon already serves the identity.
	OpProbe = "probe"
)

// OpInfo says how the router may treat an op.
type OpInfo struct {
	// Mutates is true for ops that change the machine; they are never
	// replayed after an ambiguous failure.
	Mutates bool
}

// Ops is every op this protocol version defines.
var Ops = map[string]OpInfo{
	OpCapabilities: {},
	OpPing:         {},
	OpProbe:        {},
	OpExec:         {Mutates: true},
}

// Mutates reports whether op changes the machine. Unknown ops are treated as
// mutations, the safe side.
func Mutates(op string) bool {
	info, ok := Ops[op]
	return !ok || info.Mutates
}

// RegisterOp adds an op to Ops; packages that add ops call it from init.
func RegisterOp(op string, info OpInfo) { Ops[op] = info }
