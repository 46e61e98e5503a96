//go:build !noasm

package quant

import (
	"sync"
	"syscall"
)

// amxTiles reports whether this process may use AMX tile data. Linux
// gives a process the (8 KiB) tile state only once it asks for it with
// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA); until then a tile
// instruction faults. The permission is the process's, so it is asked
// for once, when a layout with an AMX kernel is first chosen, not at
// start-up (it enlarges every signal frame of the process).
var amxTiles = sync.OnceValue(func() bool {
	const archReqXcompPerm, xfeatureXtiledata = 0x1023, 18
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0)
	return errno == 0
})
