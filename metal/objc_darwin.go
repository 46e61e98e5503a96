//go:build darwin

package metal

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
)

// mtlSize is MTLSize: three NSUIntegers.
type mtlSize struct{ W, H, D uint }

// MTLCommandBufferStatusError.
const statusError = 5

// rt is the Objective-C runtime and Metal entry points, loaded once per
// process: a registration table, immutable after load.
type rt struct {
	createDevice func() objc.ID
	poolPush     func() uintptr
	poolPop      func(uintptr)

	clsNSString, clsCompileOptions objc.Class

	selAlloc, selInitUTF8, selUTF8, selRelease, selNew         objc.SEL
	selLocalizedDescription, selName                           objc.SEL
	selNewQueue, selNewLibrary, selNewFunction, selNewPipeline objc.SEL
	selNewBuffer, selNewBufferBytes, selNewBufferNoCopy        objc.SEL
	selContents, selSetFastMath, selExecWidth, selMaxThreads   objc.SEL
	selCommandBuffer, selComputeEncoder, selSetPipeline        objc.SEL
	selSetBuffer, selSetBytes, selDispatch, selEndEncoding     objc.SEL
	selCommit, selWait, selStatus, selError, selHasUnified     objc.SEL
}

var (
	rtOnce sync.Once
	rtVal  *rt
	rtErr  error
)

// loadRuntime opens Metal and Foundation with purego (no cgo) and resolves
// the functions and selectors the backend uses.
func loadRuntime() (*rt, error) {
	rtOnce.Do(func() {
		rtVal, rtErr = openRuntime()
	})
	return rtVal, rtErr
}

func openRuntime() (*rt, error) {
	mtl, err := purego.Dlopen("/System/Library/Frameworks/Metal.framework/Metal", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("open Metal.framework: %w", err)
	}
	if _, err := purego.Dlopen("/System/Library/Frameworks/Foundation.framework/Foundation", purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
		return nil, fmt.Errorf("open Foundation.framework: %w", err)
	}
	lobjc, err := purego.Dlopen("/usr/lib/libobjc.A.dylib", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("open libobjc: %w", err)
	}
	r := &rt{}
	purego.RegisterLibFunc(&r.createDevice, mtl, "MTLCreateSystemDefaultDevice")
	purego.RegisterLibFunc(&r.poolPush, lobjc, "objc_autoreleasePoolPush")
	purego.RegisterLibFunc(&r.poolPop, lobjc, "objc_autoreleasePoolPop")
	r.clsNSString = objc.GetClass("NSString")
	r.clsCompileOptions = objc.GetClass("MTLCompileOptions")
	if r.clsNSString == 0 || r.clsCompileOptions == 0 {
		return nil, errors.New("objc classes NSString or MTLCompileOptions not found")
	}
	for _, s := range []struct {
		dst  *objc.SEL
		name string
	}{
		{&r.selAlloc, "alloc"},
		{&r.selInitUTF8, "initWithUTF8String:"},
		{&r.selUTF8, "UTF8String"},
		{&r.selRelease, "release"},
		{&r.selNew, "new"},
		{&r.selLocalizedDescription, "localizedDescription"},
		{&r.selName, "name"},
		{&r.selNewQueue, "newCommandQueue"},
		{&r.selNewLibrary, "newLibraryWithSource:options:error:"},
		{&r.selNewFunction, "newFunctionWithName:"},
		{&r.selNewPipeline, "newComputePipelineStateWithFunction:error:"},
		{&r.selNewBuffer, "newBufferWithLength:options:"},
		{&r.selNewBufferBytes, "newBufferWithBytes:length:options:"},
		{&r.selNewBufferNoCopy, "newBufferWithBytesNoCopy:length:options:deallocator:"},
		{&r.selContents, "contents"},
		{&r.selSetFastMath, "setFastMathEnabled:"},
		{&r.selExecWidth, "threadExecutionWidth"},
		{&r.selMaxThreads, "maxTotalThreadsPerThreadgroup"},
		{&r.selCommandBuffer, "commandBuffer"},
		{&r.selComputeEncoder, "computeCommandEncoder"},
		{&r.selSetPipeline, "setComputePipelineState:"},
		{&r.selSetBuffer, "setBuffer:offset:atIndex:"},
		{&r.selSetBytes, "setBytes:length:atIndex:"},
		{&r.selDispatch, "dispatchThreadgroups:threadsPerThreadgroup:"},
		{&r.selEndEncoding, "endEncoding"},
		{&r.selCommit, "commit"},
		{&r.selWait, "waitUntilCompleted"},
		{&r.selStatus, "status"},
		{&r.selError, "error"},
		{&r.selHasUnified, "hasUnifiedMemory"},
	} {
		*s.dst = objc.RegisterName(s.name)
	}
	return r, nil
}

// withPool runs fn on one OS thread inside an autorelease pool, so the
// autoreleased objects Metal returns (command buffers, encoders, errors,
// strings) are freed when fn returns.
func (r *rt) withPool(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := r.poolPush()
	defer r.poolPop(p)
	return fn()
}

// nsString returns a retained NSString; the caller releases it.
func (r *rt) nsString(s string) objc.ID {
	b := append([]byte(s), 0)
	str := objc.ID(r.clsNSString).Send(r.selAlloc)
	str = str.Send(r.selInitUTF8, unsafe.Pointer(&b[0]))
	runtime.KeepAlive(b)
	return str
}

// goString copies an NSString's contents.
func (r *rt) goString(s objc.ID) string {
	if s == 0 {
		return ""
	}
	return objc.Send[string](s, r.selUTF8)
}

// errorText is the localized description of an NSError (empty for nil).
func (r *rt) errorText(e objc.ID) string {
	if e == 0 {
		return "unknown error"
	}
	return r.goString(e.Send(r.selLocalizedDescription))
}

// release sends release to a retained object (nil is ignored).
func (r *rt) release(id objc.ID) {
	if id != 0 {
		id.Send(r.selRelease)
	}
}
