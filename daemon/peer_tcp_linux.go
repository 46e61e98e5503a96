package daemon

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// tcpPeerUID returns the uid owning the other end of a loopback TCP
// connection, read from the kernel's socket table (/proc/net/tcp and
// tcp6): the client's socket is the entry whose local address is c's
// remote one and whose remote address is c's local one. It reports false
// for a peer that is not on this machine or not found, and an error when
// the table could not be read (out of file descriptors): then the peer's
// user is unknown, not another user's.
func tcpPeerUID(c net.Conn) (uint32, bool, error) {
	ra, ok1 := c.RemoteAddr().(*net.TCPAddr)
	la, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 || !ra.IP.IsLoopback() {
		return 0, false, nil
	}
	file := "/proc/net/tcp"
	if ra.IP.To4() == nil {
		file = "/proc/net/tcp6"
	}
	want := procAddr(ra) + " " + procAddr(la)
	f, err := os.Open(file)
	if err != nil {
		return 0, false, fmt.Errorf("read the socket table: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || fields[1]+" "+fields[2] != want {
			continue
		}
		uid, err := strconv.ParseUint(fields[7], 10, 32)
		if err != nil {
			return 0, false, nil
		}
		return uint32(uid), true, nil
	}
	if err := sc.Err(); err != nil {
		return 0, false, fmt.Errorf("read the socket table: %w", err)
	}
	return 0, false, nil
}

// procAddr writes an address as /proc/net/tcp{,6} does: the IP as 32-bit
// words in host (little-endian) order, then the port, in upper-case hex.
func procAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		ip = a.IP.To16()
	}
	var b strings.Builder
	for i := 0; i < len(ip); i += 4 {
		b.WriteString(strings.ToUpper(hex.EncodeToString([]byte{ip[i+3], ip[i+2], ip[i+1], ip[i]})))
	}
	return fmt.Sprintf("%s:%04X", b.String(), a.Port)
}

// tcpPeerUIDSupported: the kernel's socket table names TCP peers' users.
const tcpPeerUIDSupported = true
