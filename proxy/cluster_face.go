package proxy

import (
	"crypto/sha1"
	"encoding/hex"
	"net"
	"strconv"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/resp"
)

// What clients see of the cluster (cluster_face). Under hidden the
// proxy is a standalone server: every CLUSTER command, READONLY, READWRITE
// and ASKING get the error a standalone Valkey gives. Under single_node
// it is a cluster of one node that owns every slot, at the address the
// client connected to: a cluster-aware client then sends everything to the
// proxy and never learns the nodes' addresses, so it neither bypasses the
// proxy nor sees a redirect.

// singleNodeID is the face's node id (and shard id): the same on every
// lockproxy instance, so clients that meet several see one node.
var singleNodeID = func() string {
	h := sha1.Sum([]byte("lockproxy single_node"))
	return hex.EncodeToString(h[:])
}()

func isClusterFaceCommand(name []byte) bool {
	return flagsOf(name)&fClusterFace != 0
}

// clusterFace answers CLUSTER, READONLY, READWRITE and ASKING.
func (s *session) clusterFace(cmd resp.Command) {
	args := cmd.Args
	single := s.p.cl.face == policy.ClusterFaceSingleNode
	switch id := idOf(args[0]); {
	case id == cReadonly, id == cReadwrite:
		// Reads go to primaries whatever the client asks (a standalone
		// server answers OK too).
		s.local(resp.AppendSimple(nil, "OK"))
		return
	case id == cAsking:
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
	sub := args[1]
	proto := s.proto
	switch {
	case resp.EqualFold(sub, "slots") && len(args) == 2:
		out := resp.AppendArrayHeader(nil, 1)
		out = resp.AppendArrayHeader(out, 3)
		out = resp.AppendInt(out, 0)
		out = resp.AppendInt(out, cluster.SlotCount-1)
		out = resp.AppendArrayHeader(out, 3)
		out = resp.AppendBulkString(out, host)
		out = resp.AppendInt(out, int64(port))
		out = resp.AppendBulkString(out, singleNodeID)
		s.local(out)
	case resp.EqualFold(sub, "shards") && len(args) == 2:
		out := resp.AppendArrayHeader(nil, 1)
		out = resp.AppendMapHeader(out, 2, proto)
		out = resp.AppendBulkString(out, "slots")
		out = resp.AppendArrayHeader(out, 2)
		out = resp.AppendInt(out, 0)
		out = resp.AppendInt(out, cluster.SlotCount-1)
		out = resp.AppendBulkString(out, "nodes")
		out = resp.AppendArrayHeader(out, 1)
		out = resp.AppendMapHeader(out, 7, proto)
		for _, kv := range [][2]string{{"id", singleNodeID}, {"port", ""}, {"ip", host}, {"endpoint", host},
			{"role", "master"}, {"replication-offset", ""}, {"health", "online"}} {
			out = resp.AppendBulkString(out, kv[0])
			switch kv[0] {
			case "port":
				out = resp.AppendInt(out, int64(port))
			case "replication-offset":
				out = resp.AppendInt(out, 0)
			default:
				out = resp.AppendBulkString(out, kv[1])
			}
		}
		s.local(out)
	case resp.EqualFold(sub, "nodes") && len(args) == 2:
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		line := singleNodeID + " " + addr + "@" + strconv.Itoa(port) + " myself,master - 0 0 1 connected 0-" + strconv.Itoa(cluster.SlotCount-1) + "\n"
		s.local(appendText(nil, line, proto))
	case resp.EqualFold(sub, "info") && len(args) == 2:
		s.local(appendText(nil, "cluster_enabled:1\r\ncluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\n"+
			"cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:1\r\ncluster_size:1\r\n"+
			"cluster_current_epoch:1\r\ncluster_my_epoch:1\r\n", proto))
	case (resp.EqualFold(sub, "myid") || resp.EqualFold(sub, "myshardid")) && len(args) == 2:
		s.local(resp.AppendBulkString(nil, singleNodeID))
	case resp.EqualFold(sub, "keyslot") && len(args) == 3:
		s.local(resp.AppendInt(nil, int64(cluster.Slot(args[2]))))
	case (resp.EqualFold(sub, "countkeysinslot") && len(args) == 3) || (resp.EqualFold(sub, "getkeysinslot") && len(args) == 4):
		// Asked of the slot's primary, which has the answer.
		slot, err := strconv.Atoi(string(args[2]))
		if err != nil || slot < 0 || slot >= cluster.SlotCount {
			s.local(resp.AppendError(nil, errClusterBadSlot))
			return
		}
		if s.ded != nil {
			s.local(resp.AppendError(nil, errClusterOwnConn(s.ded.Addr(), "")))
			return
		}
		if s.routeSlot(uint16(slot)) && !s.dialFirst() {
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

// appendText is a text reply as Valkey sends CLUSTER NODES and INFO: a
// verbatim string under RESP3, a bulk string under RESP2.
func appendText(dst []byte, text string, proto int) []byte {
	if proto != 3 {
		return resp.AppendBulkString(dst, text)
	}
	dst = append(dst, '=')
	dst = strconv.AppendInt(dst, int64(len(text)+4), 10)
	dst = append(dst, "\r\ntxt:"...)
	dst = append(dst, text...)
	return append(dst, "\r\n"...)
}
