// Package codec is the Go anchor of sockdiag's codec bench: a sock_diag dump request serialised
// from a request struct into a fresh buffer, and an inet_diag_msg parsed into a struct with net.IP
// addresses, in the shapes of the seed's Go code. Stdlib only; layouts from
// /usr/include/linux/inet_diag.h, sock_diag.h and netlink.h.
package codec

import (
	"encoding/binary"
	"errors"
	"net"
)

// From linux/netlink.h, sock_diag.h and inet_diag.h.
const (
	nlmsghdrLen        = 16
	inetDiagReqV2Len   = 56
	InetDiagMsgLen     = 72
	sockDiagByFamily   = 20
	nlmFRequest        = 0x1
	nlmFDump           = 0x300 // NLM_F_ROOT | NLM_F_MATCH
	inetDiagNoCookie   = ^uint32(0)
	afInet             = 2
	afInet6            = 10
	sockIDAddressBytes = 16
)

// InetDiagSockID is struct inet_diag_sockid.
type InetDiagSockID struct {
	SPort  uint16 // __be16 idiag_sport
	DPort  uint16 // __be16 idiag_dport
	Src    net.IP // __be32 idiag_src[4]
	Dst    net.IP // __be32 idiag_dst[4]
	If     uint32
	Cookie [2]uint32
}

// InetDiagReqV2 is struct inet_diag_req_v2 with the nlmsghdr fields a request needs.
type InetDiagReqV2 struct {
	Seq      uint32
	Family   uint8
	Protocol uint8
	Ext      uint8
	States   uint32
	ID       InetDiagSockID
}

// Serialize writes the nlmsghdr and struct inet_diag_req_v2 into a new buffer: host order for
// netlink fields, network order for ports and addresses.
func (r *InetDiagReqV2) Serialize() []byte {
	b := make([]byte, nlmsghdrLen+inetDiagReqV2Len)
	ne := binary.LittleEndian // the host order of amd64 and arm64
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], sockDiagByFamily)
	ne.PutUint16(b[6:], nlmFRequest|nlmFDump)
	ne.PutUint32(b[8:], r.Seq)
	q := b[nlmsghdrLen:]
	q[0] = r.Family
	q[1] = r.Protocol
	q[2] = r.Ext
	ne.PutUint32(q[4:], r.States)
	binary.BigEndian.PutUint16(q[8:], r.ID.SPort)
	binary.BigEndian.PutUint16(q[10:], r.ID.DPort)
	putAddress(q[12:28], r.ID.Src)
	putAddress(q[28:44], r.ID.Dst)
	ne.PutUint32(q[44:], r.ID.If)
	ne.PutUint32(q[48:], r.ID.Cookie[0])
	ne.PutUint32(q[52:], r.ID.Cookie[1])
	return b
}

// putAddress copies an IPv4 address into the first 4 bytes, an IPv6 one into all 16.
func putAddress(dst []byte, ip net.IP) {
	if v4 := ip.To4(); v4 != nil {
		copy(dst, v4)
	} else {
		copy(dst, ip.To16())
	}
}

// InetDiagMsg is struct inet_diag_msg.
type InetDiagMsg struct {
	Family  uint8
	State   uint8
	Timer   uint8
	Retrans uint8
	ID      InetDiagSockID
	Expires uint32
	RQueue  uint32
	WQueue  uint32
	UID     uint32
	Inode   uint32
}

var errShort = errors.New("inet_diag_msg: short buffer")

// ParseInetDiagMsg parses the struct inet_diag_msg at the start of b (attributes after it are
// left alone).
func ParseInetDiagMsg(b []byte) (*InetDiagMsg, error) {
	if len(b) < InetDiagMsgLen {
		return nil, errShort
	}
	ne := binary.LittleEndian
	m := &InetDiagMsg{
		Family:  b[0],
		State:   b[1],
		Timer:   b[2],
		Retrans: b[3],
		Expires: ne.Uint32(b[52:]),
		RQueue:  ne.Uint32(b[56:]),
		WQueue:  ne.Uint32(b[60:]),
		UID:     ne.Uint32(b[64:]),
		Inode:   ne.Uint32(b[68:]),
	}
	m.ID.SPort = binary.BigEndian.Uint16(b[4:])
	m.ID.DPort = binary.BigEndian.Uint16(b[6:])
	m.ID.Src = address(m.Family, b[8:24])
	m.ID.Dst = address(m.Family, b[24:40])
	m.ID.If = ne.Uint32(b[40:])
	m.ID.Cookie[0] = ne.Uint32(b[44:])
	m.ID.Cookie[1] = ne.Uint32(b[48:])
	return m, nil
}

func address(family uint8, b []byte) net.IP {
	if family == afInet {
		return net.IPv4(b[0], b[1], b[2], b[3])
	}
	ip := make(net.IP, sockIDAddressBytes)
	copy(ip, b)
	return ip
}
