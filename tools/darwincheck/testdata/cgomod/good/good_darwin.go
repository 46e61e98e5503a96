// Package good is cgo code that type-checks for darwin.
package good

/*
#include <stdlib.h>
*/
import "C"

import (
	"strings"
	"unsafe"
)

// Alloc allocates n bytes with C's malloc.
func Alloc(n int) unsafe.Pointer { return C.malloc(C.size_t(n)) }

// Free releases memory from Alloc.
func Free(p unsafe.Pointer) { C.free(p) }

// Name uses a standard package, checked from source for darwin.
func Name(s string) string { return strings.ToUpper(s) }
