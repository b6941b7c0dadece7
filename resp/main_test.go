package resp

import (
	"testing"

	"go.uber.org/goleak"
)

// The codec must not start goroutines; the tests' own helpers must finish.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
