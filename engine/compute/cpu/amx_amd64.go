package cpu

import "golang.org/x/sys/cpu"

// hasAMXInt8 reports whether llama.cpp would run its AMX kernels here.
var hasAMXInt8 = cpu.X86.HasAMXInt8
