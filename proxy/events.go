package proxy

import "github.com/lockproxy/lockproxy/telemetry"

// Event and Outcome are telemetry's: the proxy's API names them here so that
// callers of Proxy.Events need not import telemetry.
type (
	Event   = telemetry.Event
	Outcome = telemetry.Outcome
)

const (
	OutcomeRewritten          = telemetry.OutcomeRewritten
	OutcomeRefused            = telemetry.OutcomeRefused
	OutcomeObserved           = telemetry.OutcomeObserved
	OutcomeSuccessorPrevented = telemetry.OutcomeSuccessorPrevented
	OutcomeSuccessorDeleted   = telemetry.OutcomeSuccessorDeleted
	OutcomeFlushed            = telemetry.OutcomeFlushed
	OutcomeStaleRefused       = telemetry.OutcomeStaleRefused
)
