// Package bad has a deliberate type error in a darwin cgo file.
package bad

/*
#include <stdlib.h>
*/
import "C"

import "unsafe"

// Alloc has two deliberate type errors next to valid C calls.
func Alloc(n int) unsafe.Pointer {
	p := C.malloc(C.size_t(n))
	var s string = n
	_ = s
	_ = p
	return "not a pointer"
}
