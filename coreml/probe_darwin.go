//go:build darwin

package coreml

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
)

// Probe opens CoreML.framework and lists the compute devices Core ML can
// use. Loading a framework cannot be interrupted; ctx is checked before.
func Probe(ctx context.Context) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	cm, err := purego.Dlopen("/System/Library/Frameworks/CoreML.framework/CoreML", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return Info{}, fmt.Errorf("open CoreML.framework: %w: %w", ErrUnavailable, err)
	}
	if _, err := purego.Dlopen("/System/Library/Frameworks/Foundation.framework/Foundation", purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
		return Info{}, fmt.Errorf("open Foundation.framework: %w", err)
	}
	lobjc, err := purego.Dlopen("/usr/lib/libobjc.A.dylib", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return Info{}, fmt.Errorf("open libobjc: %w", err)
	}
	if objc.GetClass("MLModel") == 0 {
		return Info{}, fmt.Errorf("CoreML.framework has no MLModel class: %w", ErrUnavailable)
	}
	info := Info{Framework: true}
	sym, err := purego.Dlsym(cm, "MLAllComputeDevices")
	if err != nil {
		return info, nil // macOS before 14: Core ML present, devices unknown
	}
	var allDevices func() objc.ID
	purego.RegisterFunc(&allDevices, sym)
	var poolPush func() uintptr
	var poolPop func(uintptr)
	purego.RegisterLibFunc(&poolPush, lobjc, "objc_autoreleasePoolPush")
	purego.RegisterLibFunc(&poolPop, lobjc, "objc_autoreleasePoolPop")

	// The array and the devices are autoreleased: read them inside a pool
	// on one OS thread and copy what we need out.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pool := poolPush()
	defer poolPop(pool)
	arr := allDevices()
	if arr == 0 {
		return info, errors.New("MLAllComputeDevices returned nil")
	}
	var (
		selCount    = objc.RegisterName("count")
		selObjectAt = objc.RegisterName("objectAtIndex:")
		selIsKind   = objc.RegisterName("isKindOfClass:")
		selMetal    = objc.RegisterName("metalDevice")
		selName     = objc.RegisterName("name")
		selUTF8     = objc.RegisterName("UTF8String")
		selCores    = objc.RegisterName("totalCoreCount")
	)
	classes := []struct {
		kind Kind
		cls  objc.Class
	}{
		{CPU, objc.GetClass("MLCPUComputeDevice")},
		{GPU, objc.GetClass("MLGPUComputeDevice")},
		{NeuralEngine, objc.GetClass("MLNeuralEngineComputeDevice")},
	}
	n := objc.Send[uint](arr, selCount)
	for i := range n {
		dev := arr.Send(selObjectAt, i)
		for _, c := range classes {
			if c.cls == 0 || !objc.Send[bool](dev, selIsKind, c.cls) {
				continue
			}
			d := Device{Kind: c.kind}
			switch c.kind {
			case GPU:
				if mtl := dev.Send(selMetal); mtl != 0 {
					if name := mtl.Send(selName); name != 0 {
						d.Name = objc.Send[string](name, selUTF8)
					}
				}
			case NeuralEngine:
				d.Cores = objc.Send[int](dev, selCores)
			}
			info.Devices = append(info.Devices, d)
			break
		}
	}
	info.DevicesKnown = true
	return info, nil
}
