// Package routing runs operations through sessions: named backends, an
// active pointer with an epoch kept in JetStream KV, and hot-swap.
//
// A session names its backends ("laptop": one enrolled agent; "cloud": any
// agent of a pool) and points at one of them. Every operation reads the
// pointer, runs on that backend carrying the session's epoch, and reads the
// pointer again afterwards:
//
//   - if the pointer did not move, the result stands;
//   - if it moved, a read is run again on the new backend (a bounded number
//     of times), while a mutation is never replayed: unless the old backend
//     surely did not run it (no responders, or its fence refused the stale
//     epoch), it answers conflict/outcome_unknown.
//
// A swap is a compare-and-swap on the KV revision that bumps the epoch. It
// refuses a target that cannot serve now (503), so nobody commits a pointer
// nobody can use, and after committing it tells the old backend and the
// new one the new epoch: their fences then refuse work sent at the old one,
// and the new one's stops a restore still under way there at the old one.
// A swap with a carry (SwapOptions.Carry) restores the workspace onto the
// target first, at the epoch it read; if another swap moves the pointer
// meanwhile, the carry fails with conflict/epoch_mismatch and its restore
// writes nothing on the target after a request at the newer epoch ran
// there (the target's fence, held by each step of the restore: package
// delivery, AdmitHeld).
//
// An agent backend is never replaced: offline, it answers 503. A pool
// backend claims one agent of its pool with a lease in KV and keeps it until
// the session is deleted; only when the claimed agent is gone for good
// (offline past its reconnect window, or revoked) does the session claim
// another. A clean goodbye does not shorten the window: a pool agent that
// restarts keeps its sessions, whose calls answer 503 meanwhile.
//
// Rules where the contract is silent:
//
//   - Retries follow the delivery rule (wire/PROTOCOL.md "Delivery",
//     package delivery): a call that surely did not run may be sent again;
//     one that may have run is retried only if it is a read and the
//     pointer moved. On an unmoved pointer nothing is retried, except that
//     a pool backend whose agent is gone for good claims another first.
//   - If the pointer cannot be read again after a mutation, the mutation's
//     outcome is unknown too (conflict/outcome_unknown).
//   - An Idempotency-Key is remembered by the agent that ran the mutation,
//     not by the session: sending an outcome_unknown mutation again with the
//     same key is safe only on that agent (ask it through its agent target).
//   - A swap to the active backend changes nothing: no epoch, no transition.
//   - A session may be created on an agent backend that is offline (a
//     laptop asleep); its calls answer 503 until it is back.
//   - Transitions keep the latest MaxTransitions moves, each with the agent
//     behind the new backend; a pool backend that replaced its agent moves
//     from itself to itself.
//   - Outpost-Backend and Outpost-Epoch report where the last try ran, on
//     errors too.
//   - A 503 given because the agent's presence lapsed while a call waited
//     comes no sooner than the request's start-by time (the delivery rule,
//     rule 2): the request ran before it or never. A mutation it answers
//     may have run; ask the agent once it is back, as for outcome_unknown.
//
// The control plane is the first user: it serves every target operation
// under /v1/workspaces/{ws}/sessions/{session}. Other programs embed a
// Router the same way, with their own KV buckets, rpc client, presence
// tracker and Directory of enrolled agents.
package routing
