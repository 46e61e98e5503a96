package api

import (
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

func TestRegenerated(t *testing.T) {
	m := func(id, role, content, req string) ipc.ConversationMessage {
		return ipc.ConversationMessage{ID: id, Role: role, Content: content, RequestID: req}
	}
	thread := []ipc.ConversationMessage{m("1", "user", "q1", ""), m("2", "assistant", "a1", "r1"), m("3", "user", "q2", ""), m("4", "assistant", "a2", "r2")}
	for _, c := range []struct {
		name string
		old  []ipc.ConversationMessage
		next []ipc.ConversationMessage
		want string
	}{
		{"regenerate the last reply", thread, thread[:3], "r2"},
		{"regenerate an earlier reply", thread, thread[:1], "r1"},
		{"cut before a user message", thread, thread[:2], ""},
		{"edited user message", thread, []ipc.ConversationMessage{thread[0], thread[1], m("3", "user", "q2 edited", "")}, ""},
		{"new message ids", thread, []ipc.ConversationMessage{m("", "user", "q1", "")}, ""},
		{"same thread", thread, thread, ""},
		{"cleared", thread, nil, ""},
		{"reply without request id", []ipc.ConversationMessage{m("1", "user", "q", ""), m("2", "assistant", "a", "")}, thread[:1], ""},
	} {
		if got := regenerated(c.old, c.next); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
