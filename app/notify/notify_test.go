package notify

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/ruvllm/ruvllm/internal/dbustest"
)

// notifyCall is what the fake server received in one Notify call.
type notifyCall struct {
	AppName    string
	ReplacesID uint32
	Icon       string
	Summary    string
	Body       string
	Actions    []string
	Hints      map[string]dbus.Variant
	Timeout    int32
}

// fakeServer is an org.freedesktop.Notifications server that records calls
// and hands out increasing ids, or fails every call with failWith.
type fakeServer struct {
	mu       sync.Mutex
	next     uint32
	calls    []notifyCall
	closed   []uint32
	failWith *dbus.Error
}

func (s *fakeServer) Notify(appName string, replacesID uint32, icon, summary, body string,
	actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failWith != nil {
		return 0, s.failWith
	}
	s.calls = append(s.calls, notifyCall{appName, replacesID, icon, summary, body, actions, hints, timeout})
	if replacesID != 0 {
		return replacesID, nil
	}
	s.next++
	return s.next, nil
}

func (s *fakeServer) CloseNotification(id uint32) *dbus.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failWith != nil {
		return s.failWith
	}
	s.closed = append(s.closed, id)
	return nil
}

func (s *fakeServer) lastCall(t *testing.T) notifyCall {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 {
		t.Fatal("server received no Notify call")
	}
	return s.calls[len(s.calls)-1]
}

// startServer exports a fakeServer under the service name on the bus at addr.
func startServer(t *testing.T, addr string) *fakeServer {
	t.Helper()
	conn := dbustest.Connect(t, addr)
	s := &fakeServer{}
	if err := conn.Export(s, ServicePath, Interface); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName(ServiceName, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("request %s: reply %v, err %v", ServiceName, reply, err)
	}
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNotifySendsSpecArguments(t *testing.T) {
	addr := dbustest.Start(t)
	srv := startServer(t, addr)
	nf := New(dbustest.Connect(t, addr), Options{})
	ctx := ctxT(t)

	tests := []struct {
		name string
		n    Notification
		opts Options
		want notifyCall
	}{
		{
			name: "defaults",
			n:    Notification{Summary: "Model loaded", Body: "llama is ready", Urgency: Normal, Timeout: 5 * time.Second},
			want: notifyCall{AppName: "ruvllm", Icon: "ruvllm", Summary: "Model loaded", Body: "llama is ready", Timeout: 5000},
		},
		{
			name: "own icon, critical, never expires",
			n:    Notification{Summary: "Daemon stopped", Icon: "/opt/ruvllm/warn.png", Urgency: Critical, Timeout: NeverExpire},
			want: notifyCall{AppName: "ruvllm", Icon: "/opt/ruvllm/warn.png", Summary: "Daemon stopped", Timeout: 0},
		},
		{
			name: "server default timeout, replaces",
			n:    Notification{Summary: "Pulling 40%", ReplacesID: 7, Urgency: Low},
			want: notifyCall{AppName: "ruvllm", ReplacesID: 7, Icon: "ruvllm", Summary: "Pulling 40%", Timeout: -1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := nf.Notify(ctx, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if id == 0 {
				t.Fatal("Notify returned id 0 with a server running")
			}
			if tc.n.ReplacesID != 0 && id != tc.n.ReplacesID {
				t.Errorf("id %d, want the replaced id %d", id, tc.n.ReplacesID)
			}
			got := srv.lastCall(t)
			for _, f := range []struct {
				field     string
				got, want any
			}{
				{"app_name", got.AppName, tc.want.AppName},
				{"replaces_id", got.ReplacesID, tc.want.ReplacesID},
				{"app_icon", got.Icon, tc.want.Icon},
				{"summary", got.Summary, tc.want.Summary},
				{"body", got.Body, tc.want.Body},
				{"expire_timeout", got.Timeout, tc.want.Timeout},
				{"actions", len(got.Actions), 0},
			} {
				if f.got != f.want {
					t.Errorf("%s = %v, want %v", f.field, f.got, f.want)
				}
			}
			if u, ok := got.Hints["urgency"].Value().(byte); !ok || u != byte(tc.n.Urgency) {
				t.Errorf("urgency hint %v, want byte %d", got.Hints["urgency"], tc.n.Urgency)
			}
			if d, ok := got.Hints["desktop-entry"].Value().(string); !ok || d != "ruvllm" {
				t.Errorf("desktop-entry hint %v, want \"ruvllm\"", got.Hints["desktop-entry"])
			}
		})
	}

	// Ids are the server's, one per new notification.
	a, _ := nf.Notify(ctx, Notification{Summary: "a"})
	b, _ := nf.Notify(ctx, Notification{Summary: "b"})
	if a == b || a == 0 || b == 0 {
		t.Errorf("two notifications got ids %d and %d", a, b)
	}
}

func TestNotifyOptions(t *testing.T) {
	addr := dbustest.Start(t)
	srv := startServer(t, addr)
	nf := New(dbustest.Connect(t, addr), Options{AppName: "ruvllm-dev", Icon: "ruvllm-dev", DesktopEntry: "dev.ruvllm"})
	if _, err := nf.Notify(ctxT(t), Notification{Summary: "x"}); err != nil {
		t.Fatal(err)
	}
	got := srv.lastCall(t)
	if got.AppName != "ruvllm-dev" || got.Icon != "ruvllm-dev" {
		t.Errorf("app_name %q icon %q, want the options' values", got.AppName, got.Icon)
	}
	if d, _ := got.Hints["desktop-entry"].Value().(string); d != "dev.ruvllm" {
		t.Errorf("desktop-entry hint %q, want dev.ruvllm", d)
	}
}

func TestClose(t *testing.T) {
	addr := dbustest.Start(t)
	srv := startServer(t, addr)
	nf := New(dbustest.Connect(t, addr), Options{})
	ctx := ctxT(t)
	id, err := nf.Notify(ctx, Notification{Summary: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := nf.Close(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := nf.Close(ctx, 0); err != nil {
		t.Fatalf("Close(0): %v", err)
	}
	srv.mu.Lock()
	closed := append([]uint32(nil), srv.closed...)
	srv.mu.Unlock()
	if len(closed) != 1 || closed[0] != id {
		t.Errorf("server closed %v, want [%d] (Close(0) must not reach it)", closed, id)
	}
}

func TestNoServerIsNotAnError(t *testing.T) {
	addr := dbustest.Start(t)
	nf := New(dbustest.Connect(t, addr), Options{})
	ctx := ctxT(t)
	id, err := nf.Notify(ctx, Notification{Summary: "nobody listens"})
	if err != nil || id != 0 {
		t.Fatalf("Notify without a server: id %d, err %v; want 0, nil", id, err)
	}
	if err := nf.Close(ctx, 3); err != nil {
		t.Fatalf("Close without a server: %v", err)
	}
}

func TestServerErrorIsReturned(t *testing.T) {
	addr := dbustest.Start(t)
	srv := startServer(t, addr)
	srv.mu.Lock()
	srv.failWith = dbus.NewError("org.freedesktop.DBus.Error.Failed", []any{"out of bubbles"})
	srv.mu.Unlock()
	nf := New(dbustest.Connect(t, addr), Options{})
	ctx := ctxT(t)
	_, err := nf.Notify(ctx, Notification{Summary: "x"})
	var de dbus.Error
	if err == nil || !errors.As(err, &de) || de.Name != "org.freedesktop.DBus.Error.Failed" {
		t.Fatalf("Notify error %v, want the server's org.freedesktop.DBus.Error.Failed", err)
	}
	if !strings.Contains(err.Error(), `notify "x"`) {
		t.Errorf("error %q lacks the notification context", err)
	}
	if err := nf.Close(ctx, 5); err == nil {
		t.Fatal("Close returned nil for a failing server")
	}
}

func TestNotifyHonoursContext(t *testing.T) {
	addr := dbustest.Start(t)
	startServer(t, addr)
	nf := New(dbustest.Connect(t, addr), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := nf.Notify(ctx, Notification{Summary: "x"}); err == nil {
		t.Fatal("Notify with a cancelled context returned nil")
	}
}

func TestExpireTimeout(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want int32
	}{
		{0, -1},
		{NeverExpire, 0},
		{-time.Hour, 0},
		{time.Millisecond, 1},
		{time.Microsecond, 1}, // rounded up: never 0, which means "never expire"
		{1500 * time.Microsecond, 2},
		{5 * time.Second, 5000},
		{time.Duration(math.MaxInt64), math.MaxInt32},
	}
	for _, tc := range tests {
		if got := expireTimeout(tc.in); got != tc.want {
			t.Errorf("expireTimeout(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
