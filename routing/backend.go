package routing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/outposthq/outpost/delivery"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// Backend is where a session's operations run: every operation of a
// session goes through the Backend its pointer names.
type Backend interface {
	// Agent is the agent the backend runs on.
	Agent() subjects.Agent
	// Call runs op with body and decodes the result into out (may be nil).
	// opts carries the session and epoch; errors are *wire.Error, and
	// rpc.MaybeDelivered tells whether the agent may have run op.
	Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error
	// Ready returns nil when the backend can serve now, else a 503
	// *wire.Error saying why not.
	Ready(ctx context.Context) error
}

// Dialer makes the Backend of one agent.
type Dialer func(ag subjects.Agent) Backend

// RPCDialer dials agents through c, with pings bounded by readyTimeout.
func RPCDialer(c *rpc.Client, readyTimeout time.Duration) Dialer {
	return func(ag subjects.Agent) Backend {
		return &rpcBackend{rpc: c, ag: ag, readyTimeout: readyTimeout}
	}
}

// rpcBackend is an agent reached through the rpc client.
type rpcBackend struct {
	rpc          *rpc.Client
	ag           subjects.Agent
	readyTimeout time.Duration
}

func (b *rpcBackend) Agent() subjects.Agent { return b.ag }

func (b *rpcBackend) Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error {
	return b.rpc.Call(ctx, b.ag, op, body, out, opts)
}

// Ready pings the agent: an answer within readyTimeout is the only proof
// that it serves now. No responders is 503 at once; silence (a frozen
// machine) is 503 not_responding.
func (b *rpcBackend) Ready(ctx context.Context) error {
	var res wire.PingResult
	err := b.rpc.Call(ctx, b.ag, wire.OpPing, nil, &res, rpc.CallOptions{Timeout: b.readyTimeout})
	if err == nil {
		return nil
	}
	if errors.Is(err, wire.ErrUnavailable) {
		return err
	}
	if errors.Is(err, wire.ErrDeadlineExceeded) && ctx.Err() == nil {
		return wire.Errorf(wire.CodeUnavailable, wire.ReasonNotResponding, "agent %s did not answer a ping within %s", b.ag, b.readyTimeout)
	}
	return wire.Errorf(wire.CodeUnavailable, wire.ReasonNotResponding, "agent %s cannot serve: %v", b.ag, err)
}

// notRun reports whether err proves the agent did not run the request
// (the delivery rule: delivery.NotRun).
func notRun(err error) bool { return delivery.NotRun(err) }

// outcomeUnknown is the answer to a mutation that raced a swap.
func outcomeUnknown(op string, from Route, toEpoch uint64, cause error) error {
	msg := "ran"
	if cause != nil {
		msg = fmt.Sprintf("ended with %q", wire.AsError(cause).Error())
	}
	return wire.Errorf(wire.CodeConflict, wire.ReasonOutcomeUnknown,
		"%s was sent to backend %s (agent %s) at epoch %d and %s while the session moved to epoch %d; it was not replayed",
		op, from.Backend, from.Agent, from.Epoch, msg, toEpoch)
}
