//go:build darwin

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
	"github.com/ruvllm/ruvllm/app/menubar"
)

// AppKit must run on the process's main thread, which is the thread the
// main goroutine starts on.
func init() { runtime.LockOSThread() }

// run starts NSApp on the main thread and adds the status item from another
// goroutine, as the desktop app does from Wails' OnStartup.
func run(log *slog.Logger) error {
	if _, err := purego.Dlopen("/System/Library/Frameworks/AppKit.framework/AppKit", purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
		return fmt.Errorf("load AppKit: %w", err)
	}
	app := objc.ID(objc.GetClass("NSApplication")).Send(objc.RegisterName("sharedApplication"))

	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var clicks atomic.Int64
		var mb *menubar.MenuBar
		ready := make(chan struct{})
		mb, err := menubar.New(ctx, menubar.Options{
			Title: "ruvllm demo",
			OnToggle: func() {
				<-ready
				n := clicks.Add(1)
				log.Info("toggle", "clicks", n)
				mb.SetModel(fmt.Sprintf("demo (%d clicks)", n))
				mb.SetDockIconVisible(n%2 == 1)
			},
			OnQuit: func() {
				<-ready
				log.Info("quit")
				mb.Close()
				os.Exit(0)
			},
			Logger: log,
		})
		if err != nil {
			log.Error("menubar", "err", err)
			os.Exit(1)
		}
		close(ready)
		mb.SetDockIconVisible(false)
		log.Info("status item added; click it, right-click for the menu")
	}()

	app.Send(objc.RegisterName("run"))
	return nil
}
