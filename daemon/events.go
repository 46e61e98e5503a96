package daemon

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// Events is a publish/subscribe bus for daemon events (model loaded,
// adapter installed, ...). Publishing never blocks: a subscriber that
// falls behind misses events instead of slowing the daemon.
type Events struct {
	mu   sync.Mutex
	subs map[chan ipc.Event]struct{}
}

func newEvents() *Events { return &Events{subs: map[chan ipc.Event]struct{}{}} }

// Publish sends an event of type typ with data (encoded as JSON) to every
// subscriber.
func (e *Events) Publish(typ string, data any) {
	raw, _ := json.Marshal(data)
	ev := ipc.Event{Type: typ, Time: time.Now().UTC(), Data: raw}
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.subs {
		select {
		case ch <- ev:
		default: // slow subscriber: drop rather than block
		}
	}
}

// Subscribe returns a channel of events that is closed when ctx ends.
func (e *Events) Subscribe(ctx context.Context) <-chan ipc.Event {
	ch := make(chan ipc.Event, 64)
	e.mu.Lock()
	e.subs[ch] = struct{}{}
	e.mu.Unlock()
	go func() {
		<-ctx.Done()
		e.mu.Lock()
		delete(e.subs, ch)
		close(ch)
		e.mu.Unlock()
	}()
	return ch
}
