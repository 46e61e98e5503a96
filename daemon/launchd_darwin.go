package daemon

import (
	"fmt"
	"net"
	"os"
	"unsafe"

	"github.com/ebitengine/purego"
)

// launchdListeners asks launchd for the sockets of the "Listeners" entry
// of our LaunchAgent (launch_activate_socket, through purego: no cgo). Not
// being started by launchd is not an error.
func launchdListeners() ([]net.Listener, error) {
	lib, err := purego.Dlopen("/usr/lib/libSystem.B.dylib", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, nil
	}
	var activate func(name *byte, fds **int32, count *uintptr) int32
	purego.RegisterLibFunc(&activate, lib, "launch_activate_socket")
	name := append([]byte("Listeners"), 0)
	var fds *int32
	var n uintptr
	if rc := activate(&name[0], &fds, &n); rc != 0 || n == 0 {
		return nil, nil // ESRCH: not launched by launchd
	}
	var lns []net.Listener
	for _, fd := range unsafe.Slice(fds, n) {
		f := os.NewFile(uintptr(fd), "launchd-socket")
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("launchd socket: %w", err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}
