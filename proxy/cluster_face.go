package proxy

import (
	"net"
	"strconv"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/resp"
)

// What clients see of the cluster (cluster_face). Under hidden the
// proxy is a standalone server: every CLUSTER command, READONLY, READWRITE
// and ASKING get the error a standalone Valkey gives. Under single_node
// it is a cluster of one node that owns every slot, at the address the
// client connected to (cluster.SingleNode answers for it).

func isClusterFaceCommand(name []byte) bool {
	return commands.FlagsOf(name)&commands.ClusterFace != 0
}

// clusterFace answers CLUSTER, READONLY, READWRITE and ASKING.
func (s *session) clusterFace(cmd resp.Command) {
	args := cmd.Args
	single := s.p.cl.face == config.ClusterFaceSingleNode
	switch id := commands.IDOf(args[0]); {
	case id == commands.IDReadonly, id == commands.IDReadwrite:
		// Reads go to primaries whatever the client asks (a standalone
		// server answers OK too).
		s.local(resp.AppendSimple(nil, "OK"))
		return
	case id == commands.IDAsking:
		if single {
			s.local(resp.AppendSimple(nil, "OK")) // the face never redirects: nothing to follow
		} else {
			s.local(resp.AppendError(nil, errClusterDisabled))
		}
		return
	case len(args) < 2:
		s.local(resp.AppendError(nil, errWrongArgs("cluster")))
		return
	}
	// Valkey's own errors for an unknown subcommand or a wrong count come
	// before anything else, on a standalone server as on a node.
	if t := s.p.decider.Load().Table; t != nil {
		c := t.Command(args)
		switch {
		case c == nil:
			s.local(resp.AppendError(nil, errClusterUnknownSub(string(args[1]))))
			return
		case !c.ArityOK(len(args)):
			s.local(resp.AppendError(nil, errWrongArgs(c.Name)))
			return
		}
	}
	if !single {
		s.local(resp.AppendError(nil, errClusterDisabled))
		return
	}
	host, port := s.advertised()
	if out, ok := (cluster.SingleNode{Host: host, Port: port}).Answer(args, s.proto); ok {
		s.local(out)
		return
	}
	switch sub, id := args[1], commands.SubOf(args); {
	case (id == commands.ClusterCountkeysinslot && len(args) == 3) || (id == commands.ClusterGetkeysinslot && len(args) == 4):
		// Asked of the slot's primary, which has the answer.
		slot, ok := cluster.ParseSlot(args[2])
		if !ok {
			s.local(resp.AppendError(nil, errClusterBadSlot))
			return
		}
		if s.ded != nil {
			s.local(resp.AppendError(nil, errClusterOwnConn(s.ded.Addr(), "")))
			return
		}
		if s.routeSlot(slot) && !s.dialFirst() {
			s.forward(cmd.Raw, nil)
		}
	default:
		s.local(resp.AppendError(nil, errClusterFaceOnly(string(sub))))
	}
}

// advertised is the address the client reached the proxy at: the one it can
// reach it at again, whatever the listener is bound to.
func (s *session) advertised() (string, int) {
	host, port, err := net.SplitHostPort(s.nc.LocalAddr().String())
	if err != nil {
		return "127.0.0.1", 0
	}
	n, _ := strconv.Atoi(port)
	return host, n
}
