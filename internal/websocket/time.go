package websocket

import "time"

// timeZero clears a deadline.
var timeZero time.Time
