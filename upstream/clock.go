package upstream

import "time"

// clockBase anchors MonoNow: Go's monotonic clock, read as nanoseconds.
var clockBase = time.Now()

// MonoNow is nanoseconds on the monotonic clock, never 0 (Pend.Sent).
func MonoNow() int64 { return int64(time.Since(clockBase)) + 1 }
