package apptest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Listening returns every listening socket process pid holds open, read
// from /proc (Linux): TCP (IPv4 and IPv6) in LISTEN state as host:port
// (a wildcard address as 127.0.0.1), and unix-domain ones as
// "unix:" + their path ("unix:" alone for an unnamed one).
func Listening(pid int) ([]string, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	var addrs []string
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(sc.Text())
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			addr, err := procAddr(f[1])
			if err != nil {
				return nil, err
			}
			addrs = append(addrs, addr)
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/unix", pid))
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Scan() // the header
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode Path; flag 0x10000
		// (__SO_ACCEPTCON) marks a listening socket.
		f := strings.Fields(sc.Text())
		if len(f) < 7 || !inodes[f[6]] {
			continue
		}
		if flags, err := strconv.ParseUint(f[3], 16, 32); err != nil || flags&0x10000 == 0 {
			continue
		}
		path := ""
		if len(f) > 7 {
			path = f[7]
		}
		addrs = append(addrs, "unix:"+path)
	}
	return addrs, nil
}

// procAddr turns /proc/net/tcp's "0100007F:1F90" (the address in host
// byte order, 32-bit words, then the port in hex) into "127.0.0.1:8080".
func procAddr(s string) (string, error) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if !ok || err != nil || len(hexIP)%8 != 0 {
		return "", fmt.Errorf("bad socket address %q", s)
	}
	var ip net.IP
	for i := 0; i < len(hexIP); i += 8 {
		w, err := strconv.ParseUint(hexIP[i:i+8], 16, 32)
		if err != nil {
			return "", fmt.Errorf("bad socket address %q", s)
		}
		ip = append(ip, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(int(port))), nil
}
