package codec

import (
	"encoding/binary"
	"net"
	"testing"
)

// messages builds the scene of sockdiag's bench/codec.ts: IPv4 UDP sockets bound to one of 6 local
// addresses, half of them connected to one remote address.
func messages(count int) [][]byte {
	out := make([][]byte, count)
	for i := range out {
		m := make([]byte, InetDiagMsgLen)
		m[0] = afInet
		m[1] = 1
		binary.BigEndian.PutUint16(m[4:], uint16(1024+i%60000))
		binary.BigEndian.PutUint16(m[6:], 53)
		binary.BigEndian.PutUint32(m[8:], 0x7f000001+256*uint32(1+i%6))
		if i%2 == 0 {
			binary.BigEndian.PutUint32(m[24:], 0x7f00000a)
		}
		binary.LittleEndian.PutUint32(m[44:], uint32(i))
		binary.LittleEndian.PutUint32(m[48:], 1)
		binary.LittleEndian.PutUint32(m[68:], uint32(100000+i))
		out[i] = m
	}
	return out
}

var sink int

func BenchmarkSerialize(b *testing.B) {
	req := InetDiagReqV2{Family: afInet, Protocol: 17, States: 0xfff,
		ID: InetDiagSockID{Cookie: [2]uint32{inetDiagNoCookie, inetDiagNoCookie}}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		req.Seq = uint32(i)
		sink += len(req.Serialize())
	}
}

// readAll reads every field once, as the TypeScript row does.
func readAll(m *InetDiagMsg) int {
	return int(m.ID.SPort) + int(m.ID.DPort) + len(m.ID.Src) + len(m.ID.Dst) + int(m.ID.Cookie[0]) +
		int(m.ID.Cookie[1]) + int(m.Inode) + int(m.UID) + int(m.RQueue) + int(m.WQueue) + int(m.ID.If) +
		int(m.State) + int(m.Family) + int(m.Timer) + int(m.Retrans) + int(m.Expires)
}

func BenchmarkParse(b *testing.B) { benchParse(b, false) }

// BenchmarkParseAddressText also formats both addresses, which sockdiag's sockets hold as text.
func BenchmarkParseAddressText(b *testing.B) { benchParse(b, true) }

func benchParse(b *testing.B, text bool) {
	msgs := messages(100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := ParseInetDiagMsg(msgs[i%len(msgs)])
		if err != nil {
			b.Fatal(err)
		}
		sink += readAll(m)
		if text {
			sink += len(m.ID.Src.String()) + len(m.ID.Dst.String())
		}
	}
}

func TestRoundTrip(t *testing.T) {
	req := InetDiagReqV2{Seq: 7, Family: afInet, Protocol: 17, States: 0xfff,
		ID: InetDiagSockID{SPort: 5353, Src: net.IPv4(127, 0, 0, 1)}}
	b := req.Serialize()
	if len(b) != 72 || binary.LittleEndian.Uint32(b) != 72 || b[16+12] != 127 {
		t.Fatalf("bad request %x", b)
	}
	m, err := ParseInetDiagMsg(messages(1)[0])
	if err != nil || m.ID.Src.String() != "127.0.1.1" || m.ID.Dst.String() != "127.0.0.10" || m.ID.DPort != 53 {
		t.Fatalf("bad parse %+v %v", m, err)
	}
}
