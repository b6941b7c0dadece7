package keyspec

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves goroutines behind (a go-redis
// client not closed, a server watcher still running).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
