//go:build tools

// Package deps pins the chosen dependencies while the tree is being built.
package main

import (
	_ "github.com/cenkalti/backoff/v4"
	_ "github.com/creack/pty"
	_ "github.com/nats-io/jwt/v2"
	_ "github.com/nats-io/nats-server/v2/server"
	_ "github.com/nats-io/nats.go"
	_ "github.com/nats-io/nats.go/jetstream"
	_ "github.com/nats-io/nkeys"
	_ "github.com/vmihailenco/msgpack/v5"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
)

func main() {}
