package cluster

import (
	"crypto/sha1"
	"encoding/hex"
	"net"
	"strconv"

	"github.com/lockproxy/lockproxy/resp"
)

// What clients see of the cluster under cluster_face: single_node: a
// cluster of one node that owns every slot, at the address the client
// connected to. A cluster-aware client then sends everything to the proxy
// and never learns the nodes' addresses, so it neither bypasses the proxy
// nor sees a redirect. Which commands get these answers, and the errors
// for the others, are the proxy's.

// SingleNodeID is the face's node id (and shard id): the same on every
// lockproxy instance, so clients that meet several see one node.
var SingleNodeID = func() string {
	h := sha1.Sum([]byte("lockproxy single_node"))
	return hex.EncodeToString(h[:])
}()

// SingleNode is the one node of the face, at the address a client reached
// the proxy at.
type SingleNode struct {
	Host string
	Port int
}

// Answer is the face's reply to the CLUSTER command args ("CLUSTER"
// first) in protocol proto: SLOTS, SHARDS, NODES, INFO, MYID, MYSHARDID
// and KEYSLOT with their argument counts. ok is false for any other.
func (n SingleNode) Answer(args [][]byte, proto int) (reply []byte, ok bool) {
	if len(args) < 2 {
		return nil, false
	}
	host, port := n.Host, n.Port
	switch sub := args[1]; {
	case resp.EqualFold(sub, "slots") && len(args) == 2:
		out := resp.AppendArrayHeader(nil, 1)
		out = resp.AppendArrayHeader(out, 3)
		out = resp.AppendInt(out, 0)
		out = resp.AppendInt(out, SlotCount-1)
		out = resp.AppendArrayHeader(out, 3)
		out = resp.AppendBulkString(out, host)
		out = resp.AppendInt(out, int64(port))
		out = resp.AppendBulkString(out, SingleNodeID)
		return out, true
	case resp.EqualFold(sub, "shards") && len(args) == 2:
		out := resp.AppendArrayHeader(nil, 1)
		out = resp.AppendMapHeader(out, 2, proto)
		out = resp.AppendBulkString(out, "slots")
		out = resp.AppendArrayHeader(out, 2)
		out = resp.AppendInt(out, 0)
		out = resp.AppendInt(out, SlotCount-1)
		out = resp.AppendBulkString(out, "nodes")
		out = resp.AppendArrayHeader(out, 1)
		out = resp.AppendMapHeader(out, 7, proto)
		for _, kv := range [][2]string{{"id", SingleNodeID}, {"port", ""}, {"ip", host}, {"endpoint", host},
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
		return out, true
	case resp.EqualFold(sub, "nodes") && len(args) == 2:
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		line := SingleNodeID + " " + addr + "@" + strconv.Itoa(port) + " myself,master - 0 0 1 connected 0-" + strconv.Itoa(SlotCount-1) + "\n"
		return AppendText(nil, line, proto), true
	case resp.EqualFold(sub, "info") && len(args) == 2:
		return AppendText(nil, "cluster_enabled:1\r\ncluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\n"+
			"cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:1\r\ncluster_size:1\r\n"+
			"cluster_current_epoch:1\r\ncluster_my_epoch:1\r\n", proto), true
	case (resp.EqualFold(sub, "myid") || resp.EqualFold(sub, "myshardid")) && len(args) == 2:
		return resp.AppendBulkString(nil, SingleNodeID), true
	case resp.EqualFold(sub, "keyslot") && len(args) == 3:
		return resp.AppendInt(nil, int64(Slot(args[2]))), true
	}
	return nil, false
}

// ParseSlot reads a slot number argument (CLUSTER COUNTKEYSINSLOT, ...);
// ok is false when it is not one of 0 to 16383.
func ParseSlot(b []byte) (uint16, bool) {
	slot, err := strconv.Atoi(string(b))
	if err != nil || slot < 0 || slot >= SlotCount {
		return 0, false
	}
	return uint16(slot), true
}

// AppendText is a text reply as Valkey sends CLUSTER NODES and INFO: a
// verbatim string under RESP3, a bulk string under RESP2.
func AppendText(dst []byte, text string, proto int) []byte {
	if proto != 3 {
		return resp.AppendBulkString(dst, text)
	}
	dst = append(dst, '=')
	dst = strconv.AppendInt(dst, int64(len(text)+4), 10)
	dst = append(dst, "\r\ntxt:"...)
	dst = append(dst, text...)
	return append(dst, "\r\n"...)
}
