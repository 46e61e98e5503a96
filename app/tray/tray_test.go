package tray

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/ruvllm/ruvllm/internal/dbustest"
)

// fakeWatcher is an org.kde.StatusNotifierWatcher that records
// registrations.
type fakeWatcher struct {
	conn *dbus.Conn
	reg  chan string
}

func (w *fakeWatcher) RegisterStatusNotifierItem(sender dbus.Sender, service string) *dbus.Error {
	w.reg <- service
	return nil
}

func startWatcher(t *testing.T, addr string) *fakeWatcher {
	t.Helper()
	w := &fakeWatcher{conn: dbustest.Connect(t, addr), reg: make(chan string, 8)}
	if err := w.conn.Export(w, WatcherPath, WatcherInterface); err != nil {
		t.Fatal(err)
	}
	reply, err := w.conn.RequestName(WatcherName, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("watcher name: reply %v, err %v", reply, err)
	}
	return w
}

func (w *fakeWatcher) wait(t *testing.T) string {
	t.Helper()
	select {
	case s := <-w.reg:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("watcher got no RegisterStatusNotifierItem within 5s")
	}
	return ""
}

// recv waits for one value on c.
func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// menuItem is a decoded dbusmenu layout node.
type menuItem struct {
	ID       int32
	Props    map[string]dbus.Variant
	Children []menuItem
}

func decodeLayout(t *testing.T, v any) menuItem {
	t.Helper()
	fields, ok := v.([]any)
	if !ok || len(fields) != 3 {
		t.Fatalf("layout node is %T %v, want (ia{sv}av)", v, v)
	}
	n := menuItem{ID: fields[0].(int32), Props: fields[1].(map[string]dbus.Variant)}
	for _, c := range fields[2].([]dbus.Variant) {
		n.Children = append(n.Children, decodeLayout(t, c.Value()))
	}
	return n
}

func getLayout(t *testing.T, menuObj dbus.BusObject) (uint32, menuItem) {
	t.Helper()
	call := menuObj.Call(MenuInterface+".GetLayout", 0, int32(0), int32(-1), []string{})
	if call.Err != nil {
		t.Fatalf("GetLayout: %v", call.Err)
	}
	if len(call.Body) != 2 {
		t.Fatalf("GetLayout returned %d values, want 2", len(call.Body))
	}
	return call.Body[0].(uint32), decodeLayout(t, call.Body[1])
}

func label(it menuItem) string {
	if v, ok := it.Props["label"]; ok {
		return v.Value().(string)
	}
	if v, ok := it.Props["type"]; ok {
		return "<" + v.Value().(string) + ">"
	}
	return ""
}

func TestTrayEndToEnd(t *testing.T) {
	addr := dbustest.Start(t)
	w := startWatcher(t, addr)

	toggled := make(chan struct{}, 4)
	quit := make(chan struct{}, 4)
	tr, err := New(context.Background(), dbustest.Connect(t, addr), Options{
		Title:    "ruvllm test",
		Model:    "llama-19m-q8_0",
		OnToggle: func() { toggled <- struct{}{} },
		OnQuit:   func() { quit <- struct{}{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()

	wantName := fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", os.Getpid())
	if got := w.wait(t); got != wantName {
		t.Errorf("registered %q, want %q", got, wantName)
	}

	host := dbustest.Connect(t, addr)
	item := host.Object(wantName, ItemPath)
	// Read the reply body as decoded, not through Store, which rebuilds
	// variants and loses their wire signatures.
	call := item.Call("org.freedesktop.DBus.Properties.GetAll", 0, ItemInterface)
	if call.Err != nil {
		t.Fatalf("GetAll: %v", call.Err)
	}
	props, ok := call.Body[0].(map[string]dbus.Variant)
	if !ok {
		t.Fatalf("GetAll returned %T", call.Body[0])
	}
	for name, want := range map[string]any{
		"Category":   "ApplicationStatus",
		"Id":         "ruvllm",
		"Title":      "ruvllm test",
		"Status":     "Active",
		"IconName":   "",
		"ItemIsMenu": false,
		"Menu":       MenuPath,
	} {
		v, ok := props[name]
		if !ok {
			t.Errorf("property %s missing", name)
			continue
		}
		if v.Value() != want {
			t.Errorf("property %s = %#v, want %#v", name, v.Value(), want)
		}
	}
	var pms []pixmap
	if err := props["IconPixmap"].Store(&pms); err != nil {
		t.Fatalf("IconPixmap: %v (signature %s)", err, props["IconPixmap"].Signature())
	}
	for name, sig := range map[string]string{"IconPixmap": "a(iiay)", "ToolTip": "(sa(iiay)ss)", "Menu": "o", "WindowId": "i"} {
		if got := props[name].Signature().String(); got != sig {
			t.Errorf("%s signature %s, want %s", name, got, sig)
		}
	}
	var widths []int32
	for _, pm := range pms {
		widths = append(widths, pm.Width)
		if pm.Width != pm.Height || len(pm.Data) != int(4*pm.Width*pm.Height) {
			t.Errorf("pixmap %dx%d has %d bytes", pm.Width, pm.Height, len(pm.Data))
			continue
		}
		// Top-left corner transparent, centre top of the bubble opaque white.
		if a := pm.Data[0]; a != 0 {
			t.Errorf("pixmap %d: corner alpha %d, want 0", pm.Width, a)
		}
		c := 4 * (int(pm.Height*32/100)*int(pm.Width) + int(pm.Width/2))
		if got := pm.Data[c : c+4]; !bytes.Equal(got, []byte{255, 255, 255, 255}) {
			t.Errorf("pixmap %d: bubble pixel ARGB %v, want opaque white", pm.Width, got)
		}
	}
	if fmt.Sprint(widths) != "[22 32 48 64]" {
		t.Errorf("pixmap sizes %v, want [22 32 48 64]", widths)
	}
	var tip toolTip
	if err := props["ToolTip"].Store(&tip); err != nil {
		t.Fatalf("ToolTip: %v", err)
	}
	if tip.Title != "ruvllm test" || tip.Description != "Model: llama-19m-q8_0" {
		t.Errorf("tooltip %+v", tip)
	}

	var xml string
	if err := item.Call("org.freedesktop.DBus.Introspectable.Introspect", 0).Store(&xml); err != nil {
		t.Fatalf("Introspect: %v", err)
	}
	for _, want := range []string{`interface name="org.kde.StatusNotifierItem"`, `method name="Activate"`, `signal name="NewStatus"`, `property name="IconPixmap" type="a(iiay)"`} {
		if !strings.Contains(xml, want) {
			t.Errorf("introspection lacks %s", want)
		}
	}

	menuObj := host.Object(wantName, MenuPath)
	var version uint32
	if err := menuObj.Call("org.freedesktop.DBus.Properties.Get", 0, MenuInterface, "Version").Store(&version); err != nil || version != 3 {
		t.Errorf("dbusmenu Version = %d, %v; want 3", version, err)
	}
	rev, root := getLayout(t, menuObj)
	if root.ID != 0 || root.Props["children-display"].Value() != "submenu" {
		t.Errorf("root %+v", root)
	}
	var labels []string
	for _, c := range root.Children {
		labels = append(labels, label(c))
	}
	if got, want := strings.Join(labels, "|"), "Show / hide ruvllm|Model: llama-19m-q8_0|<separator>|Quit"; got != want {
		t.Fatalf("menu %q, want %q", got, want)
	}
	toggleID, modelID, quitID := root.Children[0].ID, root.Children[1].ID, root.Children[3].ID
	if root.Children[1].Props["enabled"].Value() != false {
		t.Error("model line is enabled, want disabled")
	}

	// Clicks.
	if err := item.Call(ItemInterface+".Activate", 0, int32(10), int32(10)).Err; err != nil {
		t.Fatalf("Activate: %v", err)
	}
	recv(t, toggled, "OnToggle after Activate")
	if err := menuObj.Call(MenuInterface+".Event", 0, toggleID, "clicked", dbus.MakeVariant(""), uint32(0)).Err; err != nil {
		t.Fatalf("Event toggle: %v", err)
	}
	recv(t, toggled, "OnToggle after clicking the toggle item")
	if err := menuObj.Call(MenuInterface+".Event", 0, quitID, "hovered", dbus.MakeVariant(""), uint32(0)).Err; err != nil {
		t.Fatalf("Event hovered: %v", err)
	}
	if err := menuObj.Call(MenuInterface+".Event", 0, quitID, "clicked", dbus.MakeVariant(""), uint32(0)).Err; err != nil {
		t.Fatalf("Event quit: %v", err)
	}
	recv(t, quit, "OnQuit after clicking Quit")
	select {
	case <-quit:
		t.Error("hovering Quit called OnQuit")
	case <-toggled:
		t.Error("an extra OnToggle fired")
	case <-time.After(100 * time.Millisecond):
	}
	if err := menuObj.Call(MenuInterface+".Event", 0, int32(99), "clicked", dbus.MakeVariant(""), uint32(0)).Err; err == nil {
		t.Error("Event on unknown item succeeded")
	}

	// Model update: LayoutUpdated with a newer revision, then the new label.
	sigs := make(chan *dbus.Signal, 16)
	host.Signal(sigs)
	if err := host.AddMatchSignal(dbus.WithMatchSender(wantName)); err != nil {
		t.Fatal(err)
	}
	if err := tr.SetModel("qwen2-13m"); err != nil {
		t.Fatal(err)
	}
	var sawProps, sawLayout bool
	for !sawLayout {
		s := recv(t, sigs, "LayoutUpdated after SetModel")
		switch s.Name {
		case MenuInterface + ".ItemsPropertiesUpdated":
			sawProps = true
		case MenuInterface + ".LayoutUpdated":
			sawLayout = true
			if s.Path != MenuPath || len(s.Body) != 2 {
				t.Fatalf("LayoutUpdated %v %v", s.Path, s.Body)
			}
			if r := s.Body[0].(uint32); r <= rev {
				t.Errorf("LayoutUpdated revision %d, want > %d", r, rev)
			}
		}
	}
	if !sawProps {
		t.Error("no ItemsPropertiesUpdated before LayoutUpdated")
	}
	rev2, root2 := getLayout(t, menuObj)
	if rev2 <= rev || label(root2.Children[1]) != "Model: qwen2-13m" {
		t.Errorf("after SetModel: revision %d (was %d), model line %q", rev2, rev, label(root2.Children[1]))
	}
	var group []itemProps
	if err := menuObj.Call(MenuInterface+".GetGroupProperties", 0, []int32{modelID}, []string{"label"}).Store(&group); err != nil {
		t.Fatalf("GetGroupProperties: %v", err)
	}
	if len(group) != 1 || group[0].ID != modelID || len(group[0].Props) != 1 || group[0].Props["label"].Value() != "Model: qwen2-13m" {
		t.Errorf("GetGroupProperties = %+v", group)
	}
	var needUpdate bool
	if err := menuObj.Call(MenuInterface+".AboutToShow", 0, int32(0)).Store(&needUpdate); err != nil {
		t.Fatalf("AboutToShow: %v", err)
	}

	// Status.
	if err := tr.SetStatus(NeedsAttention); err != nil {
		t.Fatal(err)
	}
	for {
		s := recv(t, sigs, "NewStatus")
		if s.Name == ItemInterface+".NewStatus" {
			if len(s.Body) != 1 || s.Body[0] != "NeedsAttention" {
				t.Errorf("NewStatus body %v", s.Body)
			}
			break
		}
	}
	var status string
	if err := item.Call("org.freedesktop.DBus.Properties.Get", 0, ItemInterface, "Status").Store(&status); err != nil || status != "NeedsAttention" {
		t.Errorf("Status = %q, %v", status, err)
	}
	if err := tr.SetStatus("Sleeping"); err == nil {
		t.Error("SetStatus accepted an unknown status")
	}

	// Close releases the name, which is how watchers and hosts drop the item.
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	var has bool
	if err := host.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, wantName).Store(&has); err != nil || has {
		t.Errorf("after Close: NameHasOwner(%s) = %v, %v", wantName, has, err)
	}
	if err := tr.SetModel("x"); !errors.Is(err, ErrClosed) {
		t.Errorf("SetModel after Close: %v, want ErrClosed", err)
	}
	if err := tr.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// syncBuffer is a log sink safe for the tray's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestTrayRegistersWhenWatcherAppears(t *testing.T) {
	addr := dbustest.Start(t)
	var logs syncBuffer
	tr, err := New(context.Background(), dbustest.Connect(t, addr), Options{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatalf("New without a watcher: %v", err)
	}
	defer tr.Close()
	if !strings.Contains(logs.String(), "no StatusNotifierWatcher") {
		t.Errorf("log does not say the watcher is missing: %q", logs.String())
	}
	if err := tr.SetModel("still works"); err != nil {
		t.Errorf("SetModel without a watcher: %v", err)
	}

	w := startWatcher(t, addr)
	if got := w.wait(t); got != tr.Name() {
		t.Errorf("registered %q, want %q", got, tr.Name())
	}

	// A restarted watcher gets the item again.
	w.conn.Close()
	w2 := startWatcher(t, addr)
	if got := w2.wait(t); got != tr.Name() {
		t.Errorf("re-registered %q, want %q", got, tr.Name())
	}
	if !strings.Contains(logs.String(), "tray icon registered") {
		t.Errorf("log does not report the late registration: %q", logs.String())
	}
}

func TestTwoTraysGetDistinctNames(t *testing.T) {
	addr := dbustest.Start(t)
	conn := dbustest.Connect(t, addr)
	a, err := New(context.Background(), conn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// A second item on another connection of the same process.
	b, err := New(context.Background(), dbustest.Connect(t, addr), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pid := os.Getpid()
	if a.Name() != fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", pid) || b.Name() != fmt.Sprintf("org.kde.StatusNotifierItem-%d-2", pid) {
		t.Errorf("names %q and %q", a.Name(), b.Name())
	}
}

func TestPixmapFromPNG(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	img.SetNRGBA(0, 0, color.NRGBA{R: 0x10, G: 0x20, B: 0x30, A: 0x80})
	img.SetNRGBA(1, 0, color.NRGBA{R: 0xff, A: 0xff})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	pm, err := pngPixmap(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x80, 0x10, 0x20, 0x30, 0xff, 0xff, 0, 0}
	if pm.Width != 2 || pm.Height != 1 || !bytes.Equal(pm.Data, want) {
		t.Errorf("pixmap %dx%d %x, want 2x1 %x", pm.Width, pm.Height, pm.Data, want)
	}
	if _, err := pngPixmap([]byte("not a png")); err == nil {
		t.Error("pngPixmap accepted garbage")
	}
}

func TestNewRejectsBadIcon(t *testing.T) {
	addr := dbustest.Start(t)
	if _, err := New(context.Background(), dbustest.Connect(t, addr), Options{Icon: []byte("GIF89a")}); err == nil {
		t.Error("New accepted a non-PNG icon")
	}
}
