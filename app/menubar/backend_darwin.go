//go:build darwin

package menubar

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
)

// AppKit constants (NSStatusBar.h, NSEvent.h, NSApplication.h).
const (
	nsVariableStatusItemLength = -1.0
	nsEventTypeRightMouseUp    = 4
	nsEventMaskLeftMouseUp     = 1 << 2
	nsEventMaskRightMouseUp    = 1 << 4
	nsEventModifierFlagControl = 1 << 18

	nsActivationPolicyRegular   = 0
	nsActivationPolicyAccessory = 1

	// itemHeight is the icon's height in points; menu-bar icons are 18 pt.
	itemHeight = 18.0
)

// targetClassName is the Objective-C class that receives the item's and the
// menu's actions and runs queued work on the main thread.
const targetClassName = "RuvllmMenuBarTarget"

// nsSize is CGSize/NSSize.
type nsSize struct{ Width, Height float64 }

// runtimeTable holds the classes and selectors, looked up once per process: the
// Objective-C runtime's class table is process-wide, so the target class
// can be registered only once.
type runtimeTable struct {
	err error

	nsApplication, nsStatusBar, nsString, nsData, nsImage, nsMenu, nsMenuItem, nsThread objc.ID
	target                                                                              objc.Class

	alloc, autorelease, release, retain                                      objc.SEL
	sharedApplication, currentEvent, eventType, modifierFlags                objc.SEL
	setActivationPolicy                                                      objc.SEL
	systemStatusBar, statusItemWithLength, removeStatusItem, button, setMenu objc.SEL
	setImage, setToolTip, setTarget, setAction, sendActionOn, performClick   objc.SEL
	stringWithUTF8String, dataWithBytesLength, initWithData, setTemplate     objc.SEL
	setSize, initWithTitle, initWithTitleActionKey, separatorItem, addItem   objc.SEL
	setTitle, setEnabled, setAutoenablesItems, isMainThread, performOnMain   objc.SEL
	selClicked, selToggle, selQuit, selRunPending                            objc.SEL
}

var (
	rtOnce sync.Once
	rt     runtimeTable
	// items maps a target object to its item: AppKit calls the target's
	// methods with only self to go on.
	items sync.Map // objc.ID → *appkitItem
)

func loadRuntime() error {
	rtOnce.Do(func() {
		if _, err := purego.Dlopen("/System/Library/Frameworks/AppKit.framework/AppKit", purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
			rt.err = fmt.Errorf("load AppKit: %w", err)
			return
		}
		cls := func(name string) objc.ID { return objc.ID(objc.GetClass(name)) }
		sel := objc.RegisterName
		rt.nsApplication = cls("NSApplication")
		rt.nsStatusBar = cls("NSStatusBar")
		rt.nsString = cls("NSString")
		rt.nsData = cls("NSData")
		rt.nsImage = cls("NSImage")
		rt.nsMenu = cls("NSMenu")
		rt.nsMenuItem = cls("NSMenuItem")
		rt.nsThread = cls("NSThread")
		if rt.nsApplication == 0 || rt.nsStatusBar == 0 || rt.nsMenu == 0 {
			rt.err = errors.New("AppKit classes not found")
			return
		}

		rt.alloc, rt.autorelease, rt.release, rt.retain = sel("alloc"), sel("autorelease"), sel("release"), sel("retain")
		rt.sharedApplication, rt.currentEvent = sel("sharedApplication"), sel("currentEvent")
		rt.eventType, rt.modifierFlags = sel("type"), sel("modifierFlags")
		rt.setActivationPolicy = sel("setActivationPolicy:")
		rt.systemStatusBar, rt.statusItemWithLength = sel("systemStatusBar"), sel("statusItemWithLength:")
		rt.removeStatusItem, rt.button, rt.setMenu = sel("removeStatusItem:"), sel("button"), sel("setMenu:")
		rt.setImage, rt.setToolTip = sel("setImage:"), sel("setToolTip:")
		rt.setTarget, rt.setAction = sel("setTarget:"), sel("setAction:")
		rt.sendActionOn, rt.performClick = sel("sendActionOn:"), sel("performClick:")
		rt.stringWithUTF8String = sel("stringWithUTF8String:")
		rt.dataWithBytesLength, rt.initWithData = sel("dataWithBytes:length:"), sel("initWithData:")
		rt.setTemplate, rt.setSize = sel("setTemplate:"), sel("setSize:")
		rt.initWithTitle, rt.initWithTitleActionKey = sel("initWithTitle:"), sel("initWithTitle:action:keyEquivalent:")
		rt.separatorItem, rt.addItem = sel("separatorItem"), sel("addItem:")
		rt.setTitle, rt.setEnabled, rt.setAutoenablesItems = sel("setTitle:"), sel("setEnabled:"), sel("setAutoenablesItems:")
		rt.isMainThread = sel("isMainThread")
		rt.performOnMain = sel("performSelectorOnMainThread:withObject:waitUntilDone:")
		rt.selClicked, rt.selToggle, rt.selQuit, rt.selRunPending = sel("clicked:"), sel("toggle:"), sel("quit:"), sel("runPending:")

		action := func(fn func(it *appkitItem)) func(self objc.ID, _ objc.SEL, sender objc.ID) {
			return func(self objc.ID, _ objc.SEL, sender objc.ID) {
				if v, ok := items.Load(self); ok {
					fn(v.(*appkitItem))
				}
			}
		}
		rt.target, rt.err = objc.RegisterClass(targetClassName, objc.GetClass("NSObject"), nil, nil, []objc.MethodDef{
			{Cmd: rt.selClicked, Fn: action((*appkitItem).clicked)},
			{Cmd: rt.selToggle, Fn: action(func(it *appkitItem) { it.m.dispatch(actToggle) })},
			{Cmd: rt.selQuit, Fn: action(func(it *appkitItem) { it.m.dispatch(actQuit) })},
			{Cmd: rt.selRunPending, Fn: action((*appkitItem).runPending)},
		})
		if rt.err != nil {
			rt.err = fmt.Errorf("register %s: %w", targetClassName, rt.err)
		}
	})
	return rt.err
}

// nsString returns an autoreleased NSString; purego passes s as a
// NUL-terminated copy that lives for the call.
func nsString(s string) objc.ID {
	return rt.nsString.Send(rt.stringWithUTF8String, s)
}

// appkitItem is the AppKit side of a MenuBar. Its objects are touched only
// on the main thread; other goroutines queue work with async.
type appkitItem struct {
	m      *MenuBar
	target objc.ID // retained; autoreleased on close

	// Main thread only.
	item, button, menu, modelItem objc.ID

	mu      sync.Mutex
	pending []func()
}

// newBackend creates the status item on the main thread and waits for it,
// at most until ctx is done.
func newBackend(ctx context.Context, m *MenuBar) (backend, error) {
	if err := loadRuntime(); err != nil {
		return nil, fmt.Errorf("menubar: %w", err)
	}
	it := &appkitItem{m: m}
	it.target = objc.ID(rt.target).Send(rt.alloc).Send(objc.RegisterName("init"))
	if it.target == 0 {
		return nil, errors.New("menubar: could not create the action target")
	}
	items.Store(it.target, it)

	var (
		mu       sync.Mutex
		started  bool
		canceled bool
		done     = make(chan struct{})
	)
	it.async(func() {
		mu.Lock()
		if canceled {
			mu.Unlock()
			return
		}
		started = true
		mu.Unlock()
		it.create()
		close(done)
	})
	select {
	case <-done:
		return it, nil
	case <-ctx.Done():
		mu.Lock()
		if started {
			// Already running on the main thread: it will finish shortly,
			// and must not be left behind in the menu bar.
			mu.Unlock()
			<-done
			return it, nil
		}
		canceled = true
		mu.Unlock()
		// The queued performSelector retains the target until it runs, and
		// finds no item then; off the main thread there is no autorelease
		// pool, hence release.
		items.Delete(it.target)
		it.target.Send(rt.release)
		return nil, fmt.Errorf("menubar: waiting for the main run loop (is NSApp running?): %w", ctx.Err())
	}
}

// async queues fn for the main thread, in order with earlier calls; it runs
// fn at once when called on the main thread.
func (it *appkitItem) async(fn func()) {
	if objc.Send[bool](rt.nsThread, rt.isMainThread) {
		it.runPending()
		fn()
		return
	}
	it.mu.Lock()
	it.pending = append(it.pending, fn)
	it.mu.Unlock()
	it.target.Send(rt.performOnMain, rt.selRunPending, objc.ID(0), false)
}

// runPending runs the queued work, on the main thread.
func (it *appkitItem) runPending() {
	it.mu.Lock()
	work := it.pending
	it.pending = nil
	it.mu.Unlock()
	for _, fn := range work {
		fn()
	}
}

// create builds the status item and its menu; main thread only.
func (it *appkitItem) create() {
	m := it.m
	bar := rt.nsStatusBar.Send(rt.systemStatusBar)
	it.item = bar.Send(rt.statusItemWithLength, float64(nsVariableStatusItemLength)).Send(rt.retain)
	it.button = it.item.Send(rt.button)

	icon := m.opts.Icon
	data := rt.nsData.Send(rt.dataWithBytesLength, unsafe.Pointer(&icon[0]), uint(len(icon)))
	img := rt.nsImage.Send(rt.alloc).Send(rt.initWithData, data)
	if img != 0 {
		img.Send(rt.setTemplate, true)
		img.Send(rt.setSize, nsSize{itemHeight, itemHeight})
		it.button.Send(rt.setImage, img)
		img.Send(rt.release)
	} else {
		m.log.Warn("AppKit rejected the menu-bar icon; showing the title instead")
		it.button.Send(rt.setTitle, nsString(m.opts.Title))
	}
	it.button.Send(rt.setToolTip, nsString(m.opts.Title))
	it.button.Send(rt.setTarget, it.target)
	it.button.Send(rt.setAction, rt.selClicked)
	it.button.Send(rt.sendActionOn, uint(nsEventMaskLeftMouseUp|nsEventMaskRightMouseUp))

	it.menu = rt.nsMenu.Send(rt.alloc).Send(rt.initWithTitle, nsString("ruvllm"))
	it.menu.Send(rt.setAutoenablesItems, false)
	it.menu.Send(rt.addItem, it.menuItem(toggleLabel, rt.selToggle))
	it.modelItem = it.menuItem(modelLabel(m.opts.Model), 0)
	it.modelItem.Send(rt.setEnabled, false)
	it.menu.Send(rt.addItem, it.modelItem)
	it.menu.Send(rt.addItem, rt.nsMenuItem.Send(rt.separatorItem))
	it.menu.Send(rt.addItem, it.menuItem(quitLabel, rt.selQuit))
}

// menuItem returns an autoreleased NSMenuItem sending action (0: none) to
// the target.
func (it *appkitItem) menuItem(title string, action objc.SEL) objc.ID {
	mi := rt.nsMenuItem.Send(rt.alloc).Send(rt.initWithTitleActionKey, nsString(title), action, nsString(""))
	if action != 0 {
		mi.Send(rt.setTarget, it.target)
	}
	return mi.Send(rt.autorelease)
}

// clicked handles a click on the item: the menu on a right or control
// click, the toggle otherwise. Main thread.
func (it *appkitItem) clicked() {
	app := rt.nsApplication.Send(rt.sharedApplication)
	ev := app.Send(rt.currentEvent)
	if ev != 0 {
		typ := objc.Send[uint](ev, rt.eventType)
		flags := objc.Send[uint](ev, rt.modifierFlags)
		if typ == nsEventTypeRightMouseUp || flags&nsEventModifierFlagControl != 0 {
			// The documented way to pop up a status item's menu from an
			// action: attach it for one click, then detach it so that left
			// clicks reach the action again.
			it.item.Send(rt.setMenu, it.menu)
			it.button.Send(rt.performClick, objc.ID(0))
			it.item.Send(rt.setMenu, objc.ID(0))
			return
		}
	}
	it.m.dispatch(actToggle)
}

func (it *appkitItem) setModelLabel(label string) error {
	it.async(func() {
		if it.modelItem != 0 {
			it.modelItem.Send(rt.setTitle, nsString(label))
		}
	})
	return nil
}

func (it *appkitItem) setTitle(title string) error {
	it.async(func() {
		if it.button != 0 {
			it.button.Send(rt.setToolTip, nsString(title))
		}
	})
	return nil
}

func (it *appkitItem) setDockIconVisible(visible bool) error {
	policy := nsActivationPolicyAccessory
	if visible {
		policy = nsActivationPolicyRegular
	}
	it.async(func() {
		app := rt.nsApplication.Send(rt.sharedApplication)
		if !objc.Send[bool](app, rt.setActivationPolicy, policy) {
			it.m.log.Warn("NSApp refused the activation policy", "policy", policy)
		}
	})
	return nil
}

func (it *appkitItem) close() error {
	it.async(func() {
		if it.item != 0 {
			rt.nsStatusBar.Send(rt.systemStatusBar).Send(rt.removeStatusItem, it.item)
			it.item.Send(rt.release)
		}
		if it.menu != 0 {
			it.menu.Send(rt.release)
		}
		it.item, it.button, it.menu, it.modelItem = 0, 0, 0, 0
		items.Delete(it.target)
		// Not release: this may run inside one of the target's own methods.
		it.target.Send(rt.autorelease)
	})
	return nil
}
