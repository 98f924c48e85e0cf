// Package enroll is everything about agent credentials: the control plane's
// signing authority (operator → account → user JWTs for NATS decentralized
// auth), single-use enrollment tokens and API keys stored only as hashes, the
// agent's config file on disk, and the enrollment call an agent makes.
//
// Trust layout:
//
//	operator (Authority, persisted)
//	├── system account "SYS"       — SystemCreds: pushes account updates
//	└── app account "OUTPOST"      — JetStream enabled; revocations live here
//	    ├── control-plane user     — ServiceCreds: full permissions
//	    └── one user per agent     — IssueAgentJWT: agent.<ws>.<agent>.> only
//
// An agent's key pair is made on its own machine (Enroll); only the public key
// ever leaves it. Revoking an agent means re-signing the app account with the
// agent's public key in its revocation list (AccountJWT) and pushing it to the
// servers (PushAccount): the server closes the live connection at once and
// refuses reconnects.
package enroll
