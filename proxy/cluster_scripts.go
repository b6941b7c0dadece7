package proxy

import "github.com/lockproxy/lockproxy/rewrite"

// firstUse reports, once per node in front of a cluster (once in all in
// front of one primary), that the wrapper of a client's script is sent
// for the first time: it goes as EVAL, which loads it into that node's
// script cache. Each node has a cache of its own: a wrapper first sent to
// one node, then as EVALSHA to another, met NOSCRIPT there, which a
// pipelining client (valkey-go, valkeylock) got as an error, since a
// retry as EVAL would overtake its commands in flight.
func (s *session) firstUse(sc *rewrite.Script) bool {
	if s.p.cl == nil || sc.Client == "" {
		return sc.FirstUse()
	}
	type sent struct{ node, sha string }
	_, loaded := s.p.cl.wrappersSent.LoadOrStore(sent{s.node, sc.SHA}, struct{}{})
	return !loaded
}
