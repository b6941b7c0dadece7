// Package replies owns a client's replies on their way out: held until
// their turn when they come out of command order (Held: each reply owed has
// a sequence number, and a reply that comes before an earlier one waits
// here), then queued for the client's socket in fixed-size chunks reused
// from a pool (Queue), which the socket takes as it can.
//
// It holds bytes and counts them; it must not write to a socket, decide
// when a client is over its output limit, or know what a reply says: the
// session does those (proxy/deliver.go), under its own lock. Neither type
// is safe for concurrent use.
package replies
